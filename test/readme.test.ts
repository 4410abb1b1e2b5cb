/**
 * Every code block of README.md and docs/*.md is checked or run, so the documentation cannot drift from the code. The
 * convention, by the first word of a block's info string:
 *
 * - `ts`: type-checked as a module of its own against the package (the `route-registry` paths and compiler options
 *   of tsconfig.json, less the unused-name checks). A block whose first line is `// file: NAME.ts` is that file, as
 *   the reader saves it: later blocks, of any document, import from it as `./NAME.js`, as a reader's own files
 *   would. Otherwise a block continues the ones before it in its document: it may use the top-level declarations of
 *   earlier `ts` blocks, which it gets as imports from them. Imports do not carry over: each block imports what it
 *   uses, as a reader copying it needs. The environment variables a block reads (`process.env.NAME`,
 *   `Config.…("NAME")`) must be ones a table of the documentation documents (the `npm start` variables), so a
 *   snippet never names a variable the runnable host calls otherwise. The one-step hosts (Fastify, Express, Hono)
 *   write their handlers with no cast, and the same program refuses one of them given a handler of the wrong type.
 * - `json`: parsed.
 * - `sh`: parsed by `bash -n`. Every `npm start`, `npm test` and `npm run <script>` names a script of package.json;
 *   every `npm install` names this package (by name, as its `<name>-<version>.tgz` tarball or as
 *   `"git+$REPOSITORY_URL"`), one of its peers or a package it is tested with (devDependencies), at exactly the
 *   range package.json gives.
 *   A block that calls `curl` also runs, in its document's order, in `bash -euo pipefail`, against an example host
 *   of `npm start` of the document's own (examples/server.ts on a free port, in-memory store, its generated admin
 *   token), with
 *   `http://127.0.0.1:3000` replaced by the host's origin. Placeholders are shell variables bound from what came
 *   before: TOKEN (the generated admin token), ID (the id of the last route answered, from `Location` or the body),
 *   ETAG (the last `ETag`) and CURSOR (the last non-null `nextCursor`). A line assigning one of them a value with `…`
 *   in it (`TOKEN=3q2-Xv…   # the token printed above`) tells the reader where the value comes from and is left
 *   out. Every answer must be below 400, unless its `curl` line ends with a comment `# expect <status>` (a document
 *   showing, say, that a deleted route answers 404).
 * - no language: output, left as text.
 *
 * Any other language fails until this convention says what to do with it. Across the documents: the README links
 * every document of docs/, every relative link reaches an existing file (and heading, for `#anchor`), every file of
 * the repository named in backquotes exists, none names an internal module's file, and every variable `npm start`
 * and the command read is in a table.
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { execFile, spawnSync } from "node:child_process"
import { existsSync, readFileSync } from "node:fs"
import { mkdtemp, readdir, readFile, rm } from "node:fs/promises"
import { tmpdir } from "node:os"
import { dirname, join, relative } from "node:path"
import { fileURLToPath } from "node:url"
import { promisify } from "node:util"
import * as Route from "route-registry/Route"
import ts from "typescript"
import { type Running, start } from "./utils/spawned.js"

const ROOT = fileURLToPath(new URL("..", import.meta.url))
const README = "README.md"
const DOCUMENTS = [
  README,
  ...(await readdir(join(ROOT, "docs"))).filter((n) => n.endsWith(".md")).sort().map((n) => `docs/${n}`)
]
// The origin the documents show; their curl blocks run against the example host's instead.
const DOCUMENTED_ORIGIN = "http://127.0.0.1:3000"
const BOUND = ["TOKEN", "ID", "ETAG", "CURSOR"] as const
type Bound = typeof BOUND[number]

const manifest = JSON.parse(await readFile(join(ROOT, "package.json"), "utf8"))

interface Block {
  /** The document, relative to the repository. */
  readonly file: string
  readonly language: string
  /** The document's line of the block's first line of code. */
  readonly line: number
  readonly code: string
}

const blocks = (file: string, markdown: string): Array<Block> => {
  const found: Array<Block> = []
  let open: { language: string; line: number; lines: Array<string> } | undefined
  markdown.split("\n").forEach((text, i) => {
    if (open === undefined) {
      const fence = /^```\s*(\S*)/.exec(text)
      if (fence !== null) open = { language: fence[1]!, line: i + 2, lines: [] }
    } else if (text.startsWith("```")) {
      found.push({ file, language: open.language, line: open.line, code: open.lines.join("\n") })
      open = undefined
    } else {
      open.lines.push(text)
    }
  })
  return found
}

