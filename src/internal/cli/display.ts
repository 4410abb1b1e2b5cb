/**
 * Routes as a person reads them in a terminal, and as JSON for scripts.
 *
 * @internal
 */
import { Schema } from "effect"
import * as Route from "../../Route.js"
import * as RoutingApi from "../../RoutingApi.js"
import * as When from "../../When.js"

const names = (list: ReadonlyArray<string>) => list.length === 0 ? "-" : list.join(", ")

const pad = (rows: ReadonlyArray<ReadonlyArray<string>>): string => {
  const widths = rows[0]!.map((_, column) => Math.max(...rows.map((row) => row[column]!.length)))
  return rows.map((row) => row.map((cell, i) => i === row.length - 1 ? cell : cell.padEnd(widths[i]!)).join("  "))
    .join("\n") + "\n"
}

/** One line per route, under a header; a note instead when there are none. */
export const routes = (list: ReadonlyArray<Route.Route>): string =>
  list.length === 0
    ? "no routes\n"
    : pad([
      ["ID", "METHOD", "PATH", "MIDDLEWARE", "HANDLER", "CREATED"],
      ...list.map((route) => [
        route.id,
        route.method,
        route.path,
        names(route.middleware.map(Route.middlewareName)),
        route.handler,
        route.createdAt.toISOString()
      ])
    ])

// A middleware entry on one line: its name, and its config's JSON.
const middlewareText = (entry: Route.MiddlewareEntry) =>
  typeof entry === "string" ? entry : `${entry.name} ${JSON.stringify(entry.config)}`

/** One route, a field a line, with its ETag. */
export const route = (route: Route.Route, etag: string | undefined): string =>
  pad([
    ["id", route.id],
    ["method", route.method],
    ["path", route.path],
    ["middleware", names(route.middleware.map(middlewareText))],
    ["handler", route.handler],
    ...(route.enabled === false ? [["enabled", "false"]] : []),
    ...(route.split === undefined ? [] : [["split", JSON.stringify(route.split)]]),
    ...(route.description === undefined ? [] : [["description", route.description]]),
    ...(route.tags === undefined ? [] : [["tags", route.tags.join(", ")]]),
    ["createdAt", route.createdAt.toISOString()],
    ...(etag === undefined ? [] : [["etag", etag]])
  ])

const encode = Schema.encodeSync(Route.Route)

/** The routes as the API answers them, one JSON document. */
export const json = (value: Route.Route | ReadonlyArray<Route.Route>): string =>
  JSON.stringify(Array.isArray(value) ? value.map((route) => encode(route)) : encode(value as Route.Route), null, 2) +
  "\n"

const named = (route: Route.Route) =>
  `${route.method} ${route.path}${
    route.when === undefined ? "" : ` when ${When.canonicalJson(route.when)}`
  }  (${route.id})`

// A split's choice: the handler, and the key's bucket or that there was no key.
const splitOf = (split: NonNullable<typeof RoutingApi.Match.Type["split"]>): string =>
  split.key === null
    ? `handler ${split.handler} (no key: the route's handler; give one with --key)`
    : `handler ${split.handler} (key ${JSON.stringify(split.key)}, bucket ${split.bucket})`

/** The answer of `match`: the decision a field a line, then each other route matching the path with why it lost. */
export const match = (answer: typeof RoutingApi.Match.Type): string => {
  const params = answer.params === null
    ? "-"
    : names(Object.entries(answer.params).map(([name, value]) => `${name}=${JSON.stringify(value)}`))
  const decision = pad([
    ["outcome", answer.outcome],
    ...(answer.servedByHost === undefined
      ? []
      : [["host", `serves this path itself (it declares ${answer.servedByHost}), before any stored route`] as const]),
    ["route", answer.route === null ? "-" : named(answer.route)],
    ...(answer.split === undefined ? [] : [["split", splitOf(answer.split)] as const]),
    ["params", params],
    ["allow", names(answer.allow)]
  ])
  const candidates = answer.candidates.map(({ reason, route }) => `  ${named(route)}\n    ${reason}\n`).join("")
  return decision +
    (candidates === "" ? "no other route matches the path\n" : `other routes matching the path:\n${candidates}`)
}

/** The answer of `match` as the API answers it. */
export const matchJson = (answer: typeof RoutingApi.Match.Type): string =>
  JSON.stringify(Schema.encodeSync(RoutingApi.Match)(answer), null, 2) + "\n"

type Entry = typeof RoutingApi.HistoryEntry.Type

const items = (list: ReadonlyArray<string>) => list.length === 0 ? "-" : list.join("; ")

// What a change did to the route's fields, as `field old -> new` items; the route's key on a create or delete.
const changeOf = (entry: Entry): string => {
  const { after, before } = entry
  const from = entry.restoredFrom === undefined ? [] : [`to revision ${entry.restoredFrom}`]
  if (before === null || after === null) {
    const route = (after ?? before)!
    return items([...from, `${route.method} ${route.path}`, `handler ${route.handler}`])
  }
  const fields = [
    ...(before.path === after.path ? [] : [`path ${before.path} -> ${after.path}`]),
    ...(JSON.stringify(before.middleware) === JSON.stringify(after.middleware)
      ? []
      : [
        `middleware [${before.middleware.map(middlewareText).join(", ")}] -> [${
          after.middleware.map(middlewareText).join(", ")
        }]`
      ]),
    ...(before.handler === after.handler ? [] : [`handler ${before.handler} -> ${after.handler}`]),
    ...((before.description ?? "") === (after.description ?? "") ? [] : ["description changed"]),
    ...(JSON.stringify(before.tags ?? []) === JSON.stringify(after.tags ?? [])
      ? []
      : [`tags [${(before.tags ?? []).join(", ")}] -> [${(after.tags ?? []).join(", ")}]`])
  ]
  return items([...from, ...fields])
}

/** Entries of the change log, newest first, one a line under a header; a note instead when there are none. */
export const history = (entries: ReadonlyArray<Entry>): string =>
  entries.length === 0
    ? "no entries\n"
    : pad([
      ["REVISION", "AT", "ACTOR", "ACTION", "ROUTE", "CHANGE"],
      ...entries.map((entry) => [
        String(entry.revision),
        entry.at,
        entry.actor ?? "-",
        entry.action,
        entry.routeId,
        changeOf(entry)
      ])
    ])

/** Entries of the change log as the API answers them, one JSON array. */
export const historyJson = (entries: ReadonlyArray<Entry>): string =>
  JSON.stringify(entries.map((entry) => Schema.encodeSync(RoutingApi.HistoryEntry)(entry)), null, 2) + "\n"
