/**
 * Routes as a person reads them in a terminal, and as JSON for scripts.
 *
 * @internal
 */
import { Schema } from "effect"
import * as Route from "../../Route.js"

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
        names(route.middleware),
        route.handler,
        route.createdAt.toISOString()
      ])
    ])

/** One route, a field a line, with its ETag. */
export const route = (route: Route.Route, etag: string | undefined): string =>
  pad([
    ["id", route.id],
    ["method", route.method],
    ["path", route.path],
    ["middleware", names(route.middleware)],
    ["handler", route.handler],
    ["createdAt", route.createdAt.toISOString()],
    ...(etag === undefined ? [] : [["etag", etag]])
  ])

const encode = Schema.encodeSync(Route.Route)

/** The routes as the API answers them, one JSON document. */
export const json = (value: Route.Route | ReadonlyArray<Route.Route>): string =>
  JSON.stringify(Array.isArray(value) ? value.map((route) => encode(route)) : encode(value as Route.Route), null, 2) +
  "\n"
