/**
 * Change sets against single creates on Postgres, called directly (no HTTP):
 * `npm run bench:batch [-- --rounds N] [--singles N] [--size N]`.
 *
 * One process, the compiled library in dist/, the database in DATABASE_URL (default: the local one). Each round
 * (default 5) builds the store on a fresh table and measures (a) `create`, one at a time, SINGLES times (default 200,
 * each timed), (b) one `applyBatch` of SIZE creates (default 1,000), and (c) SIZE `create`s one after another; (b) and
 * (c) take turns going first. Reported: the median of every (a), the medians of the rounds' (b) and (c), the ratio
 * (b)/(a) (docs/batches.md; the target is at most 10×) and (c)/(b), and the load average before and after.
 */
import { Effect } from "effect"
import { loadavg } from "node:os"
import { median, pgStore, routeInput, type Store } from "./pg-store.js"
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

const batch = (store: Store) =>
  Effect.gen(function*() {
    const applyBatch = store.applyBatch
    if (applyBatch === undefined) return yield* Effect.dieMessage("the Postgres store offers no applyBatch")
    const routes = yield* Effect.forEach(Array.from({ length: SIZE }), () => routeInput())
    // The inputs are decoded before the clock starts: (b) measures the store, as (a) and (c) do.
    return yield* timed(applyBatch(routes.map((route) => ({ op: "create" as const, route }))))
  })

const round = (index: number) =>
  Effect.scoped(Effect.gen(function*() {
    const store = yield* pgStore(`rr_bench_batch_${process.pid}_${index}`, 2)
    // Warms the connections and the statements.
    yield* Effect.repeatN(single(store), 9)
    const singles: Array<number> = []
    for (let i = 0; i < SINGLES; i++) singles.push(yield* timed(single(store)))
    const sequence = timed(Effect.repeatN(single(store), SIZE - 1))
    const [batched, sequential] = index % 2 === 0
      ? yield* Effect.all([batch(store), sequence])
      : yield* Effect.map(Effect.all([sequence, batch(store)]), ([s, b]) => [b, s] as const)
    return { singles, batched, sequential }
  }))

const program = Effect.gen(function*() {
  const loadBefore = loadavg()
  const rounds: Array<{ singles: Array<number>; batched: number; sequential: number }> = []
  for (let i = 0; i < ROUNDS; i++) {
    console.error(`round ${i + 1} of ${ROUNDS}…`)
    rounds.push(yield* round(i))
  }
  const loadAfter = loadavg()
  const a = median(rounds.flatMap((r) => r.singles))
  const b = median(rounds.map((r) => r.batched))
  const c = median(rounds.map((r) => r.sequential))
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
    }
  ])
  console.log(`\n(b)/(a) = ${(b / a).toFixed(1)}× (target ≤ 10×); (c)/(b) = ${(c / b).toFixed(1)}×`)
  const load = (l: ReadonlyArray<number>) => l.map((x) => x.toFixed(2)).join(", ")
  console.log(`load average (1, 5, 15 min): ${load(loadBefore)} before, ${load(loadAfter)} after`)
})

await Effect.runPromise(program)