const markdowns = new Map(
  await Promise.all(DOCUMENTS.map(async (file) => [file, await readFile(join(ROOT, file), "utf8")] as const))
)
const all = DOCUMENTS.flatMap((file) => blocks(file, markdowns.get(file)!))
const at = (block: Block) => `${block.file}:${block.line}`
const ofLanguage = (language: string, file?: string) =>
  all.filter((block) => block.language === language && (file === undefined || block.file === file))

interface Declared {
  readonly name: string
  readonly type: boolean
  /** Exported by the block itself (`export const …`). */
  readonly exported: boolean
}

const isExported = (statement: ts.Statement) =>
  ts.canHaveModifiers(statement) &&
  (ts.getModifiers(statement) ?? []).some((m) => m.kind === ts.SyntaxKind.ExportKeyword)

// The names a block declares at its top level; types are imported by later blocks with `import type`.
const declaredIn = (code: string): Array<Declared> =>
  ts.createSourceFile("block.ts", code, ts.ScriptTarget.Latest).statements.flatMap((statement): Array<Declared> => {
    const exported = isExported(statement)
    if (ts.isVariableStatement(statement)) {
      return statement.declarationList.declarations.flatMap((d) =>
        ts.isIdentifier(d.name) ? [{ name: d.name.text, type: false, exported }] : []
      )
    }
    if ((ts.isFunctionDeclaration(statement) || ts.isClassDeclaration(statement)) && statement.name !== undefined) {
      return [{ name: statement.name.text, type: false, exported }]
    }
    if (ts.isInterfaceDeclaration(statement) || ts.isTypeAliasDeclaration(statement)) {
      return [{ name: statement.name.text, type: true, exported }]
    }
    return []
  })

// The names a block imports itself.
const importedIn = (code: string): Set<string> =>
  new Set(
    ts.createSourceFile("block.ts", code, ts.ScriptTarget.Latest).statements.flatMap((statement) => {
      const bindings = ts.isImportDeclaration(statement) ? statement.importClause?.namedBindings : undefined
      return bindings !== undefined && ts.isNamedImports(bindings) ? bindings.elements.map((e) => e.name.text) : []
    })
  )

// `// file: services.ts` on a block's first line: the module name the reader saves it under.
const FILE_NAME = /^\/\/ file: ([A-Za-z0-9_-]+)\.ts\s*$/

const uses = (code: string, name: string) => new RegExp(`(?<![\\w$])${name.replace(/\$/g, "\\$")}(?![\\w$])`).test(code)

// Each block as a module: one line importing what it uses from earlier blocks of its document, its code, then an
// export of what it declares for the blocks after it.
const modules = (tsBlocks: ReadonlyArray<Block>): Map<string, { readonly block: Block; readonly text: string }> => {
  const result = new Map<string, { block: Block; text: string }>()
  const earlier = new Map<string, { readonly module: string; readonly type: boolean }>()
  let document: string | undefined
  for (const block of tsBlocks) {
    if (block.file !== document) earlier.clear()
    document = block.file
    const named = FILE_NAME.exec(block.code.split("\n")[0]!)?.[1]
    const module = named ?? `${block.file.replace(/\W/g, "-")}-line-${block.line}`
    assert.isFalse(result.has(join(ROOT, `${module}.ts`)), `${at(block)}: a second ${module}.ts`)
    const own = declaredIn(block.code)
    const imported = importedIn(block.code)
    const imports = [...earlier].filter(([name]) =>
      !own.some((d) => d.name === name) && !imported.has(name) && uses(block.code, name)
    ).map(([name, from]) => `import ${from.type ? "type " : ""}{ ${name} } from "./${from.module}.js";`)
    const exports = own.filter((d) => !d.exported).map((d) => d.name)
    const text = `${imports.join(" ")}\n${block.code}\nexport { ${exports.join(", ")} }\n`
    result.set(join(ROOT, `${module}.ts`), { block, text })
    for (const d of own) earlier.set(d.name, { module, type: d.type })
  }
  return result
}

