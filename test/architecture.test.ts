/**
 * ARCHITECTURE.md's rule, enforced: imports run one way, model → stores → table → HTTP core → transport → adapters and
 * routers → entry points, with the shared modules below every layer. A module imports at run time only from its own layer or
 * the layers to its left; type-only imports back up are allowed; no run-time import cycle. Each file's layer is the
 * one ARCHITECTURE.md's table gives it, read from LAYERS below, which must name every file of src/.
 */
import { assert, describe, it } from "@effect/vitest"
import { readdirSync, readFileSync } from "node:fs"
import { dirname, join, normalize, relative } from "node:path"
import { fileURLToPath } from "node:url"
import ts from "typescript"

const SRC = fileURLToPath(new URL("../src", import.meta.url))

const ORDER = [
  "shared",
  "model",
  "stores",
  "table",
  "HTTP core",
  "transport",
  "adapters and routers",
  "entry points"
] as const
type Layer = typeof ORDER[number]

// ARCHITECTURE.md's table, by path under src/: a file, or a folder ending in "/" (the longest match wins).
const LAYERS: ReadonlyArray<readonly [string, Layer]> = [
  ["internal/limits.ts", "shared"],
  ["internal/disposable.ts", "shared"],
  ["internal/urls.ts", "shared"],
  ["Telemetry.ts", "shared"],
  ["internal/telemetry.ts", "shared"],
  ["Route.ts", "model"],
  ["Split.ts", "model"],
  ["When.ts", "model"],
  ["InvalidOption.ts", "model"],
  ["Catalog.ts", "model"],
  ["internal/route/", "model"],
  ["internal/optionChecks.ts", "model"],
  ["internal/cli/routesFile.ts", "model"],
  ["internal/alarms.ts", "model"],
  ["RouteRepository.ts", "stores"],
  ["PgRouteRepository.ts", "stores"],
  ["internal/store/", "stores"],
  ["internal/pg/", "stores"],
  ["RouteTable.ts", "table"],
  ["RouteFollower.ts", "table"],
  ["HostPaths.ts", "table"],
  ["internal/table/", "table"],
  ["internal/follow/", "table"],
  ["RoutingHandler.ts", "HTTP core"],
  ["RoutingApi.ts", "HTTP core"],
  ["Authenticator.ts", "HTTP core"],
  ["Problem.ts", "HTTP core"],
  ["internal/options.ts", "HTTP core"],
  ["internal/http/", "HTTP core"],
  ["internal/auth/", "HTTP core"],
  ["internal/transport/", "transport"],
  ["AdminListener.ts", "adapters and routers"],
  ["AdminWebHandler.ts", "adapters and routers"],
  ["AdminHttpApp.ts", "adapters and routers"],
  ["RouterListener.ts", "adapters and routers"],
  ["RouterHttpApp.ts", "adapters and routers"],
  ["NodeListener.ts", "adapters and routers"],
  ["WebHandler.ts", "adapters and routers"],
  ["RoutingHttpApp.ts", "adapters and routers"],
  ["NodeRouter.ts", "adapters and routers"],
  ["Express.ts", "adapters and routers"],
  ["Fastify.ts", "adapters and routers"],
  ["Hono.ts", "adapters and routers"],
  ["internal/router/", "adapters and routers"],
  ["internal/integrations/", "adapters and routers"],
  ["index.ts", "entry points"],
  ["Cli.ts", "entry points"],
  ["bin.ts", "entry points"],
  ["internal/cli/", "entry points"]
]

const layerOf = (file: string): Layer | undefined => {
  let best: readonly [string, Layer] | undefined
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
  /** Erased when compiled: `import type`, every name `type`, `export type … from`. */
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
    } else if (ts.isImportTypeNode(node)) {
      return // `import("./x.js").T` in a type: erased
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

  it("no run-time import goes to a layer to the right (a type-only one may)", () => {
    const rank = (file: string) => ORDER.indexOf(layerOf(file)!)
    const backwards = imports
      .filter((i) => !i.typeOnly && rank(i.to) > rank(i.from))
      .map((i) => `${at(i)}: ${layerOf(i.from)} → ${layerOf(i.to)}`)
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
