/**
 * Keeping a process's route table equal to its store: the table is loaded page by page, every change made through
 * the store is applied to it before the change is acknowledged, and, when the store is shared with other processes
 * (it offers a change feed), their changes are read from the feed and applied as they commit.
 *
 * @internal
 */
import type { Clock, Context } from "effect"
import { Cause, Duration, Effect, Queue } from "effect"
import * as Route from "../../Route.js"
import * as RouteRepository from "../../RouteRepository.js"
import type { Capabilities } from "../store/capabilities.js"
import * as OwnWrites from "./ownWrites.js"
import * as Recording from "./replayRecording.js"
import type * as ReplayRing from "./replayRing.js"
import * as RouteTree from "./routeTree.js"
import type { Status } from "./status.js"

export type { Source, Status } from "./status.js"

type Store = Context.Tag.Service<RouteRepository.RouteRepository>

/** When the table was last confirmed equal to the store, and whether the last try to confirm it failed. */
interface Confirmed {
  at: number
  reachable: boolean
  error: string | undefined
}

export interface Live {
  /** The store, with each change also applied to the table. */
  readonly store: Store
  /**
   * What the store offers beside it, its changes also applied to the table (idempotent creates, restores, change
   * sets); its reads as they are. The change feed is the table's to follow: it is not offered on.
   */
  readonly offered: Capabilities
  readonly status: () => Status
  /** Follows the other processes' changes until interrupted; `undefined` for a store no other process changes. */
  readonly follow: Effect.Effect<never> | undefined
  /** Keeps the replay ring current with the store's log until interrupted; `undefined` when it needs no fiber. */
  readonly record: Effect.Effect<never> | undefined
}

// How many refused rows one log line names; the rest are counted.
const SKIPPED_NAMED = 10

// Logs the stored rows the table refused, each with why.
const skipped = (refused: ReadonlyArray<string>): Effect.Effect<void> =>
  Effect.logError(
    `route table: ${refused.length} stored row(s) that are not routes were skipped: ${
      refused.slice(0, SKIPPED_NAMED).join("; ")
    }${refused.length > SKIPPED_NAMED ? `; and ${refused.length - SKIPPED_NAMED} more` : ""}`
  )

// The least time between two reads of the feed. Under a stream of changes every process is woken for each, and
// reading once per change would cost the database a read per change per process; waiting this long after a read
// lets the next one take every change woken meanwhile, for at most this much latency (bench/propagation.ts).
const POLL_GAP_MILLIS = 5

// How long the id of a removed route is remembered. Concurrent changes of one route can complete in another order
// than they were made (an update acknowledged after the delete that followed it); ids are never reused, so a route
// seen removed is never brought back by a late answer. A minute is far longer than any such race.
const TOMBSTONE_MILLIS = 60_000

/** The state of one live table: its store, its tree, and how far it has followed the store. */
interface State {
  /** The clock of the fiber that made the table: what tombstones and the status are timed by. */
  readonly clock: Clock.Clock
  readonly store: Store
  /** The store's change feed, when other processes change it too. */
  readonly feed: RouteRepository.ChangeFeed | undefined
  /** What the store offers beside it. */
  readonly offered: Capabilities
  readonly tree: RouteTree.Tree<Route.StoredRoute>
  /** Told of each route new to the table that came from the change feed (telemetry's propagation lag). */
  readonly arrived: ((route: Route.StoredRoute) => void) | undefined
  /** Told of every change the table takes once it is loaded (the load itself is the ring's first routes). */
  recorder: Recording.Recorder | undefined
  /** Ids of removed routes, oldest first, with when they were removed (see TOMBSTONE_MILLIS). */
  readonly removed: Map<string, number>
  /** While a reload runs: the ids it loaded and those this process changed meanwhile, which it must not take for gone. */
  touched: Set<string> | undefined
  /** Where the next read of the change feed starts. */
  cursor: string | undefined
  readonly confirmed: Confirmed
}