// The problems of every `ts` block, by document line, from one program holding them all. Checked a block at a time
// with a turn of the event loop between: the checks are synchronous (about 20 s of CPU in all), and a test process
// that answers nothing for a minute on a loaded machine fails vitest's calls to it ("Timeout calling onTaskUpdate").
const typeCheck = async (tsBlocks: ReadonlyArray<Block>): Promise<Map<Block, Array<string>>> => {
  const files = modules(tsBlocks)
  const config = ts.getParsedCommandLineOfConfigFile(
    join(ROOT, "tsconfig.json"),
    { noUnusedLocals: false, noUnusedParameters: false, noEmit: true },
    {
      ...ts.sys,
      onUnRecoverableConfigFileDiagnostic: (d) => assert.fail(ts.flattenDiagnosticMessageText(d.messageText, "\n"))
    }
  )!
  const host = ts.createCompilerHost(config.options)
  const getSourceFile = host.getSourceFile.bind(host)
  host.getSourceFile = (name, language, ...rest) => {
    const file = files.get(name)
    return file === undefined ? getSourceFile(name, language, ...rest) : ts.createSourceFile(name, file.text, language)
  }
  host.fileExists = (name) => files.has(name) || ts.sys.fileExists(name)
  host.readFile = (name) => files.get(name)?.text ?? ts.sys.readFile(name)
  const program = ts.createProgram({ rootNames: [...files.keys()], options: config.options, host })
  const problems = new Map<Block, Array<string>>()
  for (const [name, { block }] of files) {
    await new Promise((resolve) => setImmediate(resolve))
    const source = program.getSourceFile(name)!
    const diagnostics = [...program.getSyntacticDiagnostics(source), ...program.getSemanticDiagnostics(source)]
    problems.set(
      block,
      diagnostics.map((d) => {
        const { line } = source.getLineAndCharacterOfPosition(d.start ?? 0)
        return `${block.file}:${block.line + line - 1}: ${ts.flattenDiagnosticMessageText(d.messageText, "\n")}`
      })
    )
  }
  return problems
}

// The variables in the first column of the documents' tables: `| \`PORT\` | …`.
const documented = new Set(
  [...markdowns.values()].flatMap((markdown) =>
    [...markdown.matchAll(/^\| `([A-Z][A-Z0-9_]*)` \|/gm)].map((m) => m[1]!)
  )
)

