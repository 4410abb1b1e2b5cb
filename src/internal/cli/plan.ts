/**
 * What `diff` shows and `sync` does: the changes that make a registry's routes equal to a routes file's.
 *
 * Routes are matched by method, shape and conditions (`GET /users/:id` and `GET /users/:userId` are one route): the key a
 * registry keeps unique, so a file route matches at most one stored route, and renaming a parameter is an update
 * in place (same id, no moment without the route) rather than a delete and a create.
 *
 * @internal
 */
import * as Route from "../../Route.js"
import * as RouteFields from "../route/fields.js"
import * as Split from "../route/split.js"
import * as When from "../route/when.js"
import * as RoutesFile from "./routesFile.js"

/** The fields an update changes. */
export type Patch = {
  -readonly [K in keyof Route.RoutePatch]: Route.RoutePatch[K]
}

export type Change =
  | { readonly _tag: "Delete"; readonly current: Route.Route }
  | { readonly _tag: "Update"; readonly current: Route.Route; readonly item: RoutesFile.Item; readonly patch: Patch }
  | { readonly _tag: "Create"; readonly item: RoutesFile.Item }

export interface Plan {
  /** Deletes first, so the method and shape they free are free before anything else runs; then updates, creates. */
  readonly changes: ReadonlyArray<Change>
  /** File routes equal to their stored route. */
  readonly unchanged: number
  /** Stored routes of the selection that the file lacks and the plan keeps (without `--prune`). */
  readonly kept: number
}

export interface Options {
  /** Only stored routes whose path starts with it are deleted by `prune`; the file must stay inside it. */
  readonly pathPrefix: string
  readonly prune: boolean
}

/** Routes of the file that lie outside the selection: a file never changes routes another prefix owns. */
export const outside = (items: ReadonlyArray<RoutesFile.Item>, pathPrefix: string): Array<RoutesFile.Problem> =>
  items.filter((item) => !item.route.path.startsWith(pathPrefix)).map((item) => ({
    line: item.line,
    column: item.column,
    message: `routes[${item.index}]: ${item.route.method} ${item.route.path} is outside --path-prefix ${pathPrefix}`
  }))

// The fields of `wanted` that differ from `current`: the method and shape match already, the path may not. A field of
// docs/router.md the file leaves out is at its default, and set back to it.
const patchOf = (current: Route.Route, wanted: Route.CreateRoute): Patch => {
  const patch: Patch = {}
  if (current.path !== wanted.path) patch.path = wanted.path
  if (!RouteFields.sameEntries(current.middleware, wanted.middleware)) patch.middleware = wanted.middleware
  if (current.handler !== wanted.handler) patch.handler = wanted.handler
  if ((current.enabled ?? true) !== (wanted.enabled ?? true)) patch.enabled = wanted.enabled ?? true
  if (!Split.equal(current.split, wanted.split)) patch.split = wanted.split ?? null
  if ((current.description ?? "") !== (wanted.description ?? "")) patch.description = wanted.description ?? ""
  if (!RouteFields.sameTags(current.tags, wanted.tags)) patch.tags = wanted.tags ?? []
  return patch
}

/** The plan that makes `stored` (every route of the registry) match `items`. */
export const make = (
  stored: ReadonlyArray<Route.Route>,
  items: ReadonlyArray<RoutesFile.Item>,
  options: Options
): Plan => {
  const byKey = new Map(stored.map((route) => [RoutesFile.keyOf(route), route]))
  const wanted = new Set(items.map((item) => RoutesFile.keyOf(item.route)))
  const updates: Array<Change> = []
  const creates: Array<Change> = []
  let unchanged = 0
  for (const item of [...items].sort((a, b) => RoutesFile.compare(a.route, b.route))) {
    const current = byKey.get(RoutesFile.keyOf(item.route))
    if (current === undefined) {
      creates.push({ _tag: "Create", item })
      continue
    }
    const patch = patchOf(current, item.route)
    if (Object.keys(patch).length === 0) unchanged++
    else updates.push({ _tag: "Update", current, item, patch })
  }
  const missing = stored.filter((route) =>
    route.path.startsWith(options.pathPrefix) && !wanted.has(RoutesFile.keyOf(route))
  ).sort(RoutesFile.compare)
  const deletes: Array<Change> = options.prune ? missing.map((current) => ({ _tag: "Delete", current })) : []
  return { changes: [...deletes, ...updates, ...creates], unchanged, kept: options.prune ? 0 : missing.length }
}

