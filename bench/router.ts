/**
 * The router scenarios: a set of stored routes, one request for each, and what every server must answer. The
 * library's Node router serves them from its table; the peers register the same routes with their own router at
 * start-up. All answer with the same trivial JSON handler: the route's handler name and the request's parameters.
 *
 * Two sets: `rest`, REST-shaped resources of ten routes each, as many as asked; `github`, the GitHub REST API's
 * 1,223 routes as GitHub writes them (one mixed segment, `:base...:head`), the 12 written `:enterprise-team` renamed
 * `:enterprise_team`, as the registry asks (it refuses `enterprise` used twice).
 */
import { githubRoutes } from "../test/fixtures/githubRoutes.js"

export type RouteSet = "rest" | "github"

/** The set a server process serves: `ROUTE_SET=github`, else `rest`. */
export const routeSetOf = (name: string | undefined): RouteSet => (name === "github" ? "github" : "rest")

export interface RouterRoute {
  readonly method: string
  readonly path: string
  readonly handler: string
}

export interface RouterRequest {
  readonly method: string
  readonly path: string
  /** The body every server answers with (status 200). */
  readonly body: string
}

// Ten routes per resource: collection, item, nested collection and item, a static sibling of the item parameter.
const SHAPES: ReadonlyArray<readonly [method: string, path: string, action: string]> = [
  ["GET", "", "list"],
  ["POST", "", "create"],
  ["GET", "/search", "search"],
  ["GET", "/:id", "show"],
  ["PUT", "/:id", "replace"],
  ["PATCH", "/:id", "update"],
  ["DELETE", "/:id", "remove"],
  ["GET", "/:id/items", "items"],
  ["POST", "/:id/items", "addItem"],
  ["GET", "/:id/items/:itemId", "item"]
]

const restRoutes = (count: number): ReadonlyArray<RouterRoute> =>
  Array.from({ length: count }, (_, i) => {
    const [method, path, action] = SHAPES[i % SHAPES.length]!
    const resource = `r${Math.floor(i / SHAPES.length)}`
    return { method, path: `/api/${resource}${path}`, handler: `${resource}.${action}` }
  })

const GITHUB: ReadonlyArray<RouterRoute> = githubRoutes.map(([method, path], i) => ({
  method,
  path: path.replace(":enterprise-team", ":enterprise_team"),
  handler: `github.${i}`
}))

/**
 * The first `count` routes of a set: for `rest` (`count` a multiple of ten), resources `/api/r0` … with the ten shapes
 * each; for `github`, at most its 1,223.
 */
export const routes = (count: number, set: RouteSet = "rest"): ReadonlyArray<RouterRoute> =>
  set === "github" ? GITHUB.slice(0, count) : restRoutes(count)

/** What the trivial handler answers: the same bytes from every server. */
export const answer = (handler: string, params: Readonly<Record<string, string>>): string =>
  JSON.stringify({ handler, params })

/** One request per route, with concrete parameter values. */
export const requests = (count: number, set: RouteSet = "rest"): ReadonlyArray<RouterRequest> =>
  routes(count, set).map((route, i) => {
    const params: Record<string, string> = {}
    const path = route.path.replace(/:(\w+)/g, (_, name: string) => (params[name] = `${name}${i}`))
    return { method: route.method, path, body: answer(route.handler, params) }
  })

/** The file wrk's script reads: a request a line, "METHOD path". */
export const requestLines = (count: number, set: RouteSet = "rest"): string =>
  requests(count, set).map((request) => `${request.method} ${request.path}`).join("\n") + "\n"

/** How many requests `check` has in flight at once: a client's handful of connections, not one after another. */
const CHECK_CONCURRENCY = 8

/** Every request answered 200 with its body, and a path no route serves answered 404. */
export const check = async (name: string, origin: string, count: number, set: RouteSet = "rest"): Promise<void> => {
  const pending = [...requests(count, set)]
  const send = async (): Promise<void> => {
    for (let request = pending.shift(); request !== undefined; request = pending.shift()) {
      const response = await fetch(origin + request.path, { method: request.method })
      const text = await response.text()
      if (response.status !== 200 || text !== request.body) {
        throw new Error(`${name}: ${request.method} ${request.path} answered ${response.status} ${text}`)
      }
    }
  }
  await Promise.all(Array.from({ length: CHECK_CONCURRENCY }, send))
  const missing = await fetch(`${origin}/api/none/of/these`)
  await missing.text()
  if (missing.status !== 404) throw new Error(`${name}: an unknown path answered ${missing.status}`)
}

/**
 * Stores the scenario's `count` routes through a server's own routing API, in one change set (`POST
 * /v1/routing/batch`, up to 5,000 operations: the GitHub set's 1,223 fit), as a client seeding a registry would;
 * yields their ids. `token` must have `routes:write`.
 */
export const storeThroughApi = async (
  origin: string,
  token: string,
  count: number,
  set: RouteSet = "rest"
): Promise<Array<string>> => {
  const stored = routes(count, set)
  const created = await fetch(`${origin}/v1/routing/batch`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: JSON.stringify({ operations: stored.map((route) => ({ op: "create", route })) })
  })
  const body = await created.json() as { readonly results: ReadonlyArray<{ readonly route: { readonly id: string } }> }
  if (created.status !== 200) throw new Error(`storing ${stored.length} routes: ${JSON.stringify(body)}`)
  return body.results.map((result) => result.route.id)
}
