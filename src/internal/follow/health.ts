/**
 * How current a follower's table is: confirmed by every byte of a live stream, as current as the process it follows
 * says it is; a stream that stays healthy ends what a protocol error or an outage began; an outage is logged when it
 * starts and when it ends, not at every try. The table's status (`RouteTable.TableStatus`) is read from here.
 *
 * @internal
 */
import { Effect } from "effect"
import type { Status } from "../table/liveTable.js"
import type * as Client from "./client.js"
import { now, type Outage, type State, unsafeLog } from "./state.js"

/**
 * How long a stream must stay live (past `ready`, no loss) to count as healthy: only then does the backoff start again
 * from its first wait, a protocol error stop holding the table's confirmation back, and an outage end in the log.
 */
export const HEALTHY_MILLIS = 10_000

/** Whether the table is current now: its stream live and not silent too long, and the process it follows current. */
const isCurrent = (state: State, at: number): boolean =>
  state.live && !state.broken && state.upstreamConfirmedAt === undefined &&
  at - state.lastByteAt <= state.settings.target.idleMillis

/** A byte arrived: while the stream is live, the table is as current as the process it follows says it is. */
export const confirm = (state: State, at: number): void => {
  state.lastByteAt = at
  if (state.live && !state.broken) state.confirmed.at = state.upstreamConfirmedAt ?? at
}

/** Whether the stream of this connection has stayed live long enough to count as healthy. */
export const isHealthy = (state: State, at: number): boolean =>
  state.live && state.liveSince !== undefined && at - state.liveSince >= HEALTHY_MILLIS

/** A stream that stayed healthy ends what a protocol error or an outage began. */
export const settle = (state: State, at: number): void => {
  if (!isHealthy(state, at)) return
  if (state.broken) {
    state.broken = false
    state.confirmed.at = state.upstreamConfirmedAt ?? state.lastByteAt
  }
  const outage = state.outage
  if (outage === undefined) return
  state.outage = undefined
  unsafeLog(state, repeated(outage))
}

// The count of the losses an outage did not log, if any.
const repeated = (outage: Outage): Effect.Effect<void> =>
  outage.repeats > 0
    ? Effect.logInfo(`route table: the change stream had been lost ${outage.repeats} more time(s) (${outage.reason})`)
    : Effect.void

/**
 * The table's status. A follower whose stream is live, not silent past `idleMillis`, and whose registry says it is
 * current is current itself: staleness 0 however long ago the last heartbeat was. Otherwise the staleness is the time
 * since it last was, which a relay's heartbeats carry back to the time the relay itself last was.
 */
export const status = (state: State): Status => {
  const at = now(state)
  settle(state, at)
  const current = isCurrent(state, at)
  // A bootstrap file was never confirmed by any registry: how old it is, nobody knows (past any bound; JSON: null).
  if (state.source === "bootstrap") {
    return {
      following: "stream",
      source: "bootstrap",
      reachable: false,
      confirmedAt: null,
      stalenessMillis: Infinity,
      error: state.confirmed.error
    }
  }
  return {
    following: "stream",
    source: state.source,
    reachable: current,
    confirmedAt: new Date(current ? at : state.confirmed.at),
    stalenessMillis: current ? 0 : Math.max(0, at - state.confirmed.at),
    error: state.confirmed.error
  }
}

/**
 * An outage is logged when it starts and when it ends (at `ready`), not at every try; the same loss again before a
 * stream stayed healthy is counted, and the count logged once it has.
 */
export const logLoss = (state: State, lost: Client.Lost): Effect.Effect<void> => {
  const outage = state.outage
  if (outage !== undefined && outage.reason === lost.reason) {
    outage.repeats++
    return Effect.void
  }
  const before = outage === undefined ? Effect.void : repeated(outage)
  if (outage === undefined) state.outage = { since: state.lastByteAt, reason: lost.reason, repeats: 0, back: false }
  else Object.assign(outage, { reason: lost.reason, repeats: 0, back: false })
  return Effect.zipRight(
    before,
    Effect.logWarning(
      `route table: lost the registry's change stream (${lost.reason}); routing on with the table confirmed current ` +
        `at ${status(state).confirmedAt?.toISOString() ?? "never (a bootstrap file)"}, reconnecting`
    )
  )
}
