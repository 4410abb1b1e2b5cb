/**
 * What a split costs the router, and how closely it keeps its weights: `node --import tsx bench/split.ts`.
 *
 * On the GitHub routes (1,223), each request is looked up in the route table and its split choice read as every router
 * form reads it (`internal/router/split.ts`: the key from a header, the override header, the bucket): with no split on
 * any route, and with a split on every route; the lookup alone is the baseline. Then a split of 10% / 5% / 85% over
 * 100,000 keys, each side's share against its weight.
 */
import * as Splits from "route-registry/internal/router/split"
import * as Route from "route-registry/Route"
import * as RouteTable from "route-registry/RouteTable"
import * as Split from "route-registry/Split"
import { requests, routes } from "./router.js"

const NOW = Date.parse("2026-11-27T00:00:00.000Z")
const split = {
  by: "header:x-user-id",
  targets: [{ handler: "canary" as Route.HandlerName, weight: 1000 }, {
    handler: "other" as Route.HandlerName,
    weight: 500
  }],
  override: "x-handler"
}

const tableOf = (withSplit: boolean) =>
  RouteTable.fromIterable(
    routes(1223, "github").map((route, i) =>
      new Route.StoredRoute({
        id: Route.makeRouteId(NOW + i),
        method: route.method as Route.HttpMethod,
        path: route.path as Route.RoutePath,
        middleware: [],
        handler: route.handler as Route.HandlerName,
        createdAt: new Date(NOW),
        ...(withSplit ? { split } : {}),
        revision: i + 1
      }, true)
    )
  )

const sent = requests(1223, "github")
const headerSets = sent.map((_, i) => ({ "x-user-id": `user-${i * 7919}`, accept: "application/json" }))

let sink = 0
const run = (table: RouteTable.Table<Route.StoredRoute>, choose: boolean): number => {
  const start = process.hrtime.bigint()
  let n = 0
  for (let round = 0; round < 400; round++) {
    for (let i = 0; i < sent.length; i++) {
      const request = sent[i]!
      const found = RouteTable.lookup(table, request.method, request.path)
      if (found._tag !== "Found") throw new Error(`no route for ${request.method} ${request.path}`)
      if (choose) {
        const headers = headerSets[i]!
        const choice = Splits.choiceOf(found.route, (name) => headers[name as keyof typeof headers], request.path)
        sink += choice === undefined ? 1 : choice.handler.length
      }
      n++
    }
  }
  return Number(process.hrtime.bigint() - start) / n
}

const plain = tableOf(false)
const splitting = tableOf(true)
const median = (xs: Array<number>) => xs.sort((a, b) => a - b)[Math.floor(xs.length / 2)]!
const samples = { lookup: [] as Array<number>, noSplit: [] as Array<number>, split: [] as Array<number> }
for (let i = 0; i < 9; i++) {
  samples.lookup.push(run(plain, false))
  samples.noSplit.push(run(plain, true))
  samples.split.push(run(splitting, true))
}
const lookup = median(samples.lookup)
console.log(`GitHub routes, ${sent.length} requests x 400, median of 9 runs (ns per request):`)
console.log(`  lookup alone                 ${lookup.toFixed(0)}`)
console.log(
  `  lookup + choice, no split    ${median(samples.noSplit).toFixed(0)}  (+${
    (median(samples.noSplit) - lookup).toFixed(0)
  })`
)
console.log(
  `  lookup + choice, split       ${median(samples.split).toFixed(0)}  (+${
    (median(samples.split) - lookup).toFixed(0)
  })`
)

const counts: Record<string, number> = { canary: 0, other: 0, main: 0 }
const route = { id: Route.makeRouteId(NOW), handler: "main", split: split as Split.Split }
for (let i = 0; i < 100_000; i++) counts[Split.choose(route, `user-${i}`).handler]! += 1
console.log("Split accuracy over 100,000 keys (user-0 … user-99999):")
for (const [handler, weight] of [["canary", 10], ["other", 5], ["main", 85]] as const) {
  const share = counts[handler]! / 1000
  console.log(`  ${handler.padEnd(7)} weight ${weight}%  got ${share.toFixed(2)}%  (${(share - weight).toFixed(2)} pp)`)
}
if (sink === 0) console.log("")
