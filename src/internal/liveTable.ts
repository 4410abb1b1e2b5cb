/**
 * Keeping a process's route table equal to its store: the table is loaded page by page, every change made through
 * the store is applied to it before the change is acknowledged, and, when the store is shared with other processes
 * (it offers a change feed), their changes are read from the feed and applied as they commit.
 *
 * @internal
 */
import type { Context } from "effect"
import { Cause, Duration, Effect, Either, Exit, Queue } from "effect"
import type * as Route from "../Route.js"
import * as RouteRepository from "../RouteRepository.js"
import type { Status } from "../RouteTable.js"
import { flatMapNow } from "./now.js"

/** What the table offers to be kept current. */
export interface Target {
  readonly get: (id: string) => Route.StoredRoute | undefined
  readonly insert: (route: Route.StoredRoute) => void
  readonly remove: (id: string) => void
  readonly ids: () => Iterable<string>
  /** Told of each route new to the table that came from the change feed (telemetry's propagation lag). */
  readonly arrived?: ((route: Route.StoredRoute) => void) | undefined
}

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
  readonly status: () => Status
  /** Follows the other processes' changes until interrupted; `undefined` for a store no other process changes. */
  readonly follow: Effect.Effect<never> | undefined
}

const PAGE_SIZE = 1000

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

/**
 * Loads every route of `store` into `target`, and returns the store with each change also applied to `target`, at
 * once when the store answers at once (no fiber), and in every case before the change's Effect completes. With a
 * change feed, the table is current as of the feed's cursor when this completes.
 */
