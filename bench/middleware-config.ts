/**
 * What a configured middleware's config costs a request: `node --import tsx bench/middleware-config.ts`.
 *
 * The Node router's per-request work for a matched route (its functions resolved for its stored version, then its chain
 * run, `internal/router/core.ts` and `internal/router/chain.ts`), with one middleware and a handler: a middleware
 * without a config, the same middleware registered with a config schema and given a config (decoded once per route
 * version, read per request), and, for scale, the config decoded on every request instead.
 */
import { Schema } from "effect"
import type { IncomingMessage, ServerResponse } from "node:http"
import * as Connect from "route-registry/internal/router/chain"
import * as RouterCore from "route-registry/internal/router/core"
import * as Route from "route-registry/Route"
import * as RouterListener from "route-registry/RouterListener"

const Config = Schema.Struct({ max: Schema.Int, per: Schema.optionalWith(Schema.String, { default: () => "1m" }) })
const decode = Schema.decodeUnknownSync(Config)

let sink = 0
const functions: RouterListener.Functions = {
  handlers: { h: () => void (sink += 1) },
  middleware: {
    plain: (_req, _res, next) => {
      sink += 1
      next()
    },
    configured: RouterListener.configured(Config, (_req, _res, next, config) => {
      sink += config.max
      next()
    }),
    decodesEachTime: (req, _res, next) => {
      sink += decode((req as unknown as { config: unknown }).config).max
      next()
    }
  }
}
const core = RouterCore.make<
  RouterListener.RouteFunction,
  RouterListener.RouteFunction,
  ReadonlyArray<RouterListener.RouteFunction>,
  RouterListener.ConfiguredFunction<any>
>(functions, (middleware, handler) => [...middleware, handler], RouterListener.bindConfig)

const routeWith = (middleware: ReadonlyArray<unknown>) =>
  new Route.StoredRoute({
    id: Route.makeRouteId(Date.now()),
    method: "GET" as Route.HttpMethod,
    path: "/a" as Route.RoutePath,
    middleware: middleware as ReadonlyArray<Route.MiddlewareEntry>,
    handler: "h" as Route.HandlerName,
    createdAt: new Date(),
    revision: 1
  }, true)

const req = { config: { max: 3 } } as unknown as IncomingMessage
const res = {} as ServerResponse
const done = () => {}
const N = 1_000_000

const run = (route: Route.StoredRoute): number => {
  const start = process.hrtime.bigint()
  for (let i = 0; i < N; i++) {
    const fns = core.resolve(route) as ReadonlyArray<RouterListener.RouteFunction>
    Connect.run(fns, req, res, { started: 0 }, done, done)
  }
  return Number(process.hrtime.bigint() - start) / N
}

const cases = {
  "middleware without a config": routeWith(["plain"]),
  "configured middleware, its config": routeWith([{ name: "configured", config: { max: 3 } }]),
  "the config decoded per request": routeWith(["decodesEachTime"])
}
const median = (xs: Array<number>) => xs.sort((a, b) => a - b)[Math.floor(xs.length / 2)]!
const samples = Object.fromEntries(Object.keys(cases).map((name) => [name, [] as Array<number>]))
for (let i = 0; i < 9; i++) {
  for (const [name, route] of Object.entries(cases)) samples[name]!.push(run(route))
}
const base = median(samples["middleware without a config"]!)
console.log(`1,000,000 requests per run, median of 9 runs (ns per request, resolve + chain):`)
for (const name of Object.keys(cases)) {
  const ns = median(samples[name]!)
  console.log(`  ${name.padEnd(36)} ${ns.toFixed(1)}  (${ns >= base ? "+" : ""}${(ns - base).toFixed(1)})`)
}
if (sink === 0) console.log("")
