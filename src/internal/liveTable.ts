/**
 * Keeping a process's route table equal to its store: the table is loaded page by page, then every change made
 * through the store is applied to it before the change is acknowledged.
 *
 * @internal
 */
import type { Context } from "effect"
import { Effect, Exit } from "effect"
import type * as Route from "../Route.js"
import * as RouteRepository from "../RouteRepository.js"
import { flatMapNow } from "./fold.js"

/** What the table offers to be kept current. */
export interface Target {
  readonly get: (id: string) => Route.StoredRoute | undefined
  readonly insert: (route: Route.StoredRoute) => void
  readonly remove: (id: string) => void
}

const PAGE_SIZE = 1000

// How long the id of a removed route is remembered. Concurrent changes of one route can complete in another order
// than they were made (an update acknowledged after the delete that followed it); ids are never reused, so a route
// seen removed is never brought back by a late answer. A minute is far longer than any such race.
const TOMBSTONE_MILLIS = 60_000

type Store = Context.Tag.Service<RouteRepository.RouteRepository>

/**
 * Loads every route of `store` into `target`, and returns the store with each change also applied to `target`, at
 * once when the store answers at once (no fiber), and in every case before the change's Effect completes.
 */
export const make = (store: Store, target: Target): Effect.Effect<Store, RouteRepository.StoreUnavailable> => {
  const removed = new Map<string, number>()

  // The newest revision wins: a late, older version of a route never replaces a newer one.
  const upsert = (route: Route.StoredRoute): void => {
    if (removed.has(route.id)) return
    const known = target.get(route.id)
    if (known === undefined || known.revision < route.revision) target.insert(route)
  }

  const drop = (id: string): void => {
    target.remove(id)
    const now = Date.now()
    removed.set(id, now)
    for (const [old, at] of removed) {
      if (now - at < TOMBSTONE_MILLIS) break
      removed.delete(old)
    }
  }

  const load = (after: string | undefined): Effect.Effect<void, RouteRepository.StoreUnavailable> =>
    Effect.flatMap(store.list({ limit: PAGE_SIZE, after }), (page) => {
      page.items.forEach(upsert)
      return page.hasMore ? load(page.items[page.items.length - 1]!.id) : Effect.void
    })

  const applied = <E>(effect: Effect.Effect<Route.StoredRoute, E>) =>
    flatMapNow(effect, (route) => {
      upsert(route)
      return Exit.succeed(route)
    })

  return Effect.as(
    load(undefined),
    RouteRepository.RouteRepository.of({
      ...store,
      create: (input) => applied(store.create(input)),
      update: (id, patch, precondition) => applied(store.update(id, patch, precondition)),
      remove: (id, precondition) =>
        flatMapNow(store.remove(id, precondition), () => {
          drop(id)
          return Exit.void
        })
    })
  )
}
