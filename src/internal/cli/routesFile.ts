/**
 * The routes file that `export` writes and `diff` and `sync` read: `{ routes: [{ method, path, middleware, handler }] }`
 * in YAML or JSON, each route with the fields of docs/router.md (`enabled`, `split`, `description`, `tags`, middleware
 * configs, `when`) when not at their defaults. A `.json` file is read by the YAML parser too (JSON is a subset of YAML 1.2), so a problem in
 * either kind is reported with its line and column.
 *
 * @internal
 */
import { Either } from "effect"
import * as Yaml from "yaml"
import * as Route from "../../Route.js"
import * as When from "../route/when.js"

/** The formats of a routes file; the first is the default. */
export const FORMATS = ["yaml", "json"] as const

export type Format = typeof FORMATS[number]

/** The format a file name's extension names, if any. */
export const formatOf = (file: string): Format | undefined =>
  /\.json$/i.test(file) ? "json" : /\.ya?ml$/i.test(file) ? "yaml" : undefined

/** Where something is in a file (1-based), and what is wrong there. */
export interface Problem {
  readonly line: number
  readonly column: number
  readonly message: string
}

/** One route of a file: its fields, its index in `routes` and where it starts. */
export interface Item {
  readonly index: number
  readonly line: number
  readonly column: number
  readonly route: Route.CreateRoute
}

/**
 * The identity of a route between registries: ids are not portable, the method, shape and conditions (as a set, by
 * their canonical JSON) are unique in each.
 */
export const keyOf = (
  route: { readonly method: string; readonly path: string; readonly when?: When.When | undefined }
): string =>
  `${route.method} ${Route.shapeOf(route.path as Route.RoutePath)}${
    route.when === undefined ? "" : ` ${When.keyOf(route.when)}`
  }`

const order = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0)

/**
 * File order: by path, then method, then conditions' canonical JSON, compared by code unit, so a resource's methods sit
 * together on any machine.
 */
export const compare = (a: Route.CreateRoute, b: Route.CreateRoute): number =>
  order(a.path, b.path) || order(a.method, b.method) || order(When.keyOf(a.when), When.keyOf(b.when))

const entry = (route: Route.CreateRoute) => ({
  method: route.method,
  path: route.path,
  middleware: [...route.middleware],
  handler: route.handler,
  ...(route.enabled === false ? { enabled: false } : {}),
  ...(route.split === undefined ? {} : { split: route.split }),
  ...(route.description === undefined || route.description === "" ? {} : { description: route.description }),
  ...(route.tags === undefined || route.tags.length === 0 ? {} : { tags: [...route.tags] }),
  ...(route.when === undefined ? {} : { when: route.when })
})

// The lists kept on one line: `middleware: [auth, timing]`, `tags: [team:payments]`.
const FLOW = new Set(["middleware", "tags"])

/** The file for `routes`, in file order; nothing in it depends on the registry or the time it was written. */
export const render = (routes: ReadonlyArray<Route.CreateRoute>, format: Format): string => {
  const body = { routes: [...routes].sort(compare).map(entry) }
  if (format === "json") return JSON.stringify(body, null, 2) + "\n"
  const doc = new Yaml.Document(body)
  // One line per field: a middleware list reads `[auth, timing]`.
  Yaml.visit(doc, {
    Pair: (_, pair) => {
      if (Yaml.isScalar(pair.key) && FLOW.has(pair.key.value as string) && Yaml.isSeq(pair.value)) {
        pair.value.flow = true
      }
    }
  })
  return doc.toString({ lineWidth: 0, flowCollectionPadding: false })
}

