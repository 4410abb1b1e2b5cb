/**
 * How a process's change history follows its store (internal/table/history.ts): with a change log, by reading the log
 * after the history's revision, so it takes every change in revision order with the revision of each; without one,
 * by numbering the changes the table takes.
 *
 * @internal
 */
import type { Context } from "effect"
import { Duration, Effect, Queue, Schedule } from "effect"
import * as Route from "../../Route.js"
import type * as RouteRepository from "../../RouteRepository.js"
import { newStoreId } from "../store/rules.js"
import type * as History from "./history.js"
import type * as RouteTree from "./routeTree.js"

type Store = Context.Tag.Service<RouteRepository.RouteRepository>

/** How many routes one read of the store takes, when the table loads and when the history begins. */
export const PAGE_SIZE = 1000

/**
 * How the table tells its history what it took. With a change log (`logAfter`), the history reads the log after its
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

// How long the history waits before reading the log again after a read failed (the table reports the outage).
const LOG_RETRY_MILLIS = 1000

// The route as of a log entry: the entry's own when a store logged the stored route itself (the memory store does).
const storedAt = (after: Route.Route, revision: number): Route.StoredRoute => {
  if (after instanceof Route.StoredRoute && after.revision === revision) return after
  const { createdAt, handler, id, method, middleware, path } = after
  return new Route.StoredRoute({ id, method, path, middleware, handler, createdAt, revision }, true)
}

const recordEntry = (history: History.History, entry: RouteRepository.HistoryEntry): void => {
  const after = entry.after
  const batch = entry.batch === undefined ? undefined : { id: entry.batch, end: entry.batchEnd ?? entry.revision }
  if (after === null) return history.deleted(entry.routeId, entry.revision, batch)
  history.upserted(storedAt(after, entry.revision), entry.revision, undefined, batch)
}

type LogAfter = NonNullable<Store["logAfter"]>

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
 * Reads the log after the history's revision until it holds the newest. When the log no longer holds those changes
 * (the history fell behind by more than the log keeps), or the history never began (the store could not be read when
 * the table was built), the history begins: the newest revision, then every route, then the log after that revision
 * (each page read after the revision holds at least the changes up to it).
 */
export const catchUp = (
  store: Store,
  log: LogAfter,
  history: History.History
): Effect.Effect<void, RouteRepository.StoreUnavailable> =>
  Effect.flatMap(
    Effect.suspend(() => log(history.revision(), LOG_PAGE)),
    (read): Effect.Effect<void, RouteRepository.StoreUnavailable> => {
      if (!read.complete || history.store() === undefined) {
        return Effect.flatMap(allRoutes(store, undefined, []), (routes) => {
          history.begin(read.store, read.revision, routes)
          return catchUp(store, log, history)
        })
      }
      for (const entry of read.entries) recordEntry(history, entry)
      if (read.entries.length === LOG_PAGE) return catchUp(store, log, history)
      history.advanced(read.revision)
      return Effect.void
    }
  )

export interface Recording {
  readonly recorder: Recorder
  readonly run: Effect.Effect<never> | undefined
}

// The history of a store with a log: after each change of this process, the log is read before the change is
// acknowledged; a shared store's other changes are read by a fiber, woken by whatever the table takes.
export const logRecording = (
  store: Store,
  log: LogAfter,
  history: History.History
): Effect.Effect<Recording> =>
  Effect.map(Queue.sliding<void>(1), (woken) => {
    const read = catchUp(store, log, history)
    if (store.changes === undefined) {
      return { recorder: { upserted: () => {}, deleted: () => {}, settled: Effect.ignore(read) }, run: undefined }
    }
    const wake = () => {
      Queue.unsafeOffer(woken, undefined)
    }
    wake() // what the first read left to read
    // A change this process made is in the history before it is acknowledged, as it is in the table: a stream opened
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

// A store without a log: the history numbers the table's changes itself, under an identity of its own (its cursors
// are good at this process only, until it stops).
export const localRecording = (history: History.History, tree: RouteTree.Tree<Route.StoredRoute>): Recording => {
  history.begin(newStoreId(), 0, Array.from(tree.byId.values(), (entry) => entry.route))
  return {
    recorder: {
      upserted: (route) => history.upserted(route, history.revision() + 1),
      deleted: (id) => history.deleted(id, history.revision() + 1),
      settled: Effect.void
    },
    run: undefined
  }
}
