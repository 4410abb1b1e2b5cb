/**
 * What a store's operations record when telemetry is on: a span and a duration each, with its outcome.
 *
 * @internal
 */
import type { Exit } from "effect"
import { Cause, Effect, Metric, Option } from "effect"
import type * as RouteRepository from "../../RouteRepository.js"
import { labels, LATENCY_MILLIS, NO_STACK, timed } from "../telemetry.js"
import type { Capabilities } from "./capabilities.js"

export const storeOperationDuration = Metric.histogram(
  "route_registry_store_operation_duration_ms",
  LATENCY_MILLIS,
  "Time a store operation made by the routing API took, in milliseconds, by operation and outcome."
)

type Store = RouteRepository.RouteRepository["Type"]

type StoreOperation =
  | "create"
  | "findById"
  | "list"
  | "update"
  | "remove"
  | "createIdempotent"
  | "history"
  | "restore"
  | "applyBatch"

// "success", the tag of a declared error, or what else ended the operation.
const outcomeOf = (exit: Exit.Exit<unknown, unknown>): string => {
  if (exit._tag === "Success") return "success"
  const failure = Cause.failureOption(exit.cause)
  if (Option.isSome(failure)) {
    const tag = (failure.value as { readonly _tag?: unknown } | null)?._tag
    return typeof tag === "string" ? tag : "failure"
  }
  return Cause.isInterruptedOnly(exit.cause) ? "interrupted" : "defect"
}

// The store is called only once the span has started (a store may do its work when called, not when run).
const storeOperation = <A, E>(operation: StoreOperation, call: () => Effect.Effect<A, E>): Effect.Effect<A, E> =>
  Effect.withSpan(
    timed(Effect.suspend(call), (exit, millis) => {
      const outcome = outcomeOf(exit)
      storeOperationDuration.unsafeUpdate(millis, labels("operation", operation, "outcome", outcome))
      return Effect.annotateCurrentSpan("route_registry.store.outcome", outcome)
    }),
    `RouteRepository.${operation}`,
    { ...NO_STACK, kind: "internal", attributes: { "route_registry.store.operation": operation } }
  )

/**
 * `store` with a span and a duration per operation. A store's read from memory (`MemoryRead`, a service of its own) is
 * left as it is: a map's lookup with nothing to wait for or fail, seen in the request's span and metrics; through
 * `findById` it would cost a GET its kept answer and a fiber.
 */
export const instrumentStore = (store: Store): Store => ({
  create: (input, options) => storeOperation("create", () => store.create(input, options)),
  findById: (id) => storeOperation("findById", () => store.findById(id)),
  list: (query) => storeOperation("list", () => store.list(query)),
  update: (id, patch, precondition, options) =>
    storeOperation("update", () => store.update(id, patch, precondition, options)),
  remove: (id, precondition, options) => storeOperation("remove", () => store.remove(id, precondition, options))
})

/**
 * What the store offers beside it, each operation the routing API makes with a span and a duration, as
 * `instrumentStore`'s: its idempotent creates, its log's pages, restores and change sets. What it does not measure
 * is left as it is: the read at once, the change feed, and the log read after a revision (the change stream's, whose
 * clients are measured by the request that opened them).
 */
export const instrumentCapabilities = (offered: Capabilities): Capabilities => {
  const { batches, changeLog, idempotent, restorable } = offered
  return {
    ...offered,
    idempotent: idempotent && {
      createIdempotent: (input, idempotency, options) =>
        storeOperation("createIdempotent", () => idempotent.createIdempotent(input, idempotency, options))
    },
    changeLog: changeLog && {
      history: (query) => storeOperation("history", () => changeLog.history(query)),
      logAfter: changeLog.logAfter
    },
    restorable: restorable && {
      restore: (id, revision, precondition, options) =>
        storeOperation("restore", () => restorable.restore(id, revision, precondition, options))
    },
    batches: batches && {
      applyBatch: (operations, options) => storeOperation("applyBatch", () => batches.applyBatch(operations, options))
    }
  }
}
