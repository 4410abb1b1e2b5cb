/**
 * ARCHITECTURE.md's rule, enforced: imports run one way, model → stores → table → HTTP core → transport → adapters and
 * routers → entry points, with the shared modules below every layer. A module imports only from its own layer or the
 * layers to its left; the one import back up is a type-only one from an internal module to its own public module (the
 * face that imports it), naming its interface; no run-time import cycle. Each file's layer is the one ARCHITECTURE.md's
 * table of rooms gives it, read from the document itself, which must name every file of src/.
 */
import { assert, describe, it } from "@effect/vitest"
import { readdirSync, readFileSync } from "node:fs"
import { dirname, join, normalize, relative } from "node:path"
import { fileURLToPath } from "node:url"
import ts from "typescript"

const SRC = fileURLToPath(new URL("../src", import.meta.url))
const ARCHITECTURE = readFileSync(new URL("../ARCHITECTURE.md", import.meta.url), "utf8")

// The table of "The rooms": `| layer | public modules | internal rooms |`, a row with no layer going on with the one
// above. A public module `Route` is src/Route.ts; a room is a file, or a folder ending in "/".
const tableRows = (ARCHITECTURE.split(/^## /m).find((section) => section.startsWith("The rooms")) ?? "")
  .split("\n")
  .filter((line) => line.startsWith("|") && !/^\|\s*(layer|-+)\s*\|/.test(line))
  .map((line) => line.split("|").slice(1, -1).map((cell) => cell.trim()))

const named = (cell: string) => [...cell.matchAll(/`([^`]+)`/g)].map((m) => m[1]!)

const { LAYERS, ORDER } = tableRows.reduce(
  (read, [layer = "", publics = "", rooms = ""]) => {
    const current = layer === "" ? read.ORDER.at(-1)! : layer
    if (layer !== "") read.ORDER.push(layer)
    for (const name of named(publics)) read.LAYERS.push([`${name}.ts`, current])
    for (const room of named(rooms)) read.LAYERS.push([room, current])
    return read
  },
  { LAYERS: [] as Array<readonly [string, string]>, ORDER: [] as Array<string> }
)
const layerOf = (file: string): string | undefined => {
  let best: readonly [string, string] | undefined
  for (const entry of LAYERS) {
    const [path] = entry
    const matches = path.endsWith("/") ? file.startsWith(path) : file === path
    if (matches && (best === undefined || path.length > best[0].length)) best = entry
  }
  return best?.[1]
}

interface Import {
  readonly from: string
  readonly to: string
  readonly line: number
  /** Erased when compiled: `import type`, every name `type`, `export type … from`, `import("./x.js").T`. */
  readonly typeOnly: boolean
}

const files = readdirSync(SRC, { recursive: true, encoding: "utf8" }).filter((f) => f.endsWith(".ts")).sort()

const isTypeOnly = (node: ts.ImportDeclaration | ts.ExportDeclaration): boolean => {
  if (ts.isExportDeclaration(node)) {
    return node.isTypeOnly ||
      (node.exportClause !== undefined && ts.isNamedExports(node.exportClause) &&
        node.exportClause.elements.length > 0 && node.exportClause.elements.every((e) => e.isTypeOnly))
  }
  const clause = node.importClause
  if (clause === undefined) return false // `import "./x.js"`: run for its effects
  if (clause.isTypeOnly) return true
  const bindings = clause.namedBindings
  return clause.name === undefined && bindings !== undefined && ts.isNamedImports(bindings) &&
    bindings.elements.length > 0 && bindings.elements.every((e) => e.isTypeOnly)
}

// The relative imports of `file` (package imports leave src/), static and dynamic.
const importsOf = (file: string): Array<Import> => {
  const text = readFileSync(join(SRC, file), "utf8")
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true)
  const found: Array<Import> = []
  const add = (specifier: string, node: ts.Node, typeOnly: boolean) => {
    if (!specifier.startsWith(".")) return
    const to = normalize(join(dirname(file), specifier)).replace(/\.js$/, ".ts")
    const line = source.getLineAndCharacterOfPosition(node.getStart()).line + 1
    found.push({ from: file, to: relative(".", to), line, typeOnly })
  }
  const visit = (node: ts.Node) => {
    if ((ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) && node.moduleSpecifier !== undefined) {
      if (ts.isStringLiteral(node.moduleSpecifier)) add(node.moduleSpecifier.text, node, isTypeOnly(node))
    } else if (
      ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword &&
      node.arguments[0] !== undefined && ts.isStringLiteral(node.arguments[0])
    ) {
      add(node.arguments[0].text, node, false)
    } else if (
      ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument) && ts.isStringLiteral(node.argument.literal)
    ) {
      add(node.argument.literal.text, node, true) // `import("./x.js").T` in a type: erased, but an import still
    }
    ts.forEachChild(node, visit)
  }
  visit(source)
  return found
}

const imports = files.flatMap(importsOf)
const at = (i: Import) => `src/${i.from}:${i.line} imports ${i.to}`

describe("ARCHITECTURE.md: imports run one way", () => {
  it("every file of src/ has a layer in the table", () => {
    assert.deepStrictEqual(files.filter((file) => layerOf(file) === undefined), [])
  })

  it("every import reaches an existing file", () => {
    const known = new Set(files)
    assert.deepStrictEqual(imports.filter((i) => !known.has(i.to)).map(at), [])
  })

  it("the layers run in the order of its diagram, shared below them", () => {
    const diagram = /^```\n(.+)\n```$/m.exec(ARCHITECTURE.split(/^## /m).find((s) => s.startsWith("Which way"))!)!
    assert.deepStrictEqual(["shared", ...diagram[1]!.split("→").map((layer) => layer.trim())], ORDER)
  })

  it("no import goes to a layer to the right, but a type-only one from an internal module to its own public module", () => {
    const rank = (file: string) => ORDER.indexOf(layerOf(file)!)
    // A public module's own internal modules: those it imports, being their face.
    const ownPublic = (i: Import) =>
      !i.to.includes("/") && i.from.startsWith("internal/") && imports.some((j) => j.from === i.to && j.to === i.from)
    const backwards = imports
      .filter((i) => rank(i.to) > rank(i.from) && !(i.typeOnly && ownPublic(i)))
      .map((i) => `${at(i)}: ${layerOf(i.from)} → ${layerOf(i.to)}${i.typeOnly ? " (type-only)" : ""}`)
    assert.deepStrictEqual(backwards, [])
  })

  it("the HTTP core imports no server: Node's HTTP modules are the transport's", () => {
    const servers = files
      .filter((file) => layerOf(file) === "HTTP core")
      .filter((file) => /from "node:(http|https|http2|net)"/.test(readFileSync(join(SRC, file), "utf8")))
    assert.deepStrictEqual(servers, [])
  })

  it("no run-time import cycle", () => {
    const edges = new Map<string, Array<string>>(files.map((file) => [file, []]))
    for (const i of imports) if (!i.typeOnly) edges.get(i.from)?.push(i.to)
    const state = new Map<string, "open" | "done">()
    const stack: Array<string> = []
    const cycles: Array<string> = []
    const visit = (file: string) => {
      state.set(file, "open")
      stack.push(file)
      for (const next of edges.get(file) ?? []) {
        if (state.get(next) === "open") cycles.push([...stack.slice(stack.indexOf(next)), next].join(" → "))
        else if (state.get(next) === undefined) visit(next)
      }
      stack.pop()
      state.set(file, "done")
    }
    for (const file of files) if (state.get(file) === undefined) visit(file)
    assert.deepStrictEqual(cycles, [])
  })
})
