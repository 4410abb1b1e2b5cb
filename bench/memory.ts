/**
 * Heap per stored route, measured in a process of its own: `node --expose-gc --import tsx bench/memory.ts STORE N`
 * stores N routes and prints `{"store","count","bytesPerRoute"}` as JSON. STORE is
 * - `library`: the library's memory store (`RouteRepository.layerMemory`), through its `create`;
 * - `map`: a plain `Map` from id to a record with the same six values (`createdAt` a `Date`, as the library keeps);
 * - `peers`: the peers' two `Map`s (by id, and id by method and shape), records with `createdAt` as text.
 * Every store gets the same inputs: a path string and a middleware array of its own per route.
 */
import { Effect } from "effect"
import * as Route from "route-registry/Route"
import * as RouteRepository from "route-registry/RouteRepository"
import { memoryStore, newRecord } from "./peers/shared.js"

const gc = (globalThis as { gc?: () => void }).gc
if (gc === undefined) throw new Error("run with node --expose-gc")

const [store = "library", countArg = "200000"] = process.argv.slice(2)
const count = Number(countArg)

const input = (i: number): Route.CreateRoute => ({
  method: "GET" as Route.HttpMethod,
  path: `/memory/${i}/:id` as Route.RoutePath,
  middleware: ["auth", "log"] as Array<Route.MiddlewareName>,
  handler: "MemoryController#show" as Route.HandlerName
})

const fill = (): unknown => {
  switch (store) {
    case "library": {
      const repository = Effect.runSync(RouteRepository.makeMemory)
      for (let i = 0; i < count; i++) Effect.runSync(repository.create(input(i)))
      return repository
    }
    case "map": {
      const byId = new Map<string, unknown>()
      for (let i = 0; i < count; i++) {
        const { handler, method, middleware, path } = input(i)
        const now = Date.now()
        const id = Route.makeRouteId(now)
        byId.set(id, { id, method, path, middleware, handler, createdAt: new Date(now) })
      }
      return byId
    }
    case "peers": {
      const peers = memoryStore(newRecord)
      for (let i = 0; i < count; i++) peers.create(input(i))
      return peers
    }
  }
  throw new Error(`unknown store ${store}: use library, map or peers`)
}

const settle = () => {
  for (let i = 0; i < 3; i++) gc()
  return process.memoryUsage().heapUsed
}

// Warm the code paths (and their one-time allocations) before the baseline reading.
fill()
const before = settle()
const kept = fill()
const after = settle()
// Read after the measurement, so the store is certainly alive during it.
if (kept === undefined) throw new Error("nothing was stored")
console.log(JSON.stringify({ store, count, bytesPerRoute: (after - before) / count }))
