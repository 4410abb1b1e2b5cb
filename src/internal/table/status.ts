/**
 * How current a process's route table is, for a readiness check: a live table's over its store, a follower's over its
 * registry, a table started from a snapshot or a bootstrap file.
 *
 * @internal
 */

/** How current a live table is, for a readiness check (`RouteTable.Status`, which re-exports it). */
export interface Status {
  /**
   * `"local"` for a store only this process changes (the table is always current), `"notifications"` when other
   * processes' changes wake the table (and it also polls), `"polling"` when it polls alone, `"stream"` for a follower
   * of another registry's change stream (`RouteFollower.layer`).
   */
  readonly following: "local" | "notifications" | "polling" | "stream"
  /**
   * (since 0.5.0) Where the table's routes came from: `"database"` (the process's own store), `"registry"` (a
   * follower's registry), `"snapshot"` (a last-known-good snapshot, until the registry or database answers) or
   * `"bootstrap"` (a bootstrap file, until the registry answers: `confirmedAt` is then `null` and `stalenessMillis`
   * `Infinity`, past any bound). docs/resilience.md.
   */
  readonly source: Source
  /**
   * Whether the last read of the store's changes succeeded (for a follower: whether its stream is live, not silent
   * past `idleTimeout`, and the process it follows says it is current). While it fails, the table keeps routing with
   * what it has, and catches up by itself once the store answers again.
   */
  readonly reachable: boolean
  /**
   * When the table was last confirmed equal to the store. While the store is reachable this stays within the poll
   * interval (plus one read); in an outage it grows. A follower that is `reachable` is current (staleness 0, between
   * heartbeats too); otherwise its staleness is the time since it last was, a relay's as its heartbeats say
   * (docs/scaling-out.md, "Readiness and staleness").
   */
  readonly confirmedAt: Date | null
  /** How long ago `confirmedAt` is. */
  readonly stalenessMillis: number
  /** Why the last read failed, while it fails. */
  readonly error: string | undefined
}

/** Where the table's routes came from: `Status.source` documents each. */
export type Source = "registry" | "database" | "snapshot" | "bootstrap"