// The newest revision wins: a late, older version of a route never replaces a newer one. A stored row the table
// cannot hold (written by other means than this library, such as an operator's SQL, or under older rules, such as a
// path of more than 64 segments) is left out, its older version with it, and named in what this returns: it must not
// hold up the load, the changes after it, or the answer to a change that did commit.
const upsert = (state: State, route: Route.StoredRoute): string | undefined => {
  if (state.removed.has(route.id)) return undefined
  state.touched?.add(route.id)
  const known = RouteTree.get(state.tree, route.id)
  if (known !== undefined && known.revision >= route.revision) return undefined
  try {
    RouteTree.insert(state.tree, route)
    state.recorder?.upserted(route)
    return undefined
  } catch (error) {
    // Its older version leaves the table with it: for the ring, a removal.
    RouteTree.remove(state.tree, route.id)
    if (known !== undefined) state.recorder?.deleted(route.id)
    return `${route.id} (${route.method} ${route.path}): ${String(error)}`
  }
}

const drop = (state: State, id: string): void => {
  if (RouteTree.get(state.tree, id) !== undefined) {
    RouteTree.remove(state.tree, id)
    state.recorder?.deleted(id)
  }
  state.touched?.add(id)
  const removed = state.removed
  const now = state.clock.unsafeCurrentTimeMillis()
  removed.delete(id)
  removed.set(id, now)
  for (const [old, at] of removed) {
    if (now - at < TOMBSTONE_MILLIS) break
    removed.delete(old)
  }
}

// Upserts each route, telling `arrived` of each new to the table; returns the rows refused.
const upsertAll = (
  state: State,
  routes: ReadonlyArray<Route.StoredRoute>,
  arrived?: (route: Route.StoredRoute) => void
): Array<string> => {
  const refused: Array<string> = []
  for (const route of routes) {
    const arriving = arrived !== undefined && RouteTree.get(state.tree, route.id) === undefined
    const problem = upsert(state, route)
    if (problem !== undefined) refused.push(problem)
    else if (arriving && RouteTree.get(state.tree, route.id) !== undefined) arrived(route)
  }
  return refused
}

const load = (state: State, after: string | undefined): Effect.Effect<void, RouteRepository.StoreUnavailable> =>
  Effect.flatMap(state.store.list({ limit: Recording.PAGE_SIZE, after }), (page) => {
    const refused = upsertAll(state, page.items)
    const next = page.hasMore ? load(state, page.items[page.items.length - 1]!.id) : Effect.void
    return refused.length === 0 ? next : Effect.zipRight(skipped(refused), next)
  })

// Every route again, from a new cursor; routes the store no longer has leave the table.
const reload = (state: State, changes: RouteRepository.ChangeFeed) =>
  Effect.gen(function*() {
    const cursor = yield* changes.cursor
    const kept = new Set<string>()
    state.touched = kept
    yield* Effect.ensuring(
      load(state, undefined),
      Effect.sync(() => {
        state.touched = undefined
      })
    )
    for (const id of Array.from(RouteTree.ids(state.tree))) if (!kept.has(id)) drop(state, id)
    return cursor
  })

// Applies changes read from the feed or heard from it; returns the rows it refused.
const apply = (
  state: State,
  upserted: ReadonlyArray<Route.StoredRoute>,
  removed: ReadonlyArray<string>
): Array<string> => {
  for (const id of removed) drop(state, id)
  return upsertAll(state, upserted, state.arrived)
}

const poll = (
  state: State,
  changes: RouteRepository.ChangeFeed
): Effect.Effect<void, RouteRepository.StoreUnavailable> =>
  Effect.gen(function*() {
    const askedAt = state.clock.unsafeCurrentTimeMillis()
    const read = yield* changes.since(state.cursor!)
    if (!read.complete) {
      state.cursor = yield* reload(state, changes)
      return yield* poll(state, changes)
    }
    const refused = apply(state, read.upserted, read.removed)
    state.cursor = read.cursor
    // The snapshot the read saw was taken after it was asked for: the table is current as of then.
    state.confirmed.at = askedAt
    if (refused.length > 0) yield* skipped(refused)
  })

