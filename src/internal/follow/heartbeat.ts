/**
 * What a change stream's heartbeat says: a `:` comment line, which every SSE client ignores, and which tells a
 * follower whether the process that sends it is itself current. A process whose table is current (its store answers,
 * or, for a relay, its own stream is live and its registry current) sends `:`; one that is not sends
 * `: stale <ms>`, how long its table has not been confirmed current. A follower of a relay that lost its registry so
 * learns it within one heartbeat, and reports the relay's staleness as its own (docs/scaling-out.md, "Readiness and
 * staleness").
 *
 * @internal
 */
import type { Status } from "../table/liveTable.js"

/** The heartbeat of a current process: an empty comment. */
export const CURRENT = ":\n\n"

// The most a heartbeat says (15 digits): an unknown staleness (a table from a bootstrap file) is sent as this.
const MAX_STALE = 999_999_999_999_999

/** The heartbeat a process with `status` sends. */
export const of = (status: Status | undefined): string =>
  status === undefined || status.reachable
    ? CURRENT
    : `: stale ${Math.min(MAX_STALE, Math.max(0, Math.round(status.stalenessMillis)))}\n\n`

const STALE = /^stale (\d{1,15})$/

/**
 * How long the sender's table has not been confirmed current, from a comment's text (after the colon and its one
 * space); `undefined` for a current sender, and for any other comment (a registry that says nothing more is current).
 */
export const staleness = (text: string): number | undefined => {
  const stale = STALE.exec(text)
  return stale === null ? undefined : Number(stale[1])
}
