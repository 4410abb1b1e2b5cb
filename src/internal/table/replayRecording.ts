/**
 * How a process's replay ring follows its store (replayRing.ts): with a change log, by reading the log
 * after the ring's revision, so it takes every change in revision order with the revision of each; without one,
 * by numbering the changes the table takes.
 *
 * @internal
 */
import type { Context } from "effect"
import { Duration, Effect, Queue, Schedule } from "effect"
import * as Route from "../../Route.js"
import type * as RouteRepository from "../../RouteRepository.js"
import { newStoreId, optionalOf } from "../store/rules.js"
import type * as ReplayRing from "./replayRing.js"
import type * as RouteTree from "./routeTree.js"

type Store = Context.Tag.Service<RouteRepository.RouteRepository>

/** How many routes one read of the store takes, when the table loads and when the ring begins. */
export const PAGE_SIZE = 1000

/**
 * How the table tells its ring what it took. With a change log (`logAfter`), the ring reads the log after its
 * revision instead: it takes every change in revision order, with the revision of each (a removal's included), which
 * the table's own feed does not give, and in the order other processes commit them, which their notifications do not.
 */
export interface Recorder {
  readonly upserted: (route: Route.StoredRoute) => void
  readonly deleted: (id: string) => void
  /** Run after this process's own change, before it is acknowledged. */
  readonly settled: Effect.Effect<void>
}

// How many log entries one read of the log takes.
const LOG_PAGE = 1000

// How long the ring waits before reading the log again after a read failed (the table reports the outage).
const LOG_RETRY_MILLIS = 1000

/** The route as of a log entry: the entry's own when a store logged the stored route itself (the memory store does). */
export const storedAt = (after: Route.Route, revision: number): Route.StoredRoute => {
  if (after instanceof Route.StoredRoute && after.revision === revision) return after
  const { createdAt, handler, id, method, middleware, path } = after
  return new Route.StoredRoute(
    { id, method, path, middleware, handler, createdAt, ...optionalOf(after), revision },
    true
  )
}

const recordEntry = (ring: ReplayRing.ReplayRing, entry: RouteRepository.HistoryEntry): void => {
  const after = entry.after
  const batch = entry.batch === undefined
    ? undefined
    : { id: entry.batch, end: entry.batchEnd ?? entry.revision, description: entry.batchDescription }
  if (after === null) return ring.deleted(entry.routeId, entry.revision, batch)
  ring.upserted(storedAt(after, entry.revision), entry.revision, undefined, batch)
}

type LogAfter = Context.Tag.Service<RouteRepository.ChangeLog>["logAfter"]

// Every route of the store, page by page.
const allRoutes = (
  store: Store,
  after: string | undefined,
  into: Array<Route.StoredRoute>
): Effect.Effect<Array<Route.StoredRoute>, RouteRepository.StoreUnavailable> =>
  Effect.flatMap(store.list({ limit: PAGE_SIZE, after }), (page) => {
    into.push(...page.items)
    return page.hasMore ? allRoutes(store, page.items[page.items.length - 1]!.id, into) : Effect.succeed(into)
  })

/**
 * Reads the log after the ring's revision until it holds the newest. When the log no longer holds those changes
 * (the ring fell behind by more than the log keeps), the ring never began (the store could not be read when
 * the table was built), or it began from another store's routes (a snapshot of another database), the ring begins:
 * the newest revision, then every route, then the log after that revision
 * (each page read after the revision holds at least the changes up to it).
 */
export const catchUp = (
  store: Store,
  log: LogAfter,
  ring: ReplayRing.ReplayRing
): Effect.Effect<void, RouteRepository.StoreUnavailable> =>
  Effect.flatMap(
    Effect.suspend(() => log(ring.revision(), LOG_PAGE)),
    (read): Effect.Effect<void, RouteRepository.StoreUnavailable> => {
      if (!read.complete || ring.store() !== read.store) {
        return Effect.flatMap(allRoutes(store, undefined, []), (routes) => {
          ring.begin(read.store, read.revision, routes)
          return catchUp(store, log, ring)
        })
      }
      for (const entry of read.entries) recordEntry(ring, entry)
      if (read.entries.length === LOG_PAGE) return catchUp(store, log, ring)
      ring.advanced(read.revision)
      return Effect.void
    }
  )

/**
 * Reads the log after `revision` of `store` up to its newest, page by page, giving each page's entries to `take` in
 * revision order; `false` when it does not reach back to `revision`: pruned past it, another store's, or older than
 * it (a database restored from an earlier backup). Once a page was taken, a failed read is tried again until it
 * succeeds (the store answered a moment ago), so nothing taken is taken again.
 */
export const replay = (
  log: LogAfter,
  store: string,
  revision: number,
  take: (entries: ReadonlyArray<RouteRepository.HistoryEntry>) => void
): Effect.Effect<boolean, RouteRepository.StoreUnavailable> => {
  const after = (at: number, retried: boolean): Effect.Effect<boolean, RouteRepository.StoreUnavailable> =>
    Effect.flatMap(
      retried
        ? Effect.orDie(Effect.retry(log(at, LOG_PAGE), Schedule.spaced(Duration.millis(LOG_RETRY_MILLIS))))
        : log(at, LOG_PAGE),
      (read) => {
        if (!read.complete || read.store !== store || read.revision < at) return Effect.succeed(false)
        take(read.entries)
        return read.entries.length < LOG_PAGE
          ? Effect.succeed(true)
          : after(read.entries[read.entries.length - 1]!.revision, true)
      }
    )
  return after(revision, false)
}

export interface Recording {
  readonly recorder: Recorder
  readonly run: Effect.Effect<never> | undefined
}

// The ring of a store with a log: after each change of this process, the log is read before the change is
// acknowledged; a shared store's other changes are read by a fiber, woken by whatever the table takes.
export const logRecording = (
  store: Store,
  log: LogAfter,
  ring: ReplayRing.ReplayRing,
  shared: boolean
): Effect.Effect<Recording> =>
  Effect.map(Queue.sliding<void>(1), (woken) => {
    const read = catchUp(store, log, ring)
    if (!shared) {
      return { recorder: { upserted: () => {}, deleted: () => {}, settled: Effect.ignore(read) }, run: undefined }
    }
    const wake = () => {
      Queue.unsafeOffer(woken, undefined)
    }
    wake() // what the first read left to read
    // A change this process made is in the ring before it is acknowledged, as it is in the table: a stream opened
    // after it starts from it. A failed read is left to the fiber, which retries.
    return {
      recorder: { upserted: wake, deleted: wake, settled: Effect.catchAll(read, () => Effect.sync(wake)) },
      run: Effect.forever(
        Effect.zipRight(
          Queue.take(woken),
          Effect.orDie(Effect.retry(read, Schedule.spaced(Duration.millis(LOG_RETRY_MILLIS)))) // retried for ever
        )
      )
    }
  })

// A store without a log: the ring numbers the table's changes itself, under an identity of its own (its cursors
// are good at this process only, until it stops).
export const localRecording = (ring: ReplayRing.ReplayRing, tree: RouteTree.Tree<Route.StoredRoute>): Recording => {
  ring.begin(newStoreId(), 0, Array.from(tree.byId.values(), (entry) => entry.route))
  return {
    recorder: {
      upserted: (route) => ring.upserted(route, ring.revision() + 1),
      deleted: (id) => ring.deleted(id, ring.revision() + 1),
      settled: Effect.void
    },
    run: undefined
  }
}