// What a change made through this process does to the table.
const takerOf = (state: State): OwnWrites.Taker => ({
  upsert: (route) => upsert(state, route),
  drop: (id) => drop(state, id),
  settled: (refused) => {
    const recorded = state.recorder?.settled ?? Effect.void
    return refused.length === 0 ? recorded : Effect.zipRight(skipped(refused), recorded)
  }
})

const statusOf = (state: State): Status => {
  const feed = state.feed
  if (feed === undefined) {
    const now = new Date(state.clock.unsafeCurrentTimeMillis())
    return {
      following: "local",
      source: "database",
      reachable: true,
      confirmedAt: now,
      stalenessMillis: 0,
      error: undefined
    }
  }
  const confirmed = state.confirmed
  return {
    following: feed.listen === undefined ? "polling" : "notifications",
    source: "database",
    reachable: confirmed.reachable,
    confirmedAt: new Date(confirmed.at),
    stalenessMillis: Math.max(0, state.clock.unsafeCurrentTimeMillis() - confirmed.at),
    error: confirmed.error
  }
}

/**
 * Loads every route of `store` into `tree`, and returns the store with each change also applied to `tree`. With a
 * change feed, the table is current as of the feed's cursor when this completes. `ring` begins with the table as
 * loaded and then follows the store's log in revision order (a store without a log: every change the table takes,
 * numbered in the order it is applied).
 */
export const make = (
  store: Store,
  offered: Capabilities,
  tree: RouteTree.Tree<Route.StoredRoute>,
  ring: ReplayRing.ReplayRing,
  arrived?: (route: Route.StoredRoute) => void
): Effect.Effect<Live, RouteRepository.StoreUnavailable> =>
  Effect.gen(function*() {
    const log = offered.changeLog?.logAfter
    const feed = offered.feed
    // The newest revision before the load: the table as loaded holds every change up to it, and some after it, which
    // the ring then reads again from the log.
    const first = log === undefined ? undefined : yield* Effect.either(log(0, 0))
    const state = stateOf(yield* Effect.clock, store, offered, tree, arrived)
    if (feed === undefined) {
      yield* load(state, undefined)
    } else {
      state.cursor = yield* feed.cursor
      yield* load(state, undefined)
      yield* poll(state, feed) // what changed while the pages were read
    }
    // A first read that failed leaves the ring to begin once the log can be read (its fiber tries at once).
    const recording = log === undefined || first === undefined
      ? Recording.localRecording(ring, tree)
      : yield* Effect.gen(function*() {
        if (first._tag === "Right") {
          ring.begin(first.right.store, first.right.revision, Array.from(tree.byId.values(), (entry) => entry.route))
          yield* Effect.ignore(Recording.catchUp(store, log, ring))
        }
        return yield* Recording.logRecording(store, log, ring, feed !== undefined)
      })
    return liveOf(state, recording)
  })

/**
 * The live table over `store` on `tree`, which holds `ring`'s routes as of its revision (a snapshot's), brought
 * up to date through the store's log: each change since is applied to `tree` in revision order, and recorded in
 * `ring` as a change, so its streams hear changes, never a reset. `undefined` when the log does not reach back to
 * that revision (`Recording.replay`): the caller loads the table whole instead (`make`, into a tree of its own).
 */
export const resume = (
  store: Store,
  offered: Capabilities,
  tree: RouteTree.Tree<Route.StoredRoute>,
  ring: ReplayRing.ReplayRing,
  arrived?: (route: Route.StoredRoute) => void
): Effect.Effect<Live | undefined, RouteRepository.StoreUnavailable> =>
  Effect.gen(function*() {
    const log = offered.changeLog?.logAfter
    const feed = offered.feed
    const from = ring.store()
    if (log === undefined || from === undefined) return undefined
    const state = stateOf(yield* Effect.clock, store, offered, tree, arrived)
    // Taken first: what the log's reads do not see yet, the feed gives from this cursor on.
    if (feed !== undefined) state.cursor = yield* feed.cursor
    const refused: Array<string> = []
    const reached = yield* Recording.replay(log, from, ring.revision(), (entries) => {
      for (const entry of entries) {
        if (entry.after === null) {
          drop(state, entry.routeId)
          continue
        }
        const problem = upsert(state, Recording.storedAt(entry.after, entry.revision))
        if (problem !== undefined) refused.push(problem)
      }
    })
    if (refused.length > 0) yield* skipped(refused)
    if (!reached) return undefined
    yield* Effect.ignore(Recording.catchUp(store, log, ring))
    return liveOf(state, yield* Recording.logRecording(store, log, ring, feed !== undefined))
  })

