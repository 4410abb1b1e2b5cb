/**
 * The timers of open change streams (`changeStream.ts`): one heartbeat for every open stream of a core, and each
 * stream's end when its credential expires, both on the core's `Clock` (the TestClock under a test).
 *
 * @internal
 */
import { Effect, type Fiber, FiberId, Runtime, Schedule } from "effect"
import * as Alarms from "../alarms.js"
import * as Heartbeat from "../follow/heartbeat.js"
import { MAX_TIMER_MILLIS } from "../optionChecks.js"
import type { Status } from "../table/liveTable.js"

/** One open stream, as its core's timer and its shutdown see it. */
export interface Open {
  readonly beat: (text: string) => void
  readonly cut: () => void
}

/**
 * The open streams of one core, each sent a heartbeat every interval by one fiber on the core's `Clock` (`runtime`'s),
 * running while any is open. A heartbeat is a comment line that keeps idle connections from timing out and says
 * whether this process's table is current (`status`, the table's; `heartbeat.ts`).
 */
export interface Heartbeats {
  readonly runtime: Runtime.Runtime<never>
  readonly intervalMillis: number
  readonly status: (() => Status) | undefined
  readonly streams: Set<Open>
  beating: Fiber.RuntimeFiber<never> | undefined
}

export const heartbeats = (
  runtime: Runtime.Runtime<never>,
  intervalMillis: number,
  status?: () => Status
): Heartbeats => ({ runtime, intervalMillis, status, streams: new Set(), beating: undefined })

const beat = (heartbeats: Heartbeats) => {
  const text = Heartbeat.of(heartbeats.status?.())
  for (const stream of heartbeats.streams) stream.beat(text)
}

export const join = (heartbeats: Heartbeats, stream: Open) => {
  heartbeats.streams.add(stream)
  if (heartbeats.beating === undefined) {
    heartbeats.beating = Runtime.runFork(heartbeats.runtime)(
      Effect.schedule(Effect.sync(() => beat(heartbeats)), Schedule.fixed(heartbeats.intervalMillis)).pipe(
        Effect.zipRight(Effect.never)
      )
    )
  }
}

export const leave = (heartbeats: Heartbeats, stream: Open) => {
  heartbeats.streams.delete(stream)
  if (heartbeats.streams.size === 0 && heartbeats.beating !== undefined) {
    heartbeats.beating.unsafeInterruptAsFork(FiberId.none)
    heartbeats.beating = undefined
  }
}

/**
 * Calls `expire` once `expiresAt` has passed on `runtime`'s clock (checked again on each wake, so a clock moved
 * meanwhile counts, and an expiry further off than one wait is waited for in steps); returns the cancel. No expiry:
 * nothing.
 */
export const onExpiry = (
  runtime: Runtime.Runtime<never>,
  expiresAt: Date | undefined,
  expire: () => void
): () => void => {
  if (expiresAt === undefined) return () => {}
  const clock = Alarms.clockOf(runtime)
  let cancel = () => {}
  const check = () => {
    const left = expiresAt.getTime() - clock.unsafeCurrentTimeMillis()
    if (left <= 0) return expire()
    cancel = Alarms.after(runtime, Math.min(Math.ceil(left), MAX_TIMER_MILLIS), check)
  }
  check()
  return () => cancel()
}
