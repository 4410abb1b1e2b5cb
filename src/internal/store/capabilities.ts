/**
 * What a store may offer beyond the contract every store meets (`RouteRepository`), each a service of its own that
 * the store's layer provides when it has it: a consumer reads it with `Effect.serviceOption`, and a wrapper of the
 * store replaces only the services it changes.
 *
 * @internal
 */
import { Context, Effect, Option } from "effect"
import type * as Route from "../../Route.js"
import type {
  HistoryPage,
  HistoryQuery,
  Idempotency,
  LogRead,
  Precondition,
  Remembered,
  Restored,
  WriteError,
  WriteOptions
} from "../../RouteRepository.js"
import type { BatchApplied, BatchOperation, BatchOptions } from "./batch.js"
import type { ChangeFeed } from "./changeFeed.js"
import type {
  BatchRefused,
  IdempotencyKeyInUse,
  IdempotencyKeyReused,
  InvalidRestore,
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

/**
 * Provided beside a store that keeps a change log (both stores of the library, and a follower's, which reads the log
 * of the registry it follows). docs/history.md says what each store's log costs.
 *
 * @since 0.5.0
 */
export class ChangeLog extends Context.Tag("route-registry/RouteRepository/ChangeLog")<ChangeLog, {
  /** One page of the log, newest first. */
  readonly history: (query: HistoryQuery) => Effect.Effect<HistoryPage, StoreUnavailable>
  /**
   * The entries after `revision`, oldest first, at most `limit` (0: none, only the store's identity and newest
   * revision), read in one consistent step.
   */
  readonly logAfter: (revision: number, limit: number) => Effect.Effect<LogRead, StoreUnavailable>
}>() {}

/**
 * Provided beside a store that can make a route what it was (both stores of the library): `restore` makes the route
 * what it was right after the change at `revision` of the store's log. A route still stored is updated (the
 * precondition and `update`'s rules apply; a restore that changes nothing leaves it and its revision as they are); a
 * deleted one is created again with a new id and `createdAt`. An id the log holds nothing of is not found; a revision
 * not in this route's log, or one that deleted it, is `InvalidRestore`.
 *
 * @since 0.5.0
 */
export class Restorable extends Context.Tag("route-registry/RouteRepository/Restorable")<Restorable, {
  readonly restore: (
    id: string,
    revision: number,
    precondition?: Precondition,
    options?: WriteOptions
  ) => Effect.Effect<Restored, WriteError | InvalidRestore>
}>() {}

/**
 * Provided beside a store that applies change sets (both stores of the library): `applyBatch` applies one, all or
 * nothing (docs/batches.md). Each operation is decided as it would be alone (not found, the path prefixes of `options`
 * before and after, `ifMatch`), conflicts and the method bound on the state after the whole batch; the first refused
 * operation fails it with `BatchRefused`, and nothing changes. Every real change takes the next revision in the order
 * of the operations, and its log entry carries the batch's id; no reader of the store ever sees part of it. Each route
 * id appears at most once (the routing API refuses a batch naming one twice). With `options.idempotency`, the key
 * fails as `Idempotent`'s creates do (`IdempotencyKeyReused`, `IdempotencyKeyInUse`, `TooManyIdempotencyKeys`, the
 * answer it keeps counted in the principal's bytes), and nothing is written.
 *
 * @since 0.5.0
 */
export class Batches extends Context.Tag("route-registry/RouteRepository/Batches")<Batches, {
  readonly applyBatch: (
    operations: ReadonlyArray<BatchOperation>,
    options?: BatchOptions
  ) => Effect.Effect<
    BatchApplied,
    | BatchRefused
    | IdempotencyKeyReused
    | IdempotencyKeyInUse
    | TooManyIdempotencyKeys
    | StoreUnavailable
    | ReadOnlyStore
  >
}>() {}

/**
 * Every service a store's layer may provide beside it.
 *
 * @since 0.5.0
 */
export type Capability = ReadOnly | Feed | MemoryRead | Idempotent | ChangeLog | Restorable | Batches

/**
 * What a store offers beside it, each `undefined` (`readOnly`: `false`) when it does not: as a context holds them,
 * for the code that takes them all at once (the route table, the routing API).
 *
 * @since 0.5.0
 */
export interface Capabilities {
  readonly readOnly: boolean
  readonly feed: ChangeFeed | undefined
  readonly memoryRead: Context.Tag.Service<MemoryRead> | undefined
  readonly idempotent: Context.Tag.Service<Idempotent> | undefined
  readonly changeLog: Context.Tag.Service<ChangeLog> | undefined
  readonly restorable: Context.Tag.Service<Restorable> | undefined
  readonly batches: Context.Tag.Service<Batches> | undefined
}

/** A store that offers nothing beyond the contract. */
export const NONE: Capabilities = {
  readOnly: false,
  feed: undefined,
  memoryRead: undefined,
  idempotent: undefined,
  changeLog: undefined,
  restorable: undefined,
  batches: undefined
}

/** What `context` holds of the capabilities. */
export const capabilitiesOf = <R>(context: Context.Context<R>): Capabilities => {
  const get = <I, S>(tag: Context.Tag<I, S>) => Option.getOrUndefined(Context.getOption(context, tag))
  return {
    readOnly: Option.isSome(Context.getOption(context, ReadOnly)),
    feed: get(Feed),
    memoryRead: get(MemoryRead),
    idempotent: get(Idempotent),
    changeLog: get(ChangeLog),
    restorable: get(Restorable),
    batches: get(Batches)
  }
}

/** The capabilities in the context of the fiber. */
export const capabilities: Effect.Effect<Capabilities> = Effect.map(Effect.context<never>(), capabilitiesOf)

/** `context` with each capability `offered` holds added. */
export const withCapabilities = <R>(
  context: Context.Context<R>,
  offered: Capabilities
): Context.Context<R | Capability> => {
  let out = context as Context.Context<R | Capability>
  const add = <I extends Capability, S>(tag: Context.Tag<I, S>, service: S | undefined): void => {
    if (service !== undefined) out = Context.add(out, tag, service)
  }
  add(ReadOnly, offered.readOnly ? true : undefined)
  add(Feed, offered.feed)
  add(MemoryRead, offered.memoryRead)
  add(Idempotent, offered.idempotent)
  add(ChangeLog, offered.changeLog)
  add(Restorable, offered.restorable)
  add(Batches, offered.batches)
  return out
}
