/**
 * The stores the suites run over, each fresh whenever a server is started over it. Which suite runs over which, and
 * why the other combinations cannot differ: docs/development.md#what-runs-over-what.
 */
import { Context, Effect, Layer } from "effect"
import * as RouteRepository from "route-registry/RouteRepository"
import type { Store } from "./httpContract.js"
import * as TestDatabase from "./TestDatabase.js"

export type Named = readonly [name: string, store: Store]

export const memory: Named = ["memory store", RouteRepository.layerMemory]

export const postgres: Named = ["postgres store", TestDatabase.storeLayer().pipe(Layer.provide(TestDatabase.layer()))]

/** Runs `call` on a later turn of the event loop, as an answer from a socket comes. */
const later = <A, E>(call: () => Effect.Effect<A, E>): Effect.Effect<A, E> =>
  Effect.zipRight(
    Effect.async<void>((resume) => {
      const timer = setImmediate(() => resume(Effect.void))
      return Effect.sync(() => clearImmediate(timer))
    }),
    Effect.suspend(call)
  )

/**
 * The memory store answering every call on a later turn of the event loop, with no synchronous read: all that an
 * adapter can see of the Postgres store (its answers come later, from a socket), at the memory store's speed.
 */
export const suspendingMemory: Named = [
  "memory store answering later, as Postgres does",
  // Its read at once (`RouteRepository.MemoryRead`) is left out.
  Layer.map(RouteRepository.layerMemory, (context) => {
    const memory = Context.get(context, RouteRepository.RouteRepository)
    const { createIdempotent } = Context.get(context, RouteRepository.Idempotent)
    const { history, logAfter } = Context.get(context, RouteRepository.ChangeLog)
    const { restore } = Context.get(context, RouteRepository.Restorable)
    const { applyBatch } = Context.get(context, RouteRepository.Batches)
    return Context.make(RouteRepository.RouteRepository, {
      create: (input, options) => later(() => memory.create(input, options)),
      findById: (id) => later(() => memory.findById(id)),
      list: (query) => later(() => memory.list(query)),
      update: (id, patch, precondition, options) => later(() => memory.update(id, patch, precondition, options)),
      remove: (id, precondition, options) => later(() => memory.remove(id, precondition, options))
    }).pipe(
      Context.add(RouteRepository.Idempotent, {
        createIdempotent: (input, idempotency, options) => later(() => createIdempotent(input, idempotency, options))
      }),
      Context.add(RouteRepository.ChangeLog, {
        history: (query) => later(() => history(query)),
        logAfter: (revision, limit) => later(() => logAfter(revision, limit))
      }),
      Context.add(RouteRepository.Restorable, {
        restore: (id, revision, precondition, options) => later(() => restore(id, revision, precondition, options))
      }),
      Context.add(RouteRepository.Batches, {
        applyBatch: (operations, options) => later(() => applyBatch(operations, options))
      })
    )
  })
]

/** Both stores: for suites of the store itself, and of what sits on it whatever serves it. */
export const stores: ReadonlyArray<Named> = [memory, postgres]

/**
 * What an adapter (or integration) can tell apart of a store: whether it answers at once or later. The Postgres store
 * itself runs under the HTTP contract through one adapter (test/AdminListener.test.ts).
 */
export const adapterStores: ReadonlyArray<Named> = [memory, suspendingMemory]