// "middleware[1].config.max" → ["middleware", 1, "config", "max"]: the place a validation issue names, as a path into
// the item (a key that is not an identifier is written `["a b"]`).
const issuePath = (path: string): Array<string | number> => {
  const parts: Array<string | number> = []
  for (const [, name, index, quoted] of path.matchAll(/\.?([^.[\]]+)|\[(\d+)\]|\[("(?:[^"\\]|\\.)*")\]/g)) {
    parts.push(name !== undefined ? name : index !== undefined ? Number(index) : JSON.parse(quoted!) as string)
  }
  return parts
}

const nodeIn = (doc: Yaml.Document, path: ReadonlyArray<string | number>): Yaml.Node | undefined => {
  const node: unknown = path.length === 0 ? doc.contents : doc.getIn(path, true)
  return Yaml.isNode(node) ? node : undefined
}

interface Given {
  readonly method: string
  readonly path: string
  readonly when: When.When | undefined
}

// The method, path and conditions of an entry when all are valid, whatever its other fields hold.
const identityOf = (value: unknown): Given | undefined => {
  const { method, path, when } = (typeof value === "object" && value !== null ? value : {}) as Record<string, unknown>
  return typeof method === "string" && typeof path === "string" && Route.checkMethod(method) === undefined &&
      Either.isRight(Route.parsePath(path)) && (when === undefined || When.check(when).length === 0)
    ? { method, path, when: when === undefined ? undefined : When.canonical(when as Record<string, unknown>) }
    : undefined
}

/**
 * Reads a routes file: every problem at once (syntax, structure, each route's rules, two routes of one method and
 * shape), or the routes with their positions.
 */
export const parse = (text: string): Either.Either<ReadonlyArray<Item>, ReadonlyArray<Problem>> => {
  const lines = new Yaml.LineCounter()
  const doc = Yaml.parseDocument(text, { lineCounter: lines, prettyErrors: false })
  const at = (node: Yaml.Node | undefined, message: string): Problem => {
    const { line, col } = lines.linePos(node?.range?.[0] ?? 0)
    return { line, column: col, message }
  }
  if (doc.errors.length > 0) {
    return Either.left(doc.errors.map((error) => {
      const { line, col } = error.linePos?.[0] ?? lines.linePos(error.pos[0])
      return { line, column: col, message: error.message.split("\n")[0]! }
    }))
  }
  const root: unknown = doc.toJS()
  const routes = (root as { routes?: unknown } | null)?.routes
  const extra = Yaml.isMap(doc.contents)
    ? doc.contents.items.filter((pair) => !(Yaml.isScalar(pair.key) && pair.key.value === "routes"))
    : []
  if (!Array.isArray(routes) || extra.length > 0) {
    return Either.left([at(
      extra.length > 0 && Yaml.isNode(extra[0]!.key) ? extra[0]!.key : doc.contents ?? undefined,
      "the file must be an object with the single field \"routes\": a list of { method, path, middleware, handler }"
    )])
  }
  const problems: Array<Problem> = []
  const items: Array<Item> = []
  const seen = new Map<string, { readonly index: number; readonly line: number; readonly given: Given }>()
  routes.forEach((value: unknown, index) => {
    const itemNode = nodeIn(doc, ["routes", index])
    const first = at(itemNode, "")
    // A route whose method and path are valid is checked against the others even when another field is not, so
    // every problem of the file is reported at once.
    const given = identityOf(value)
    const twin = given === undefined ? undefined : seen.get(keyOf(given))
    if (given !== undefined && twin === undefined) seen.set(keyOf(given), { index, line: first.line, given })
    if (given !== undefined && twin !== undefined) {
      problems.push(at(
        itemNode,
        `routes[${index}]: ${given.method} ${given.path} has the method, shape and conditions of routes[${twin.index}] ` +
          `(${twin.given.method} ${twin.given.path}, line ${twin.line}): a registry holds only one of them`
      ))
    }
    Either.match(Route.validateCreate(value), {
      onLeft: (issues) => {
        for (const issue of issues) {
          const node = issue.path === "" ? itemNode : nodeIn(doc, ["routes", index, ...issuePath(issue.path)])
          const where = issue.path === "" ? `routes[${index}]` : `routes[${index}].${issue.path}`
          problems.push(at(node ?? itemNode, `${where}: ${issue.message}`))
        }
      },
      onRight: (route) => {
        if (twin === undefined) items.push({ index, line: first.line, column: first.column, route })
      }
    })
  })
  return problems.length > 0 ? Either.left(problems) : Either.right(items)
}
