/**
 * The tagged errors of the route store contract (`RouteRepository`), which re-exports them. They live here so that the
 * stores built on the contract import them without importing the module that builds the memory store.
 *
 * @internal
 */
import { Schema } from "effect"
import * as When from "../../When.js"

/**
 * A stored route already has the same method, shape and conditions; `conflictingRouteId` names it, and `when` (0.5.0)
 * the conditions both have, in canonical form (absent when neither has any).
 *
 * @since 0.1.0
 */
export class RouteConflict extends Schema.TaggedError<RouteConflict>()("RouteConflict", {
  method: Schema.String,
  path: Schema.String,
  conflictingRouteId: Schema.String,
  when: Schema.optionalWith(When.When, { exact: true })
}) {
  override get message(): string {
    return this.when === undefined
      ? `${this.method} ${this.path} has the same method and shape as route ${this.conflictingRouteId}`
      : `${this.method} ${this.path} with the conditions ${When.canonicalJson(this.when)} has the same method, shape ` +
        `and conditions as route ${this.conflictingRouteId}`
  }
}

/** A `RouteConflict` of a route with conditions `when`, or none; made by the stores, which have checked its fields. */
export const routeConflict = (
  method: string,
  path: string,
  conflictingRouteId: string,
  when: When.When | null | undefined
): RouteConflict =>
  new RouteConflict(
    when == null ? { method, path, conflictingRouteId } : { method, path, conflictingRouteId, when },
    true
  )

/**
 * No route has the id (including ids that could never exist).
 *
 * @since 0.1.0
 */
export class RouteNotFound extends Schema.TaggedError<RouteNotFound>()("RouteNotFound", {
  id: Schema.String
}) {
  override get message(): string {
    return `no route has the id ${JSON.stringify(this.id)}`
  }
}

/**
 * The store could not be reached or did not answer in time. Nothing was written.
 *
 * @since 0.1.0
 */
export class StoreUnavailable extends Schema.TaggedError<StoreUnavailable>()("StoreUnavailable", {
  reason: Schema.String,
  cause: Schema.optional(Schema.Defect)
}) {
  override get message(): string {
    return `the route store is unavailable: ${this.reason}`
  }
}

/**
 * The route's stored path is outside every path prefix the change was limited to (`Precondition.pathPrefixes`: the
 * writer owns only those prefixes). Nothing changed.
 *
 * @since 0.4.0
 */
export class OutsidePrefixes extends Schema.TaggedError<OutsidePrefixes>()("OutsidePrefixes", {
  id: Schema.String,
  path: Schema.String
}) {
  override get message(): string {
    return `route ${this.id} has the path ${this.path}, outside every path prefix the change may touch`
  }
}

/**
 * `If-Match` failed: the route's current revision is none of the ones the caller named. Nothing changed.
 *
 * @since 0.2.0
 */
export class PreconditionFailed extends Schema.TaggedError<PreconditionFailed>()("PreconditionFailed", {
  id: Schema.String,
  revision: Schema.Number
}) {
  override get message(): string {
    return `route ${this.id} is at revision ${this.revision}, which the precondition does not name`
  }
}

/**
 * A create with this `Idempotency-Key` was first made with another body (another fingerprint). Nothing was written.
 *
 * @since 0.3.0
 */
export class IdempotencyKeyReused extends Schema.TaggedError<IdempotencyKeyReused>()("IdempotencyKeyReused", {
  key: Schema.String
}) {
  override get message(): string {
    return `the idempotency key ${JSON.stringify(this.key)} was first used with another request`
  }
}

/**
 * A create with this `Idempotency-Key` is still running (in this process or another). Nothing was written.
 *
 * @since 0.3.0
 */
export class IdempotencyKeyInUse extends Schema.TaggedError<IdempotencyKeyInUse>()("IdempotencyKeyInUse", {
  key: Schema.String
}) {
  override get message(): string {
    return `a request with the idempotency key ${JSON.stringify(this.key)} is still running`
  }
}

