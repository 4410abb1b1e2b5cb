/**
 * The one-step hosts (the README's "Fastify, Express or Hono: one step", and docs/mounting.md's "Express and Hono in
 * one step") compile under `tsc --strict` against the package, with no cast: a host writes its handlers exactly as
 * its framework's own.
 */
import { assert, describe, it } from "@effect/vitest"
import { readFileSync } from "node:fs"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import ts from "typescript"

const ROOT = fileURLToPath(new URL("..", import.meta.url))
// The text of `file` from the heading `from` to the next heading of its level.
const section = (file: string, from: string): string => {
  const text = readFileSync(join(ROOT, file), "utf8")
  const start = text.indexOf(from)
  assert.isAtLeast(start, 0, `${file} has the heading ${from}`)
  const end = text.indexOf("\n### ", start + from.length)
  return text.slice(start, end === -1 ? undefined : end)
}
const blocksOf = (text: string) => [...text.matchAll(/^```ts\n([\s\S]*?)^```/gm)].map((match) => match[1]!)
// Fastify's in the README, Express's and Hono's in docs/mounting.md.
const blocks = [
  ...blocksOf(section("README.md", "### Fastify, Express or Hono")),
  ...blocksOf(section("docs/mounting.md", "### Express and Hono in one step"))
]

const config = ts.parseJsonConfigFileContent(
  ts.readConfigFile(join(ROOT, "tsconfig.json"), ts.sys.readFile).config,
  ts.sys,
  ROOT
)

const options = { ...config.options, strict: true, noEmit: true }

// The package's sources and the declarations they load, parsed (and bound, by the first program that checks them) once
// for every snippet instead of once for each: the programs differ only in the snippet, and all use `options`.
const sourceFiles = new Map<string, ts.SourceFile | undefined>()

/** The diagnostics of `code` compiled as a module of its own, beside the package's sources. */
const diagnosticsOf = (code: string, name: string): Array<string> => {
  const file = join(ROOT, `${name}.ts`)
  const host = ts.createCompilerHost(options)
  const getSourceFile = host.getSourceFile
  host.getSourceFile = (path, version, ...rest) => {
    if (path === file) return ts.createSourceFile(path, code, version)
    if (!sourceFiles.has(path)) sourceFiles.set(path, getSourceFile(path, version, ...rest))
    return sourceFiles.get(path)
  }
  host.fileExists = ((exists) => (path: string) => path === file || exists(path))(host.fileExists)
  const program = ts.createProgram([file], options, host)
  return ts.getPreEmitDiagnostics(program, program.getSourceFile(file)).map((d) =>
    ts.flattenDiagnosticMessageText(d.messageText, "\n")
  )
}

describe("Fastify, Express or Hono in one step (README, docs/mounting.md)", () => {
  it("has one block for each framework", () => {
    assert.deepStrictEqual(
      blocks.map((code) => /from "route-registry\/(fastify|express|hono)"/.exec(code)?.[1]),
      ["fastify", "express", "hono"]
    )
  })

  blocks.forEach((code, i) => {
    it(`block ${i + 1} compiles strictly, with no cast`, () => {
      assert.notMatch(code, /(?<!\*)\sas\s+(?!const\b)[A-Za-z{[(]|<[A-Z]\w*>\s*\w/) // `* as` is an import
      assert.deepStrictEqual(diagnosticsOf(code, `__mount_snippet_${i}`), [])
    })
  })

  it("a cast-free handler of the wrong type is refused: the check can fail", () => {
    const wrong = blocks[1]!.replace("(req, res) => void res.json", "(req: number, res) => void res.json")
    assert.isNotEmpty(diagnosticsOf(wrong, "__mount_snippet_wrong"))
  })
})