const list = (names: ReadonlyArray<string>) => `[${names.join(", ")}]`

// A middleware list as one line: names, and a config as its JSON (`rateLimit {"max":100}`).
const entries = (middleware: ReadonlyArray<Route.MiddlewareEntry>) =>
  list(middleware.map((entry) => typeof entry === "string" ? entry : `${entry.name} ${JSON.stringify(entry.config)}`))

const optional = (value: unknown) => value === undefined || value === null ? "-" : JSON.stringify(value)

// A route as a title names it: method, path and its conditions when it has some.
const nameOf = (route: Route.CreateRoute) =>
  `${route.method} ${route.path}${route.when === undefined ? "" : ` when ${When.keyOf(route.when)}`}`

/** One line naming a change, as progress and failures print it. */
export const title = (change: Change): string => {
  switch (change._tag) {
    case "Delete":
      return `delete ${nameOf(change.current)}`
    case "Update":
      return `update ${nameOf(change.current)}`
    case "Create":
      return `create ${nameOf(change.item.route)}`
  }
}

const describe = (change: Change): Array<string> => {
  switch (change._tag) {
    case "Delete":
      return [`- ${title(change)}  (id ${change.current.id})`]
    case "Update": {
      const { current, patch } = change
      return [
        `~ ${title(change)}  (id ${current.id})`,
        ...(patch.path === undefined ? [] : [`    path        ${current.path} -> ${patch.path}`]),
        ...(patch.middleware === undefined
          ? []
          : [`    middleware  ${entries(current.middleware)} -> ${entries(patch.middleware)}`]),
        ...(patch.handler === undefined ? [] : [`    handler     ${current.handler} -> ${patch.handler}`]),
        ...(patch.enabled === undefined ? [] : [`    enabled     ${current.enabled ?? true} -> ${patch.enabled}`]),
        ...(patch.split === undefined
          ? []
          : [`    split       ${optional(current.split)} -> ${optional(patch.split)}`]),
        ...(patch.description === undefined
          ? []
          : [`    description ${optional(current.description)} -> ${optional(patch.description || undefined)}`]),
        ...(patch.tags === undefined ? [] : [`    tags        ${list(current.tags ?? [])} -> ${list(patch.tags)}`])
      ]
    }
    case "Create": {
      const { route } = change.item
      return [`+ ${title(change)}  middleware ${entries(route.middleware)}  handler ${route.handler}`]
    }
  }
}

const count = (n: number, what: string) => `${n} ${what}${n === 1 ? "" : "s"}`

/** The plan as a person reads it: one block per change, then a summary line. */
export const render = (plan: Plan): string => {
  const tally = (tag: Change["_tag"]) => plan.changes.filter((change) => change._tag === tag).length
  const kept = plan.kept === 0
    ? ""
    : ` ${count(plan.kept, "stored route")} not in the file kept (--prune deletes them).`
  if (plan.changes.length === 0) {
    return `No changes: the registry matches the file (${count(plan.unchanged, "route")}).${kept}\n`
  }
  return [
    ...plan.changes.flatMap(describe),
    "",
    `Plan: ${tally("Create")} to create, ${tally("Update")} to update, ${tally("Delete")} to delete, ` +
    `${plan.unchanged} unchanged.${kept}`
  ].join("\n") + "\n"
}
