/**
 * Change sets against single creates on Postgres, called directly (no HTTP):
 * `npm run bench:batch [-- --rounds N] [--singles N] [--size N]`.
 *
 * One process, the compiled library in dist/, the database in DATABASE_URL (default: the local one). Each round
 * (default 5) builds the store on a fresh table and measures (a) `create`, one at a time, SINGLES times (default 200,
 * each timed), (b) one `applyBatch` of SIZE creates (default 1,000), and (c) SIZE `create`s one after another; (b) and
 * (c) take turns going first. Then the floor, what the database alone takes for the same writes: (d) one create's rows
 * as one hand-written statement in a transaction of its own (the counter locked, the route and its log entry
 * inserted, the counter advanced), SINGLES times, and (e) SIZE creates' rows the same way in one statement, with no
 * parameters, no reads and nothing of the library. Reported: the medians of every (a) and (d), the medians of the
 * rounds' (b), (c) and (e), the ratios (b)/(a) (docs/batches.md; the target is at most 10×), (c)/(b), (e)/(d) (the
 * database's own ratio, which no change set can beat) and (b)/(e), and the load average before and after.
 */
import * as PgClient from "@effect/sql-pg/PgClient"
import * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import { Context, Effect, Layer, Redacted } from "effect"
import { loadavg } from "node:os"
import * as RouteRepository from "route-registry/RouteRepository"
import { DATABASE_URL, median, pgContext, routeInput, type Store } from "./pg-store.js"
import { printTable } from "./print.js"

const argv = process.argv.slice(2)
const option = (name: string, fallback: number) => {
  const i = argv.indexOf(name)
  const value = i === -1 ? fallback : Number(argv[i + 1])
  if (!(value > 0)) throw new Error(`${name} needs a positive number`)
  return value
}
const ROUNDS = option("--rounds", 5)
const SINGLES = option("--singles", 200)
const SIZE = option("--size", 1_000)

/** Milliseconds `effect` took. */
const timed = <A, E>(effect: Effect.Effect<A, E>) =>
  Effect.gen(function*() {
    const started = performance.now()
    yield* Effect.orDie(effect)
    return performance.now() - started
  })

const single = (store: Store) => Effect.flatMap(routeInput(), store.create)

const batch = ({ applyBatch }: Context.Tag.Service<RouteRepository.Batches>) =>
  Effect.gen(function*() {
    const routes = yield* Effect.forEach(Array.from({ length: SIZE }), () => routeInput())
    // The inputs are decoded before the clock starts: (b) measures the store, as (a) and (c) do.
    return yield* timed(applyBatch(routes.map((route) => ({ op: "create" as const, route }))))
  })

// A client of its own for the floor's statements (the store's pool stays the store's).
const rawClient = Effect.map(
  Layer.build(PgClient.layer({ url: Redacted.make(DATABASE_URL), maxConnections: 1 })),
  (context) => Context.get(context, SqlClient.SqlClient)
)

/**
 * `count` creates' rows written as the store writes them, by one statement in a transaction of its own: the counter
 * locked, the routes inserted (every index and trigger of the table), their log entries, the counter advanced.
 */
const rawCreates = (sql: SqlClient.SqlClient, table: string, count: number): Effect.Effect<unknown, SqlError> =>
  sql.withTransaction(sql<never>`
    WITH held AS MATERIALIZED (SELECT revision FROM ${sql(`${table}_revision`)} FOR UPDATE),
    inserted AS (
      INSERT INTO ${sql(table)} (id, method, path, path_shape, middleware, handler, created_at, revision)
      SELECT u, 'GET', '/floor/' || u || '/:id', '/floor/' || u || '/:', '{auth}', 'h', now(),
        (SELECT revision FROM held) + g
      FROM (SELECT gen_random_uuid() AS u, g FROM generate_series(1, ${count}::int) AS g) AS x
      RETURNING *),
    logged AS (
      INSERT INTO ${sql(`${table}_history`)} (revision, at, actor, action, route_id, before, after)
      SELECT revision, now(), NULL, 'create', id, NULL, jsonb_build_object('id', id, 'method', method, 'path', path,
        'middleware', middleware, 'handler', handler, 'createdAt', created_at)
      FROM inserted)
    UPDATE ${sql(`${table}_revision`)} SET revision = (SELECT revision FROM held) + ${count}::int`)

