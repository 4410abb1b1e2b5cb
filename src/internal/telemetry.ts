/**
 * What the telemetry of every layer shares: whether it is on (`Telemetry`, which `Telemetry.layer` provides), and how
 * a measure is recorded. Each layer's own measures live beside what they measure: the store's operations
 * (`store/telemetry.ts`), the route table's gauges (`table/telemetry.ts`), the routing API's requests
 * (`http/telemetry.ts`).
 *
 * @internal
 */
import type { Clock, Duration, Exit } from "effect"
import { Context, Effect, MetricBoundaries, MetricLabel } from "effect"

/** How telemetry is on. */
export interface Config {
  /** How often the route table's gauges are set. */
  readonly tableSampleInterval: Duration.Duration
}

/** Whether telemetry is on, and how: `undefined` (the default) is off. */
export class Telemetry extends Context.Reference<Telemetry>()("route-registry/Telemetry", {
  defaultValue: (): Config | undefined => undefined
}) {}

/** From 10 µs (an answer from memory) to about 42 s, doubling. */
export const LATENCY_MILLIS = MetricBoundaries.exponential({ start: 0.01, factor: 2, count: 23 })

// A metric finds its series at once when given the same array of labels again (it remembers them by identity), and
// builds a key to look it up otherwise: one array per combination of values, kept for the life of the process. The
// values come from short fixed lists (operations, statuses, error tags).
const series = new Map<string, ReadonlyArray<MetricLabel.MetricLabel>>()

/** The labels of `pairs` (name, value, name, value, …), the same array for the same values. */
export const labels = (...pairs: ReadonlyArray<string>): ReadonlyArray<MetricLabel.MetricLabel> => {
  const id = pairs.join("\n")
  const known = series.get(id)
  if (known !== undefined) return known
  const made: Array<MetricLabel.MetricLabel> = []
  for (let i = 0; i < pairs.length; i += 2) made.push(MetricLabel.make(pairs[i]!, pairs[i + 1]!))
  series.set(id, made)
  return made
}

const elapsedMillis = (clock: Clock.Clock, start: bigint): number =>
  Number(clock.unsafeCurrentTimeNanos() - start) / 1_000_000

/** Runs `effect`, then `done` with its exit and how long it took on Effect's `Clock`, inside the current span. */
export const timed = <A, E>(
  effect: Effect.Effect<A, E>,
  done: (exit: Exit.Exit<A, E>, millis: number) => Effect.Effect<void>
): Effect.Effect<A, E> =>
  Effect.clockWith((clock) => {
    const start = clock.unsafeCurrentTimeNanos()
    return Effect.onExit(effect, (exit) => done(exit, elapsedMillis(clock, start)))
  })

/**
 * The spans capture no stack trace: it would point into the library, never at the host's code, and it took a third
 * of the time of a traced request (measured).
 */
export const NO_STACK = { captureStackTrace: false } as const
