/**
 * The Postgres store's writes and reads, called directly (no HTTP): `npm run bench:store [-- --seconds S] [--rounds N]`.
 *
 * One process, the compiled library in dist/ (run `npm run build` first), a pool of 10 connections on the database in
 * DATABASE_URL (default: the local one), a table of its own. Each operation runs for S seconds (default 3), one call
 * at a time ("1") and from 50 callers at once ("50"): creates (concurrent ones share statements), updates of the
 * handler (each a real change), deletes of routes created beforehand, and gets by id. Each round runs every
 * operation once; the median of the rounds (default 3) is reported, in operations per second. What a write costs
 * comes from here: every write is a transaction of its own, committed only within the store's deadline.
 */
import { Effect } from "effect"
import type * as Route from "route-registry/Route"
import { median, pgStore, routeInput as input, type Store } from "./pg-store.js"
import { printTable } from "./print.js"

const argv = process.argv.slice(2)
const option = (name: string, fallback: number) => {
  const i = argv.indexOf(name)
  const value = i === -1 ? fallback : Number(argv[i + 1])
  if (!(value > 0)) throw new Error(`${name} needs a positive number`)
  return value
}
const SECONDS = option("--seconds", 3)
const ROUNDS = option("--rounds", 3)
const table = `rr_bench_store_${process.pid}`

/** Calls `operation` from `callers` loops at once for SECONDS; the calls completed per second. */
const rate = (callers: number, operation: () => Effect.Effect<unknown, unknown>) =>
  Effect.gen(function*() {
    let done = 0
    const end = Date.now() + SECONDS * 1000
    yield* Effect.all(
      Array.from({ length: callers }, () =>
        Effect.whileLoop({
          while: () => Date.now() < end,
          body: () => Effect.orDie(operation()),
          step: () => {
            done++
          }
        })),
      { concurrency: "unbounded", discard: true }
    )
    return done / SECONDS
  })

/** Routes for the updates and deletes to work on: created up front, many at once. */
const stock = (store: Store, count: number) =>
  Effect.forEach(
    Array.from({ length: count }),
    () => Effect.flatMap(input(), (route) => Effect.orDie(store.create(route))),
    { concurrency: 50 }
  )

const operations = (store: Store) => {
  let flip = 0
  return {
    create: () => Effect.flatMap(input(), store.create),
    // Each update changes the handler, so each is a write.
    patch: (routes: ReadonlyArray<Route.StoredRoute>) => () =>
      store.update(routes[flip++ % routes.length]!.id, { handler: `h${flip}` as Route.HandlerName }),
    remove: (routes: Array<Route.StoredRoute>) => () => store.remove(routes.pop()!.id),
    get: (routes: ReadonlyArray<Route.StoredRoute>) => () => store.findById(routes[flip++ % routes.length]!.id)
  }
}

const round = (store: Store) =>
  Effect.gen(function*() {
    const ops = operations(store)
    const results: Record<string, number> = {}
    for (const callers of [1, 50]) {
      results[`create ${callers}`] = yield* rate(callers, ops.create)
      const patched = yield* stock(store, 200)
      results[`patch ${callers}`] = yield* rate(callers, ops.patch(patched))
      results[`get ${callers}`] = yield* rate(callers, ops.get(patched))
      // More routes than the deletes can take in the time (at most 10,000 a second).
      const doomed = yield* stock(store, Math.ceil(SECONDS * 10_000))
      results[`delete ${callers}`] = yield* rate(callers, ops.remove(doomed))
    }
    return results
  })

const program = Effect.gen(function*() {
  const store = yield* pgStore(table)
  const rounds: Array<Record<string, number>> = []
  for (let i = 0; i < ROUNDS; i++) {
    console.error(`round ${i + 1} of ${ROUNDS}…`)
    rounds.push(yield* round(store))
  }
  const rows = Object.keys(rounds[0]!).map((name) => ({
    operation: name,
    median: `${median(rounds.map((r) => r[name]!)).toFixed(0)}/s`,
    rounds: rounds.map((r) => r[name]!.toFixed(0)).join(", ")
  }))
  console.log(`\nThe Postgres store, called directly (${SECONDS} s per operation, ${ROUNDS} rounds)`)
  printTable([
    ["operation", "operation (callers)", "left"],
    ["median", "median", "right"],
    ["rounds", "rounds", "left"]
  ], rows)
})

await Effect.runPromise(Effect.scoped(program))
