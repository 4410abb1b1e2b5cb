/**
 * The changes a process makes through its table's store, each in the table before it is acknowledged: the store's
 * own writes, and those of what it offers beside it (idempotent creates, restores, change sets). Dry runs change
 * nothing, so the table takes only real changes; a change that committed is answered as such even when the table
 * cannot hold its route.
 *
 * @internal
 */
import type { Context } from "effect"
import { Effect, Either } from "effect"
import type * as Route from "../../Route.js"
import * as RouteRepository from "../../RouteRepository.js"

/** What a change made here does to the live table (`LiveTable`). */
export interface Taker {
  /** Puts a committed route in the table; what it says of a row the table cannot hold, else `undefined`. */
  readonly upsert: (route: Route.StoredRoute) => string | undefined
  readonly drop: (id: string) => void
  /** Ends a change the table took: logs the rows it refused, and waits for the replay ring to record the change. */
  readonly settled: (refused: ReadonlyArray<string>) => Effect.Effect<void>
}

const applied = <E>(taker: Taker, effect: Effect.Effect<Route.StoredRoute, E>) =>
  Effect.tap(effect, (route) => {
    const refused = taker.upsert(route)
    return taker.settled(refused === undefined ? [] : [refused])
  })

/** The store, with each change also applied to the table before the change's Effect completes. */
export const store = (
  taker: Taker,
  store: Context.Tag.Service<RouteRepository.RouteRepository>
): Context.Tag.Service<RouteRepository.RouteRepository> =>
  RouteRepository.RouteRepository.of({
    findById: store.findById,
    list: store.list,
    create: (input, options) =>
      options?.dryRun === true ? store.create(input, options) : applied(taker, store.create(input, options)),
    update: (id, patch, precondition, options) =>
      options?.dryRun === true
        ? store.update(id, patch, precondition, options)
        : applied(taker, store.update(id, patch, precondition, options)),
    remove: (id, precondition, options) =>
      options?.dryRun === true
        ? store.remove(id, precondition, options)
        : Effect.tap(
          store.remove(id, precondition, options),
          () => Effect.zipRight(Effect.sync(() => taker.drop(id)), taker.settled([]))
        )
  })

/**
 * The store's idempotent creates, each new route also applied to the table. A replay gives the first answer again,
 * which may name a route since changed or removed: only a new route goes into the table.
 */
export const idempotent = (
  taker: Taker,
  { createIdempotent }: Context.Tag.Service<RouteRepository.Idempotent>
): Context.Tag.Service<RouteRepository.Idempotent> => ({
  createIdempotent: (input, idempotency, options) =>
    Effect.tap(createIdempotent(input, idempotency, options), ({ outcome, replayed }) => {
      if (replayed || Either.isLeft(outcome)) return Effect.void
      const refused = taker.upsert(outcome.right)
      return taker.settled(refused === undefined ? [] : [refused])
    })
})

/** The store's restores, each also applied to the table. */
export const restorable = (
  taker: Taker,
  { restore }: Context.Tag.Service<RouteRepository.Restorable>
): Context.Tag.Service<RouteRepository.Restorable> => ({
  restore: (id, revision, precondition, options) =>
    options?.dryRun === true
      ? restore(id, revision, precondition, options)
      : Effect.tap(restore(id, revision, precondition, options), (restored) =>
        applied(taker, Effect.succeed(restored.route)))
})

/**
 * The store's change sets, each entering the table in one step: no lookup between its changes sees part of it. A
 * replay (an idempotency key's first answer again) changed nothing, and its routes may have changed since.
 */
export const batches = (
  taker: Taker,
  { applyBatch }: Context.Tag.Service<RouteRepository.Batches>
): Context.Tag.Service<RouteRepository.Batches> => ({
  applyBatch: (operations, options) =>
    options?.dryRun === true ? applyBatch(operations, options) : Effect.tap(
      applyBatch(operations, options),
      ({ replayed, results }) => {
        if (replayed === true) return Effect.void
        const refused: Array<string> = []
        results.forEach(({ route }, i) => {
          const operation = operations[i]!
          if (operation.op === "delete") return taker.drop(operation.id)
          const problem = taker.upsert(route!)
          if (problem !== undefined) refused.push(problem)
        })
        return taker.settled(refused)
      }
    )
})