const environmentRead = (code: string): Array<string> =>
  [...code.matchAll(/process\.env\.([A-Z][A-Z0-9_]*)|Config\.\w+\((?:[^()]|\([^()]*\))*?"([A-Z][A-Z0-9_]*)"/g)]
    .map((m) => m[1] ?? m[2]!)

// The shell's logical lines (continuations joined, comments dropped), then the arguments of each `npm` command.
const npmCommands = (code: string): Array<Array<string>> =>
  code.replace(/\\\n/g, " ").split("\n").map((line) => line.replace(/(^|\s)#.*$/, ""))
    .flatMap((line) => [...line.matchAll(/(?:^|[;&|(]|\s)npm\s+([^;&|)]*)/g)].map((m) => m[1]!.trim().split(/\s+/)))

const npmProblems = (args: ReadonlyArray<string>): Array<string> => {
  const [command, ...rest] = args
  const operands = rest.filter((arg) => !arg.startsWith("-"))
  const script = command === "run" ? operands[0] : command === "start" || command === "test" ? command : undefined
  if (script !== undefined) return script in manifest.scripts ? [] : [`npm ${args.join(" ")}: no script "${script}"`]
  if (command !== "install" && command !== "i") return []
  return operands.flatMap((spec) => {
    // The package from git: the URL the reader cloned from (the README cannot know it).
    if (spec === manifest.name || spec === "\"git+$REPOSITORY_URL\"") return []
    if (spec.endsWith(".tgz")) {
      const tarball = `${manifest.name}-${manifest.version}.tgz`
      return spec.endsWith(`/${tarball}`) || spec === tarball ? [] : [`${spec}: the tarball is ${tarball}`]
    }
    const [, name, range] = /^(@?[^@]+)@?(.*)$/.exec(spec)!
    // A peer, or a package the project is tested with (an integration a README section shows).
    const peer = manifest.peerDependencies[name!] ?? manifest.devDependencies[name!]
    if (peer === undefined) return [`${spec}: neither this package, one of its peers nor one it is tested with`]
    return range === peer ? [] : [`${spec}: package.json asks for ${name}@${peer}`]
  })
}

const PLACEHOLDER = /^\s*([A-Za-z_][A-Za-z0-9_]*)=\S*…\S*\s*(#.*)?$/

// The block as it runs: placeholder lines left out, the documented origin replaced by the host's.
const runnable = (block: Block, origin: string): string =>
  block.code.split("\n").filter((line) => {
    const name = PLACEHOLDER.exec(line)?.[1]
    if (name === undefined) return true
    assert.include(BOUND, name, `${at(block)}: ${name} is a placeholder this test does not bind`)
    return false
  }).map((line) => line.replace(EXPECTED, "$1EXPECT=$3 $2")).join("\n").replaceAll(DOCUMENTED_ORIGIN, origin)

// Records every answer: the headers in <n>.head, the output (what the reader sees) in <n>.body, and the status the
// README says to expect, if any, in <n>.expect.
const SHELL_PRELUDE = `set -euo pipefail
curl() {
  local at="$RESPONSES/\${EPOCHREALTIME/./}"
  [[ -n "\${EXPECT:-}" ]] && echo "$EXPECT" > "$at.expect"
  command curl -sS --dump-header "$at.head" "$@" | tee "$at.body"
}
`

// `curl … # expect 404: why` says the answer is meant to be that status: the line runs with EXPECT set.
const EXPECTED = /^(\s*)(curl\s.*?)\s+#\s*expect\s+(\d{3})\b.*$/

interface Answer {
  readonly status: number
  readonly headers: Record<string, string>
  readonly body: string
  readonly expected: number | undefined
}

const answer = (head: string, output: string, expected: string | undefined): Answer => {
  const final = head.split("\r\n\r\n").filter((section) => section.startsWith("HTTP/")).at(-1) ?? ""
  const [statusLine = "", ...lines] = final.split("\r\n")
  const headers = Object.fromEntries(
    lines.map((l) => [l.slice(0, l.indexOf(":")).toLowerCase(), l.slice(l.indexOf(":") + 1).trim()])
  )
  let body = output
  // `curl -i` puts the headers before the body in the output too.
  while (body.startsWith("HTTP/") && body.includes("\r\n\r\n")) body = body.slice(body.indexOf("\r\n\r\n") + 4)
  return {
    status: Number(statusLine.split(" ")[1]),
    headers,
    body,
    expected: expected === undefined ? undefined : Number(expected)
  }
}

const answersIn = async (dir: string): Promise<Array<Answer>> => {
  const heads = (await readdir(dir)).filter((name) => name.endsWith(".head")).sort()
  return Promise.all(heads.map(async (name) => {
    const base = join(dir, name.slice(0, -".head".length))
    return answer(
      await readFile(`${base}.head`, "utf8"),
      await readFile(`${base}.body`, "utf8").catch(() => ""),
      await readFile(`${base}.expect`, "utf8").catch(() => undefined)
    )
  }))
}

const parsed = (body: string): Record<string, unknown> | undefined => {
  try {
    const value = JSON.parse(body)
    return typeof value === "object" && value !== null ? value : undefined
  } catch {
    return undefined
  }
}

const bind = (bindings: Partial<Record<Bound, string>>, { body, headers }: Answer) => {
  if (headers.etag !== undefined) bindings.ETAG = headers.etag
  if (headers.location !== undefined) bindings.ID = headers.location.split("/").at(-1)!
  const json = parsed(body)
  if (typeof json?.id === "string") bindings.ID = json.id
  if (typeof json?.nextCursor === "string") bindings.CURSOR = json.nextCursor
}

const exec = promisify(execFile)

// The lines outside code blocks, with code spans kept (a link's text may hold one).
const prose = (markdown: string): Array<string> => {
  let fenced = false
  return markdown.split("\n").filter((line) => {
    if (line.startsWith("```")) fenced = !fenced
    return !fenced && !line.startsWith("```")
  })
}

// The anchors of a document's headings, as GitHub makes them: lowercased, punctuation dropped, spaces as hyphens,
// a repeated one numbered.
const anchors = (markdown: string): Set<string> => {
  const seen = new Map<string, number>()
  return new Set(
    prose(markdown).flatMap((line) => {
      const heading = /^#{1,6} (.*)$/.exec(line)?.[1]
      if (heading === undefined) return []
      const slug = heading.toLowerCase().replace(/[^\p{L}\p{N}_ -]/gu, "").replace(/ /g, "-")
      const count = seen.get(slug)
      seen.set(slug, (count ?? 0) + 1)
      return [count === undefined ? slug : `${slug}-${count}`]
    })
  )
}

// The relative links of a document's prose: `[text](docs/x.md#anchor)`, `[text](#anchor)`.
const links = (markdown: string): Array<string> =>
  prose(markdown).flatMap((line) => [...line.matchAll(/\]\(([^)\s]+)\)/g)].map((m) => m[1]!))
    .filter((target) => !/^[a-z][a-z+.-]*:/i.test(target))

const linkProblems = (file: string, target: string): Array<string> => {
  const [path, anchor] = target.split("#") as [string, string | undefined]
  const linked = path === "" ? file : relative(ROOT, join(ROOT, dirname(file), path))
  if (!existsSync(join(ROOT, linked))) return [`${file}: ${target}: no file ${linked}`]
  if (anchor === undefined) return []
  if (!linked.endsWith(".md")) return [`${file}: ${target}: an anchor in a file that is not markdown`]
  const markdown = markdowns.get(linked) ?? readFileSync(join(ROOT, linked), "utf8")
  return anchors(markdown).has(anchor) ? [] : [`${file}: ${target}: no heading of ${linked} has the anchor #${anchor}`]
}

// The repository's files a document names in backquotes: `test/RouterListener.test.ts`, `examples/express.ts`.
const filesNamed = (markdown: string): Array<string> =>
  prose(markdown).flatMap((line) =>
    [...line.matchAll(/`((?:\.ci|bench|docs|examples|src|test)\/[\w./-]*\.\w+)`/g)].map((m) => m[1]!)
  )

// What `npm start` (examples/server.ts and the helpers of examples/env.ts) and the library (the command) read.
const environmentOfHosts = async (): Promise<Set<string>> => {
  const examples = await Promise.all(["server.ts", "env.ts"].map((n) => readFile(join(ROOT, "examples", n), "utf8")))
  const sources = (await readdir(join(ROOT, "src"), { recursive: true })).filter((n) => n.endsWith(".ts"))
  const library = await Promise.all(sources.map((n) => readFile(join(ROOT, "src", n), "utf8")))
  return new Set([
    ...examples.flatMap((code) => [
      ...environmentRead(code),
      ...[...code.matchAll(/\w\("([A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+)"/g)].map((m) => m[1]!)
    ]),
    ...library.flatMap(environmentRead)
  ])
}

// A suite of one test per block, when the document has such blocks (an empty suite fails).
const eachBlock = (title: string, found: ReadonlyArray<Block>, test: (block: Block) => void | Promise<void>) => {
  if (found.length === 0) return
  describe(title, () => {
    for (const block of found) it(at(block), () => test(block))
  })
}

// The `ts` blocks of `file` under `heading`, up to the next heading of its level.
const sectionBlocks = (file: string, heading: string): Array<Block> => {
  const lines = markdowns.get(file)!.split("\n")
  const start = lines.indexOf(heading)
  assert.isAtLeast(start, 0, `${file} has the heading ${heading}`)
  const level = `${heading.split(" ")[0]} `
  const next = lines.findIndex((text, i) => i > start && text.startsWith(level))
  return ofLanguage("ts", file).filter((block) => block.line > start && (next === -1 || block.line < next))
}

// The one-step hosts, Fastify's in the README, Express's and Hono's in docs/mounting.md: a host writes its handlers
// exactly as its framework's own, with no cast.
const oneStep = [
  ...sectionBlocks("README.md", "### Fastify, Express or Hono: one step"),
  ...sectionBlocks("docs/mounting.md", "### Express and Hono in one step")
]
const WRONG_HANDLER: [string, string] = ["(req, res) => void res.json", "(req: number, res) => void res.json"]
// Express's with a handler of the wrong type and no cast, checked in the same program: it must be refused.
const wrongHandler: Block = {
  ...oneStep[1]!,
  file: "a one-step host with a handler of the wrong type",
  code: oneStep[1]!.code.replace(...WRONG_HANDLER)
}

let problems: Promise<Map<Block, Array<string>>> | undefined
// Every `ts` block of every document in one program, checked once.
const problemsOf = async (block: Block) =>
  (await (problems ??= typeCheck([...ofLanguage("ts"), wrongHandler]))).get(block)

describe("Fastify, Express or Hono in one step (README.md, docs/mounting.md)", () => {
  it("has one block for each framework, and none casts a handler", () => {
    assert.deepStrictEqual(
      oneStep.map((block) => /from "route-registry\/(fastify|express|hono)"/.exec(block.code)?.[1]),
      ["fastify", "express", "hono"]
    )
    // `* as` is an import, `as const` no cast.
    for (const block of oneStep) assert.notMatch(block.code, /(?<!\*)\sas\s+(?!const\b)[A-Za-z{[(]|<[A-Z]\w*>\s*\w/)
  })

  it("a cast-free handler of the wrong type is refused: the check can fail", async () => {
    assert.include(oneStep[1]!.code, WRONG_HANDLER[0])
    assert.isNotEmpty(await problemsOf(wrongHandler))
  })
})

for (const document of DOCUMENTS) {
  const markdown = markdowns.get(document)!
  const own = all.filter((block) => block.file === document)

  describe(document, () => {
    it("has only code blocks whose language this test knows", () => {
      for (const block of own) assert.include(["ts", "json", "sh", ""], block.language, `${at(block)}: no convention`)
    })

    it("cites no document a reader of the repository does not have (an RFC's sections are fine)", () => {
      assert.notInclude(markdown, "CONTRACT")
      assert.deepStrictEqual([...markdown.matchAll(/(?<!RFC \d+ )§\s*\d+/g)].map((m) => m[0]), [])
    })

    eachBlock("json blocks parse", ofLanguage("json", document), (block) => {
      JSON.parse(block.code)
    })

    eachBlock("ts blocks type-check against the package", ofLanguage("ts", document), async (block) => {
      assert.deepStrictEqual(await problemsOf(block), [])
      for (const name of environmentRead(block.code)) {
        assert.isTrue(documented.has(name), `${at(block)}: reads ${name}, which no table of the documents has`)
      }
    })

    eachBlock(
      "sh blocks parse, and name scripts, this package and its peers as package.json does",
      ofLanguage("sh", document),
      (block) => {
        const syntax = spawnSync("bash", ["-n"], { input: block.code, encoding: "utf8" })
        assert.strictEqual(syntax.status, 0, `${at(block)}: ${syntax.stderr}`)
        assert.deepStrictEqual(npmCommands(block.code).flatMap(npmProblems), [])
      }
    )

    const calling = ofLanguage("sh", document).filter((b) => /(^|[\s;&|(])curl\s/m.test(b.code))
    if (calling.length > 0) {
      describe("sh blocks calling the server run against the example host", () => {
        let server: Running
        const bindings: Partial<Record<Bound, string>> = {}
        beforeAll(async () => {
          server = await start("examples/server.ts")
          bindings.TOKEN = /generated admin token (\S+)/.exec(server.output())![1]!
        })
        afterAll(() => server?.stop())

        for (const block of calling) {
          it(at(block), async () => {
            const responses = await mkdtemp(join(tmpdir(), "readme-"))
            try {
              const script = SHELL_PRELUDE + runnable(block, server.origin)
              const env = {
                PATH: process.env.PATH ?? "",
                HOME: process.env.HOME ?? "",
                RESPONSES: responses,
                ...bindings
              }
              await exec("bash", ["-c", script], { cwd: responses, env }).catch((error) =>
                assert.fail(`${at(block)}: ${error.stderr || error.message}`)
              )
              const answers = await answersIn(responses)
              assert.isNotEmpty(answers, `${at(block)}: no answer was recorded`)
              for (const answer of answers) {
                if (answer.expected === undefined) {
                  assert.isBelow(answer.status, 400, `${at(block)}: answered ${answer.status} ${answer.body}`)
                } else {
                  assert.strictEqual(answer.status, answer.expected, `${at(block)}: answered ${answer.body}`)
                }
                bind(bindings, answer)
              }
            } finally {
              await rm(responses, { recursive: true, force: true })
            }
          })
        }
      })
    }
  })
}

// The code's own files (sources, tests, examples, benchmarks), by path from the repository's root.
const codeFiles = async (): Promise<Array<string>> => {
  const found: Array<string> = []
  for (const top of ["src", "test", "examples", "bench"]) {
    for (const entry of await readdir(join(ROOT, top), { recursive: true })) {
      if (/\.(ts|mts|js|mjs)$/.test(entry)) found.push(join(top, entry))
    }
  }
  return found
}

// A section sign cites a named standard's section (RFC 9110 §15, ECMA-262 §21.4, the HTML standard (§9.2)), or
// nothing the repository holds.
const STANDARD_BEFORE = /(RFC \d+|ECMA-\d+|standard \() ?$/

/** The citations of `text` a reader of the repository cannot follow: a CONTRACT, a section of no named standard. */
const unfollowable = (text: string): Array<string> => [
  ...[...text.matchAll(/\bCONTRACT\b[^\n]{0,20}/g)].map((m) => m[0]),
  ...[...text.matchAll(/§\s*\d+/g)].filter((m) => {
    const before = text.slice(Math.max(0, m.index - 40), m.index).replace(/\s*\n\s*(\*|\/\/)?\s*/g, " ")
    return !STANDARD_BEFORE.test(before)
  }).map((m) => m[0])
]

describe("the code's comments", () => {
  it("cite only documents a reader of the repository has (docs/, README), never a CONTRACT", async () => {
    const problems: Array<string> = []
    // This file names what it looks for.
    for (const file of (await codeFiles()).filter((file) => file !== join("test", "readme.test.ts"))) {
      for (const citation of unfollowable(await readFile(join(ROOT, file), "utf8"))) {
        problems.push(`${file}: ${citation}`)
      }
    }
    assert.deepStrictEqual(problems, [])
  })
})

describe("README.md and docs/*.md together", () => {
  it("the README links every document of docs/", () => {
    const linked = new Set(links(markdowns.get(README)!).map((target) => target.split("#")[0]))
    assert.deepStrictEqual(DOCUMENTS.filter((file) => file !== README && !linked.has(file)), [])
  })

  it("every relative link reaches an existing file, and a heading of it for an anchor", () => {
    assert.deepStrictEqual(
      DOCUMENTS.flatMap((file) => links(markdowns.get(file)!).flatMap((t) => linkProblems(file, t))),
      []
    )
  })

  it("every file of the repository named in backquotes exists, and none is an internal module's", () => {
    for (const file of DOCUMENTS) {
      assert.notInclude(markdowns.get(file)!, "src/internal", `${file}: internal files move; name the public module`)
      const missing = filesNamed(markdowns.get(file)!).filter((named) => !existsSync(join(ROOT, named)))
      assert.deepStrictEqual(missing, [], `${file} names files the repository does not have`)
    }
  })

  it("a document that installs pg installs @types/pg too: its TypeScript fails tsc --strict without pg's types", () => {
    for (const block of ofLanguage("sh")) {
      const installed = npmCommands(block.code).filter(([command]) => command === "install" || command === "i").flat()
      if (!installed.some((spec) => /^pg(@|$)/.test(spec))) continue
      assert.isTrue(installed.some((spec) => /^@types\/pg(@|$)/.test(spec)), `${at(block)}: pg without @types/pg`)
    }
  })

  it("the change stream's example in docs/http-api.md shows the fields each event sends", () => {
    const example = ofLanguage("", "docs/http-api.md").find((block) => block.code.startsWith("event: "))!
    const fields = (event: string) => {
      const data = new RegExp(`^event: ${event}\n(?:id: .*\n)?data: (.*)$`, "m").exec(example.code)
      assert.isNotNull(data, `no ${event} event in the example`)
      return Object.keys(JSON.parse(data![1]!)).sort()
    }
    // What the stream writes for a route (internal/http/changeStream.ts), with its stored route's every field.
    const sent = JSON.parse(Route.toJson(
      new Route.StoredRoute({
        id: Route.makeRouteId(0),
        method: "GET" as Route.HttpMethod,
        path: "/users/:id" as Route.RoutePath,
        middleware: [],
        handler: "show" as Route.HandlerName,
        createdAt: new Date(0),
        revision: 1
      })
    ))
    assert.deepStrictEqual(fields("upsert"), Object.keys(sent).sort())
    assert.deepStrictEqual(fields("ready"), ["revision", "routes"])
    assert.deepStrictEqual(fields("delete"), ["id"])
  })

  it("every variable npm start and the route-registry command read is in a table", async () => {
    assert.deepStrictEqual([...await environmentOfHosts()].filter((name) => !documented.has(name)), [])
  })
})