export const make = (store: Store, target: Target): Effect.Effect<Live, RouteRepository.StoreUnavailable> =>
  Effect.gen(function*() {
    const removed = new Map<string, number>()
    // While a reload runs: the ids it loaded and those this process changed meanwhile, which it must not take for gone.
    let touched: Set<string> | undefined

    // The newest revision wins: a late, older version of a route never replaces a newer one. A stored row the table
    // cannot hold (written by other means than this library, such as an operator's SQL, or under older rules, such as
    // a path of more than 64 segments) is left out, its older version with it, and named in what this returns: it
    // must not hold up the load, the changes after it, or the answer to a change that did commit.
    const upsert = (route: Route.StoredRoute): string | undefined => {
      if (removed.has(route.id)) return undefined
      touched?.add(route.id)
      const known = target.get(route.id)
      if (known !== undefined && known.revision >= route.revision) return undefined
      try {
        target.insert(route)
        return undefined
      } catch (error) {
        target.remove(route.id)
        return `${route.id} (${route.method} ${route.path}): ${String(error)}`
      }
    }

    const drop = (id: string): void => {
      target.remove(id)
      touched?.add(id)
      const now = Date.now()
      removed.delete(id)
      removed.set(id, now)
      for (const [old, at] of removed) {
        if (now - at < TOMBSTONE_MILLIS) break
        removed.delete(old)
      }
    }

    // Upserts each route, telling `arrived` of each new to the table; returns the rows refused.
    const upsertAll = (
      routes: ReadonlyArray<Route.StoredRoute>,
      arrived?: (route: Route.StoredRoute) => void
    ): Array<string> => {
      const refused: Array<string> = []
      for (const route of routes) {
        const arriving = arrived !== undefined && target.get(route.id) === undefined
        const problem = upsert(route)
        if (problem !== undefined) refused.push(problem)
        else if (arriving && target.get(route.id) !== undefined) arrived(route)
      }
      return refused
    }

    const load = (after: string | undefined): Effect.Effect<void, RouteRepository.StoreUnavailable> =>
      Effect.flatMap(store.list({ limit: PAGE_SIZE, after }), (page) => {
        const refused = upsertAll(page.items)
        const next = page.hasMore ? load(page.items[page.items.length - 1]!.id) : Effect.void
        return refused.length === 0 ? next : Effect.zipRight(skipped(refused), next)
      })

    const feed = store.changes
    const confirmed: Confirmed = { at: Date.now(), reachable: true, error: undefined }

    // Every route again, from a new cursor; routes the store no longer has leave the table.
    const reload = (changes: RouteRepository.ChangeFeed) =>
      Effect.gen(function*() {
        const cursor = yield* changes.cursor
        const kept = new Set<string>()
        touched = kept
        yield* Effect.ensuring(
          load(undefined),
          Effect.sync(() => {
            touched = undefined
          })
        )
        for (const id of Array.from(target.ids())) if (!kept.has(id)) drop(id)
        return cursor
      })

    // Applies changes read from the feed or heard from it; returns the rows it refused.
    const apply = (upserted: ReadonlyArray<Route.StoredRoute>, removed: ReadonlyArray<string>): Array<string> => {
      for (const id of removed) drop(id)
      return upsertAll(upserted, target.arrived)
    }

    let cursor: string | undefined
    const poll = (changes: RouteRepository.ChangeFeed): Effect.Effect<void, RouteRepository.StoreUnavailable> =>
      Effect.gen(function*() {
        const askedAt = Date.now()
        const read = yield* changes.since(cursor!)
        if (!read.complete) {
          cursor = yield* reload(changes)
          return yield* poll(changes)
        }
        const refused = apply(read.upserted, read.removed)
        cursor = read.cursor
        // The snapshot the read saw was taken after it was asked for: the table is current as of then.
        confirmed.at = askedAt
        if (refused.length > 0) yield* skipped(refused)
      })

    if (feed === undefined) {
      yield* load(undefined)
    } else {
      cursor = yield* feed.cursor
      yield* load(undefined)
      yield* poll(feed) // what changed while the pages were read
    }

    // The change committed, so it is answered as such even when the table cannot hold the route.
    const applied = <E>(effect: Effect.Effect<Route.StoredRoute, E>) =>
      flatMapNow(effect, (route) => {
        const refused = upsert(route)
        return refused === undefined ? Exit.succeed(route) : Effect.as(skipped([refused]), route)
      })

    const createIdempotent = store.createIdempotent
    const live: Store = RouteRepository.RouteRepository.of({
      ...store,
      create: (input) => applied(store.create(input)),
      // A replay gives the first answer again, which may name a route since changed or removed: only a new route goes
      // into the table.
      ...(createIdempotent === undefined ? {} : {
        createIdempotent: (input, idempotency) =>
          flatMapNow(createIdempotent(input, idempotency), (remembered) => {
            const refused = !remembered.replayed && Either.isRight(remembered.outcome)
              ? upsert(remembered.outcome.right)
              : undefined
            return refused === undefined ? Exit.succeed(remembered) : Effect.as(skipped([refused]), remembered)
          })
      }),
      update: (id, patch, precondition) => applied(store.update(id, patch, precondition)),
      remove: (id, precondition) =>
        flatMapNow(store.remove(id, precondition), () => {
          drop(id)
          return Exit.void
        })
    })

    const status = (): Status => {
      if (feed === undefined) {
        return { following: "local", reachable: true, confirmedAt: new Date(), stalenessMillis: 0, error: undefined }
      }
      return {
        following: feed.listen === undefined ? "polling" : "notifications",
        reachable: confirmed.reachable,
        confirmedAt: new Date(confirmed.at),
        stalenessMillis: Math.max(0, Date.now() - confirmed.at),
        error: confirmed.error
      }
    }

    return { store: live, status, follow: feed === undefined ? undefined : follow(feed, poll, apply, confirmed) }
  })

/**
 * Applies the changes the feed hears of at once, reads the feed whenever it wakes the table, and every poll interval
 * in any case. A failed read leaves the table as
 * it was (it keeps routing) and is tried again at the next interval; the outage is logged once, and its end too.
 */
const follow = (
  feed: RouteRepository.ChangeFeed,
  poll: (feed: RouteRepository.ChangeFeed) => Effect.Effect<void, RouteRepository.StoreUnavailable>,
  apply: RouteRepository.ChangeListener["apply"],
  confirmed: Confirmed
): Effect.Effect<never> =>
  Effect.scoped(Effect.gen(function*() {
    const woken = yield* Queue.sliding<void>(1)
    if (feed.listen !== undefined) {
      yield* Effect.forkScoped(feed.listen({ apply, wake: () => Queue.unsafeOffer(woken, undefined) }))
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
        Effect.zipRight(Effect.matchCauseEffect(poll(feed), { onFailure: failed, onSuccess: () => recovered })),
        Effect.zipRight(Effect.sleep(POLL_GAP_MILLIS))
      )
    )
  }))