const stateOf = (
  clock: Clock.Clock,
  store: Store,
  offered: Capabilities,
  tree: RouteTree.Tree<Route.StoredRoute>,
  arrived: ((route: Route.StoredRoute) => void) | undefined
): State => ({
  clock,
  store,
  feed: offered.feed,
  offered,
  tree,
  arrived,
  recorder: undefined,
  removed: new Map(),
  touched: undefined,
  cursor: undefined,
  confirmed: { at: clock.unsafeCurrentTimeMillis(), reachable: true, error: undefined }
})

// The table from here on: every change it takes is told to `recording`.
const liveOf = (state: State, recording: Recording.Recording): Live => {
  state.recorder = recording.recorder
  const { feed, offered } = state
  const { batches, idempotent, restorable } = offered
  const taker = takerOf(state)
  return {
    store: OwnWrites.store(taker, state.store),
    offered: {
      ...offered,
      feed: undefined,
      idempotent: idempotent && OwnWrites.idempotent(taker, idempotent),
      restorable: restorable && OwnWrites.restorable(taker, restorable),
      batches: batches && OwnWrites.batches(taker, batches)
    },
    status: () => statusOf(state),
    follow: feed === undefined ? undefined : follow(state, feed),
    record: recording.run
  }
}

/**
 * Applies the changes the feed hears of at once, reads the feed whenever it wakes the table, and every poll interval
 * in any case. A failed read leaves the table as
 * it was (it keeps routing) and is tried again at the next interval; the outage is logged once, and its end too.
 */
const follow = (state: State, feed: RouteRepository.ChangeFeed): Effect.Effect<never> =>
  Effect.scoped(Effect.gen(function*() {
    const confirmed = state.confirmed
    const woken = yield* Queue.sliding<void>(1)
    if (feed.listen !== undefined) {
      yield* Effect.forkScoped(
        feed.listen({
          apply: (upserted, removed) => apply(state, upserted, removed),
          wake: () => Queue.unsafeOffer(woken, undefined)
        })
      )
    }
    const interval = Duration.toMillis(feed.pollInterval)
    const failed = (cause: Cause.Cause<RouteRepository.StoreUnavailable>) =>
      Effect.suspend(() => {
        const reason = Cause.squash(cause)
        const error = reason instanceof RouteRepository.StoreUnavailable ? reason.reason : String(reason)
        const first = confirmed.reachable
        confirmed.reachable = false
        confirmed.error = error
        return first
          ? Effect.logWarning(
            `route table: cannot read the store's changes (${error}); routing on with the table confirmed current at ${
              new Date(confirmed.at).toISOString()
            }`
          )
          : Effect.void
      })
    // The confirmation before the outage: `poll` has moved `confirmed.at` by the time `recovered` runs.
    let before = confirmed.at
    const recovered = Effect.suspend(() => {
      if (confirmed.reachable) {
        before = confirmed.at
        return Effect.void
      }
      const away = confirmed.at - before
      confirmed.reachable = true
      confirmed.error = undefined
      return Effect.logInfo(`route table: current again, after ${Duration.format(Duration.millis(away))}`)
    })
    return yield* Effect.forever(
      Queue.take(woken).pipe(
        Effect.timeoutOption(interval),
        Effect.zipRight(Effect.matchCauseEffect(poll(state, feed), { onFailure: failed, onSuccess: () => recovered })),
        Effect.zipRight(Effect.sleep(POLL_GAP_MILLIS))
      )
    )
  }))