const round = (index: number) =>
  Effect.scoped(Effect.gen(function*() {
    const table = `rr_bench_batch_${process.pid}_${index}`
    const context = yield* pgContext(table, 2)
    const store = Context.get(context, RouteRepository.RouteRepository)
    const batches = Context.get(context, RouteRepository.Batches)
    const sql = yield* rawClient
    // Warms the connections and the statements.
    yield* Effect.repeatN(single(store), 9)
    yield* Effect.orDie(Effect.repeatN(rawCreates(sql, table, 1), 9))
    const singles: Array<number> = []
    const rawSingles: Array<number> = []
    // Taking turns, so that a change of load meets both alike.
    for (let i = 0; i < SINGLES; i++) {
      singles.push(yield* timed(single(store)))
      rawSingles.push(yield* timed(rawCreates(sql, table, 1)))
    }
    const sequence = timed(Effect.repeatN(single(store), SIZE - 1))
    const [batched, sequential] = index % 2 === 0
      ? yield* Effect.all([batch(batches), sequence])
      : yield* Effect.map(Effect.all([sequence, batch(batches)]), ([s, b]) => [b, s] as const)
    const rawBatch = yield* timed(rawCreates(sql, table, SIZE))
    return { singles, batched, sequential, rawSingles, rawBatch }
  }))

const program = Effect.gen(function*() {
  const loadBefore = loadavg()
  const rounds: Array<Effect.Effect.Success<ReturnType<typeof round>>> = []
  for (let i = 0; i < ROUNDS; i++) {
    console.error(`round ${i + 1} of ${ROUNDS}…`)
    rounds.push(yield* round(i))
  }
  const loadAfter = loadavg()
  const a = median(rounds.flatMap((r) => r.singles))
  const b = median(rounds.map((r) => r.batched))
  const c = median(rounds.map((r) => r.sequential))
  const d = median(rounds.flatMap((r) => r.rawSingles))
  const e = median(rounds.map((r) => r.rawBatch))
  const ms = (value: number) => value.toFixed(value < 10 ? 2 : 0)
  console.log(`\nChange sets on Postgres (${ROUNDS} rounds, a fresh table each; ${SINGLES} single creates a round)`)
  printTable([
    ["what", "what", "left"],
    ["median", "median ms", "right"],
    ["rounds", "rounds (ms)", "left"]
  ], [
    { what: "(a) one create", median: ms(a), rounds: rounds.map((r) => ms(median(r.singles))).join(", ") },
    {
      what: `(b) one change set of ${SIZE.toLocaleString("en-US")} creates`,
      median: ms(b),
      rounds: rounds.map((r) => ms(r.batched)).join(", ")
    },
    {
      what: `(c) ${SIZE.toLocaleString("en-US")} creates one after another`,
      median: ms(c),
      rounds: rounds.map((r) => ms(r.sequential)).join(", ")
    },
    {
      what: "(d) floor: one create's rows, SQL alone",
      median: ms(d),
      rounds: rounds.map((r) => ms(median(r.rawSingles))).join(", ")
    },
    {
      what: `(e) floor: ${SIZE.toLocaleString("en-US")} creates' rows, SQL alone`,
      median: ms(e),
      rounds: rounds.map((r) => ms(r.rawBatch)).join(", ")
    }
  ])
  console.log(`\n(b)/(a) = ${(b / a).toFixed(1)}× (target ≤ 10×); (c)/(b) = ${(c / b).toFixed(1)}×`)
  console.log(`(e)/(d) = ${(e / d).toFixed(1)}× (the database's floor); (b)/(e) = ${(b / e).toFixed(2)}×`)
  const load = (l: ReadonlyArray<number>) => l.map((x) => x.toFixed(2)).join(", ")
  console.log(`load average (1, 5, 15 min): ${load(loadBefore)} before, ${load(loadAfter)} after`)
})

await Effect.runPromise(program)
