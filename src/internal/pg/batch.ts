/**
 * Gathering concurrent calls into one batch: the calls made in one turn of the event loop run as one statement, so
 * fifty clients creating at once share a round trip and a commit instead of queueing for fifty.
 *
 * Hand-written rather than @effect/sql's `SqlResolver`, which batches through Effect's `RequestResolver`: that
 * gathers the requests of one fiber's batched composition only, and fifty HTTP requests are fifty fibers. Measured
 * (`node --import tsx bench/batching.ts`): fifty callers in fibers of their own run a resolver 50 times, here once.
 *
 * @internal
 */
import { Effect, Exit, Runtime } from "effect"

interface Waiting<I, A, E> {
  readonly input: I
  readonly resume: (exit: Exit.Exit<A, E>) => void
}

/**
 * A function whose calls are batched: each waits for the turn of the event loop to end, then every call made in it
 * is answered by one run of `run`, which gives an answer per input, in order. When the run itself fails, every call
 * of the batch fails with that cause.
 */
export const make = <I, A, E, E2>(
  run: (inputs: ReadonlyArray<I>) => Effect.Effect<ReadonlyArray<Exit.Exit<A, E>>, E2>
): (input: I) => Effect.Effect<A, E | E2> => {
  let pending: Array<Waiting<I, A, E | E2>> | undefined
  const flush = (runtime: Runtime.Runtime<never>) => {
    const batch = pending!
    pending = undefined
    Runtime.runFork(runtime)(run(batch.map((waiting) => waiting.input))).addObserver((exit) => {
      if (exit._tag === "Success") batch.forEach((waiting, i) => waiting.resume(exit.value[i]!))
      else for (const waiting of batch) waiting.resume(Exit.failCause(exit.cause))
    })
  }
  return (input) =>
    Effect.flatMap(Effect.runtime<never>(), (runtime) =>
      Effect.async<A, E | E2>((resume) => {
        const waiting: Waiting<I, A, E | E2> = { input, resume: (exit) => resume(exit) }
        if (pending !== undefined) return void pending.push(waiting)
        pending = [waiting]
        setImmediate(flush, runtime)
      }))
}
