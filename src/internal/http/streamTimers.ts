/**
 * The timers of open change streams (`changeStream.ts`): one heartbeat timer for every open stream of a core, and each
 * stream's end when its credential expires.
 *
 * @internal
 */
import * as Heartbeat from "../follow/heartbeat.js"
import { MAX_TIMER_MILLIS } from "../optionChecks.js"
import type { Status } from "../table/liveTable.js"

/** One open stream, as its core's timer and its shutdown see it. */
export interface Open {
  readonly beat: (text: string) => void
  readonly cut: () => void
}

/**
 * The open streams of one core, each sent a heartbeat every interval by one timer, running while any is open. A
 * heartbeat is a comment line that keeps idle connections from timing out and says whether this process's table is
 * current (`status`, the table's; `heartbeat.ts`).
 */
export interface Heartbeats {
  readonly intervalMillis: number
  readonly status: (() => Status) | undefined
  readonly streams: Set<Open>
  timer: ReturnType<typeof setInterval> | undefined
}

export const heartbeats = (intervalMillis: number, status?: () => Status): Heartbeats => ({
  intervalMillis,
  status,
  streams: new Set(),
  timer: undefined
})

const beat = (heartbeats: Heartbeats) => {
  const text = Heartbeat.of(heartbeats.status?.())
  for (const stream of heartbeats.streams) stream.beat(text)
}

export const join = (heartbeats: Heartbeats, stream: Open) => {
  heartbeats.streams.add(stream)
  if (heartbeats.timer === undefined) {
    heartbeats.timer = setInterval(beat, heartbeats.intervalMillis, heartbeats)
    // Open streams never keep a process alive on their own: its server does.
    heartbeats.timer.unref?.()
  }
}

export const leave = (heartbeats: Heartbeats, stream: Open) => {
  heartbeats.streams.delete(stream)
  if (heartbeats.streams.size === 0 && heartbeats.timer !== undefined) {
    clearInterval(heartbeats.timer)
    heartbeats.timer = undefined
  }
}

/**
 * Calls `expire` once `expiresAt` has passed (checked again on each wake, so a clock moved meanwhile counts, and an
 * expiry further off than a timer waits is waited for in steps); returns the cancel. No expiry: nothing.
 */
export const onExpiry = (expiresAt: Date | undefined, expire: () => void): () => void => {
  if (expiresAt === undefined) return () => {}
  let timer: ReturnType<typeof setTimeout> | undefined
  const check = () => {
    const left = expiresAt.getTime() - Date.now()
    if (left <= 0) return expire()
    timer = setTimeout(check, Math.min(left, MAX_TIMER_MILLIS))
    timer.unref?.()
  }
  check()
  return () => clearTimeout(timer)
}