/**
 * A create with a new idempotency key would take its principal past the keys or bytes it may hold at once (see
 * `Idempotency`). Nothing was written. Keys held are counted without the expired ones; `retryAfterMillis` is the
 * time until the oldest of them expires.
 *
 * @since 0.3.0
 */
export class TooManyIdempotencyKeys extends Schema.TaggedError<TooManyIdempotencyKeys>()("TooManyIdempotencyKeys", {
  key: Schema.String,
  /** The keys the principal holds, and the bytes they count (`keySize`). */
  keys: Schema.Number,
  bytes: Schema.Number,
  maxKeys: Schema.Number,
  maxBytes: Schema.Number,
  retryAfterMillis: Schema.Number
}) {
  override get message(): string {
    return `the principal holds ${this.keys} idempotency keys of ${this.bytes} bytes; one more would pass its limit ` +
      `of ${this.maxKeys} keys or ${this.maxBytes} bytes`
  }
}

/**
 * A create or an update would store a method no stored route has while the registry already holds `limit` distinct
 * methods (`MAX_METHODS`). Nothing was written.
 *
 * @since 0.3.0
 */
export class TooManyMethods extends Schema.TaggedError<TooManyMethods>()("TooManyMethods", {
  method: Schema.String,
  limit: Schema.Number
}) {
  override get message(): string {
    return `the registry stores ${this.limit} distinct methods, the most it holds, and ${this.method} is not one of them`
  }
}

/**
 * The store serves reads only: this process follows another registry (`RouteFollower.layer`) and takes its routes
 * from it, so a change has to be made there. Nothing was written. The routing API answers such a write
 * `405 method_not_allowed`, before authenticating it, as it answers any method a path does not serve.
 *
 * @since 0.4.0
 */
export class ReadOnlyStore extends Schema.TaggedError<ReadOnlyStore>()("ReadOnlyStore", {
  operation: Schema.String
}) {
  override get message(): string {
    return `the route store is read-only (this process follows another registry): ${this.operation} is refused`
  }
}

/**
 * A restore named a revision it cannot go back to: one not in this route's log (never there, another route's, or
 * pruned past the retention), or the one that deleted the route. Nothing changed.
 *
 * @since 0.4.0
 */
export class InvalidRestore extends Schema.TaggedError<InvalidRestore>()("InvalidRestore", {
  id: Schema.String,
  revision: Schema.Number,
  reason: Schema.Literal("not_in_log", "deleted")
}) {
  override get message(): string {
    return this.reason === "deleted"
      ? `revision ${this.revision} deleted route ${this.id}: restore a revision that left it in place`
      : `revision ${this.revision} is not in the log of route ${this.id} (never there, or pruned past the retention)`
  }
}

/**
 * An operation of a change set (`RouteRepository.applyBatch`) was refused, so none of them took effect: `index` is
 * the first refused operation's place in the batch, `reason` what refused it, as it would refuse that change alone.
 * `refusals` lists every refused operation the store found, so that a client fixes them all in one go. `replayed`:
 * this is the refusal an idempotency key kept, given again (nothing was decided anew).
 *
 * @since 0.5.0
 */
const BatchRefusal = Schema.Union(RouteNotFound, OutsidePrefixes, PreconditionFailed, RouteConflict, TooManyMethods)

export class BatchRefused extends Schema.TaggedError<BatchRefused>()("BatchRefused", {
  index: Schema.Number,
  reason: BatchRefusal,
  /** Every operation found refused, in the batch's order, the first one included; absent, that one alone. */
  refusals: Schema.optional(Schema.Array(Schema.Struct({ index: Schema.Number, reason: BatchRefusal }))),
  replayed: Schema.optional(Schema.Boolean)
}) {
  override get message(): string {
    return `operation ${this.index} of the batch was refused: ${this.reason.message}`
  }
}
