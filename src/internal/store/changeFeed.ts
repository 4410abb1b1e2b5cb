/**
 * The change feed of the route store contract (`RouteRepository`), which re-exports it: how a store that several
 * processes share tells each of them what the others changed. Only such a store offers one, so the contract's module
 * keeps the service and the types every store meets.
 *
 * @internal
 */
import type { Duration, Effect } from "effect"
import type * as Route from "../../Route.js"
import type { StoreUnavailable } from "./errors.js"

/**
 * What changed in a store after a cursor (see `ChangeFeed`).
 *
 * @since 0.2.0
 */
export interface Changes {
  /** The position these changes bring a reader to: the cursor of the next read. */
  readonly cursor: string
  /** Routes created or updated since the cursor read, each as it is now (its newest revision). */
  readonly upserted: ReadonlyArray<Route.StoredRoute>
  /** Ids of the routes removed since the cursor read. Ids are never reused, so a removed route stays removed. */
  readonly removed: ReadonlyArray<string>
  /**
   * `false` when the store no longer holds the whole history since the cursor (it was pruned while the reader was
   * away): the reader must load every route again from a new cursor. `upserted` and `removed` are then empty.
   */
  readonly complete: boolean
}

/**
 * How a store shared by several processes tells each of them what the others changed. A reader takes a `cursor`,
 * loads every route, then reads `since` that cursor again and again: each read gives exactly the changes committed
 * after the previous one, whatever order their transactions started in, and the reader ends equal to the store.
 *
 * @since 0.2.0
 */
export interface ChangeFeed {
  /** A position at the store's present: every change committed after it is in the next `since`. */
  readonly cursor: Effect.Effect<string, StoreUnavailable>
  /** The changes committed after `cursor`, and the cursor to read from next. */
  readonly since: (cursor: string) => Effect.Effect<Changes, StoreUnavailable>
  /** How often a reader reads `since` when nothing wakes it. */
  readonly pollInterval: Duration.Duration
  /**
   * Present when the store can tell of a commit as it happens: runs until interrupted, giving `listener` the changes
   * other processes announce once they committed them, and calling `listener.wake` when it heard of a change it
   * cannot give, and once whenever it starts hearing again (what was said in between is lost). Hints only: the
   * reader still reads `since` every poll interval, which is what makes it complete.
   */
  readonly listen?: ((listener: ChangeListener) => Effect.Effect<never>) | undefined
}

/**
 * What a `ChangeFeed` tells of as it hears of it.
 *
 * @since 0.2.0
 */
export interface ChangeListener {
  /** Routes as a committed change left them (a reader keeps the newest revision), and ids of removed routes. */
  readonly apply: (upserted: ReadonlyArray<Route.StoredRoute>, removed: ReadonlyArray<string>) => void
  /** Something changed: read `since` now. */
  readonly wake: () => void
}
