/**
 * What a store may offer beyond the contract every store meets (`RouteRepository`), each a service of its own that
 * the store's layer provides when it has it: a consumer reads it with `Effect.serviceOption`, and a wrapper of the
 * store replaces only the services it changes.
 *
 * @internal
 */
import { Context } from "effect"
import type { Effect } from "effect"
import type * as Route from "../../Route.js"
import type { Idempotency, Remembered, WriteOptions } from "../../RouteRepository.js"
import type { ChangeFeed } from "./changeFeed.js"
import type {
  IdempotencyKeyInUse,
  IdempotencyKeyReused,
  ReadOnlyStore,
  StoreUnavailable,
  TooManyIdempotencyKeys,
  TooManyMethods
} from "./errors.js"

/**
 * Provided beside a store that serves reads only (a follower's, `RouteFollower.layer`): its writes fail with
 * `ReadOnlyStore`, and the routing API answers them `405 method_not_allowed` at once, before authenticating them.
 *
 * @since 0.5.0
 */
export class ReadOnly extends Context.Tag("route-registry/RouteRepository/ReadOnly")<ReadOnly, true>() {}

/**
 * Provided beside a store that other processes can change (the Postgres store's layer): how to follow their changes.
 * A store only this process changes has none.
 *
 * @since 0.5.0
 */
export class Feed extends Context.Tag("route-registry/RouteRepository/Feed")<Feed, ChangeFeed>() {}

/**
 * Provided beside a store that keeps its routes in memory (the memory store's layer, a follower's): the route with
 * that id, read at once (`undefined` when there is none). The routing API uses it to answer a lookup and to keep
 * each route's answer per revision; `findById` stays the way to read in an Effect.
 *
 * @since 0.5.0
 */
export class MemoryRead extends Context.Tag("route-registry/RouteRepository/MemoryRead")<MemoryRead, {
  readonly unsafeFindById: (id: string) => Route.StoredRoute | undefined
}>() {}

/**
 * Provided beside a store that remembers idempotency keys (both stores of the library): `create` at most once per key.
 * The first call with a key creates (or is refused with a conflict) and remembers that outcome together with the
 * write, atomically; a later call with the key and an equal input (`fingerprint`) gives it again (`replayed`), one
 * with another input fails with `IdempotencyKeyReused`, one while the first is running with `IdempotencyKeyInUse`.
 * A new key that would take its principal past `maxKeys` or `maxBytes` fails with `TooManyIdempotencyKeys`. A
 * failure (`TooManyIdempotencyKeys`, `TooManyMethods`, `StoreUnavailable`) remembers nothing, so a retry runs anew.
 * A store keeps what `firstAnswerOf` gives, no more, and answers again with `answerAgain`.
 *
 * @since 0.5.0
 */
export class Idempotent extends Context.Tag("route-registry/RouteRepository/Idempotent")<Idempotent, {
  readonly createIdempotent: (
    input: Route.CreateRoute,
    idempotency: Idempotency,
    options?: WriteOptions
  ) => Effect.Effect<
    Remembered,
    | IdempotencyKeyReused
    | IdempotencyKeyInUse
    | TooManyIdempotencyKeys
    | TooManyMethods
    | StoreUnavailable
    | ReadOnlyStore
  >
}>() {}
