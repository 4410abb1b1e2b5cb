/**
 * What a deadline costs a Postgres write, by how it is waited for: `npm run bench:timers [-- --writes N] [--rounds R]`.
 *
 * Each write is an `Effect.async` answered a turn of the event loop later (as a group's answer comes), run with
 * `inFlight` others at once (1: a lone caller; 50: a loaded server), under a deadline that never passes (it is
 * cancelled when the write is answered, as almost every deadline is), waited for:
 * - `none`: no deadline, the floor;
 * - `node timer`: a Node `setTimeout`, cleared on the answer (what the store's deadlines and a grouped write's wait use);
 * - `alarms`: the library's shared deadline fiber on Effect's `Clock` (internal/alarms.ts, what the HTTP body and
 *   stream deadlines use);
 * - `Effect.timeoutFail`: a fiber per deadline (`Effect.sleep` raced against the write).
 * The figure is the process's CPU time per write (user + system), median of the rounds, minus nothing: the rows differ
 * by the deadline's cost alone.
 */
import { Effect, Runtime } from "effect"
import * as Alarms from "../src/internal/alarms.js"

const argv = process.argv.slice(2)
const option = (name: string, fallback: number) => {
  const i = argv.indexOf(name)
  return i === -1 ? fallback : Number(argv[i + 1])
}
const WRITES = option("--writes", 20_000)
const ROUNDS = option("--rounds", 5)
const MILLIS = 5_000

// A statement's answer: a turn of the event loop later.
const answer = Effect.async<number>((resume) => {
  setImmediate(() => resume(Effect.succeed(1)))
})

type Deadline = (runtime: Runtime.Runtime<never>) => Effect.Effect<number, string>

const kinds: ReadonlyArray<readonly [string, Deadline]> = [
  ["none", () => answer],
  ["node timer", () =>
    Effect.async<number, string>((resume) => {
      const timer = setTimeout(() => resume(Effect.fail("timed out")), MILLIS)
      setImmediate(() => {
        clearTimeout(timer)
        resume(Effect.succeed(1))
      })
    })],
  ["alarms", (runtime) =>
    Effect.async<number, string>((resume) => {
      const cancel = Alarms.after(runtime, MILLIS, () => resume(Effect.fail("timed out")))
      setImmediate(() => {
        cancel()
        resume(Effect.succeed(1))
      })
    })],
  ["Effect.timeoutFail", () => Effect.timeoutFail(answer, { duration: MILLIS, onTimeout: () => "timed out" })]
]

const measure = (deadline: Deadline, inFlight: number) =>
  Effect.gen(function*() {
    const runtime = yield* Effect.runtime<never>()
    const write = deadline(runtime)
    const before = process.cpuUsage()
    yield* Effect.forEach(Array.from({ length: inFlight }), () =>
      Effect.repeatN(write, Math.ceil(WRITES / inFlight) - 1), { concurrency: "unbounded", discard: true })
    const used = process.cpuUsage(before)
    return (used.user + used.system) / (Math.ceil(WRITES / inFlight) * inFlight)
  })

const median = (values: ReadonlyArray<number>) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!

const main = Effect.gen(function*() {
  console.log(`CPU µs per write under a deadline, ${WRITES} writes a round, median of ${ROUNDS} rounds`)
  console.log("| deadline | 1 in flight | 50 in flight |")
  console.log("|---|---:|---:|")
  const results = new Map<string, Array<Array<number>>>(kinds.map(([name]) => [name, [[], []]]))
  for (let round = 0; round <= ROUNDS; round++) {
    // The order rotates; round 0 warms up and is not counted.
    for (const [name, deadline] of [...kinds.slice(round % kinds.length), ...kinds.slice(0, round % kinds.length)]) {
      for (const [i, inFlight] of [1, 50].entries()) {
        const us = yield* measure(deadline, inFlight)
        if (round > 0) results.get(name)![i]!.push(us)
      }
    }
  }
  for (const [name, [one, fifty]] of results) {
    console.log(`| ${name} | ${median(one!).toFixed(2)} | ${median(fifty!).toFixed(2)} |`)
  }
})

Effect.runPromise(main)
