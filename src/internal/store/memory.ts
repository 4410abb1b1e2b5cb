/**
 * The in-memory store: the embedded default, and the store tests swap in. `RouteRepository.layerMemory` serves it.
 *
 * @internal
 */
import type { Context } from "effect"
import { Duration, Effect, Either } from "effect"
import { InvalidOption } from "../../InvalidOption.js"
import * as Route from "../../Route.js"
import type {
  BatchApplied,
  FirstAnswer,
  Idempotency,
  MemoryOptions,
  Precondition,
  Remembered,
  Restored,
  RouteIdGenerator,
  RouteRepository,
  WriteError
} from "../../RouteRepository.js"
import { withActor, withActorAndClock } from "./actor.js"
import * as Batch from "./batch.js"
import * as BatchKeys from "./batchKeys.js"
import type { Batches, ChangeLog, Idempotent, MemoryRead, Restorable } from "./capabilities.js"
import {
  type BatchRefused,
  IdempotencyKeyReused,
  InvalidRestore,
  OutsidePrefixes,
  PreconditionFailed,
  type RouteConflict,
  routeConflict,
  RouteNotFound,
  TooManyIdempotencyKeys,
  TooManyMethods
} from "./errors.js"
import * as Log from "./log.js"
import { addRoute, dropRoute, emptyMemory, listMemory, replaceRoute } from "./memoryIndex.js"
import * as Rules from "./rules.js"

/** What a change is made with: its actor, whether it is only tried, and the revision a restore goes back to. */
interface Change {
  readonly actor: string | null
  readonly dryRun?: boolean | undefined
  readonly restoredFrom?: number | undefined
}

const notFound = (id: string) => Effect.fail(new RouteNotFound({ id }, true))

/** An idempotency key the memory store remembers: the first request's fingerprint, its answer, until `expiresAt`. */
interface KeptKey {
  readonly fingerprint: string
  /** A create's first answer, an applied batch's, or a refused batch's as `BatchKeys.batchRefusalJson` gives it. */
  readonly answer: FirstAnswer | BatchApplied | string
  readonly expiresAt: number
  /** What it counts against its principal's byte budget (`keySize`). */
  readonly size: number
}

/** One principal's keys, in the order they were stored, and what they count. */
interface PrincipalKeys {
  readonly keys: Map<string, KeptKey>
  bytes: number
  /** The latest expiry of its keys: once it has passed, every key of the principal has expired. */
  latestExpiry: number
}

const forgetKey = (held: PrincipalKeys, key: string, kept: KeptKey): void => {
  held.keys.delete(key)
  held.bytes -= kept.size
}

// Keys are stored in order, so with one lifetime for all the oldest come first, and forgetting stops at the first
// live key. A key stored with a shorter lifetime than the ones before it stays until they go (or `forgetAllExpired`).
const forgetExpiredPrefix = (held: PrincipalKeys, now: number): void => {
  for (const [key, kept] of held.keys) {
    if (kept.expiresAt > now) return
    forgetKey(held, key, kept)
  }
}

// Forgets every expired key of the principal; the earliest expiry of the keys left (Infinity when none is).
const forgetAllExpired = (held: PrincipalKeys, now: number): number => {
  let earliest = Infinity
  for (const [key, kept] of held.keys) {
    if (kept.expiresAt <= now) forgetKey(held, key, kept)
    else earliest = Math.min(earliest, kept.expiresAt)
  }
  return earliest
}

// Principals are kept in the order they last stored a key: the ones whose every key has expired come first and are
// forgotten whole, so a principal that stops sending keys leaves nothing behind.
const forgetIdlePrincipals = (principals: Map<string, PrincipalKeys>, now: number): void => {
  for (const [principal, held] of principals) {
    if (held.latestExpiry > now) return
    principals.delete(principal)
  }
}

// Refuses a new key of `size` bytes past the principal's bounds; expired keys are forgotten first, so they never count.
const overLimit = (
  held: PrincipalKeys,
  idempotency: Idempotency,
  size: number,
  now: number
): TooManyIdempotencyKeys | undefined => {
  const fits = () => held.keys.size < idempotency.maxKeys && held.bytes + size <= idempotency.maxBytes
  if (fits()) return undefined
  const earliest = forgetAllExpired(held, now)
  if (fits()) return undefined
  return new TooManyIdempotencyKeys({
    key: idempotency.key,
    keys: held.keys.size,
    bytes: held.bytes,
    maxKeys: idempotency.maxKeys,
    maxBytes: idempotency.maxBytes,
    // Infinity only when the principal holds no key yet: a single key larger than the byte budget.
    retryAfterMillis: Number.isFinite(earliest) ? earliest - now : 0
  }, true)
}

/** The memory store and what it offers beside it. */
export interface Memory {
  readonly repository: Context.Tag.Service<RouteRepository>
  readonly memoryRead: Context.Tag.Service<MemoryRead>
  readonly idempotent: Context.Tag.Service<Idempotent>
  readonly changeLog: Context.Tag.Service<ChangeLog>
  readonly restorable: Context.Tag.Service<Restorable>
  readonly batches: Context.Tag.Service<Batches>
}

/**
 * The in-memory store: O(1) get and conflict check; a page is a binary search to the cursor, then a walk along the
 * shortest of the sorted id lists its filters select (all ids, or those of one method, handler or middleware name).
 * Every change decides its checks and writes without yielding, so of concurrent conflicting changes exactly one wins.
 *
 * @since 0.1.0
 */
export const make = (
  ids: Context.Tag.Service<RouteIdGenerator>,
  options: MemoryOptions = {}
): Memory => {
  const capacity = options.historyCapacity ?? Rules.DEFAULT_MEMORY_HISTORY_CAPACITY
  const invalid = Rules.checkHistoryCapacity(capacity)
  if (invalid !== undefined) throw new InvalidOption({ option: "historyCapacity", message: invalid })
  const memory = emptyMemory()
  const log = Log.make(capacity)
  // Another instance (another run) has another identity: a change stream's cursor of one is not resumed by another.
  const store = Rules.newStoreId()
  const principals = new Map<string, PrincipalKeys>()
  // A method no stored route has, while MAX_METHODS are stored, is one too many; `leaving` is a route that gives up
  // its method in the same change (an update), which frees the method when it was that method's only route.
  const tooManyMethods = (method: string, leaving?: Route.StoredRoute): TooManyMethods | undefined => {
    if (memory.byMethod.has(method)) return undefined
    const freed = leaving !== undefined && memory.byMethod.get(leaving.method)?.length === 1 ? 1 : 0
    return memory.byMethod.size - freed < Rules.MAX_METHODS
      ? undefined
      : new TooManyMethods({ method, limit: Rules.MAX_METHODS }, true)
  }
  // Left: refused, nothing decided (the method bound); right: the outcome, which a key remembers. A change takes the
  // next revision and writes its log entry in the same step; a dry run is answered with what it would be.
  const insert = (
    input: Route.CreateRoute,
    millis: number,
    change: Change
  ): Either.Either<Either.Either<Route.StoredRoute, RouteConflict>, TooManyMethods> => {
    const key = Rules.conflictKey(input.method, input.path, input.when)
    const existing = memory.idByKey.get(key)
    if (existing !== undefined) {
      return Either.right(Either.left(
        routeConflict(input.method, input.path, existing, input.when)
      ))
    }
    const refused = tooManyMethods(input.method)
    if (refused !== undefined) return Either.left(refused)
    const revision = memory.revision + 1
    const stored = Rules.makeStoredRoute(ids, input, millis, revision)
    if (change.dryRun === true) return Either.right(Either.right(stored))
    memory.revision = revision
    addRoute(memory, stored, key)
    const action = change.restoredFrom === undefined ? "create" : "restore"
    Log.append(log, Log.entry(revision, millis, change.actor, action, stored.id, null, stored, change.restoredFrom))
    return Either.right(Either.right(stored))
  }
  const replace = (
    current: Route.StoredRoute,
    patch: Route.RoutePatch,
    precondition: Precondition | undefined,
    millis: number,
    change: Change
  ): Effect.Effect<Route.StoredRoute, WriteError> => {
    const barred = Rules.barredBy(precondition, current)
    if (barred !== undefined) return Effect.fail(barred)
    if (!Rules.patchChanges(current, patch)) return Effect.succeed(current)
    const method = patch.method ?? current.method
    const path = patch.path ?? current.path
    const when = patch.when === undefined ? current.when : patch.when ?? undefined
    const holder = memory.idByKey.get(Rules.conflictKey(method, path, when))
    if (holder !== undefined && holder !== current.id) return Effect.fail(routeConflict(method, path, holder, when))
    const refused = method === current.method ? undefined : tooManyMethods(method, current)
    if (refused !== undefined) return Effect.fail(refused)
    const updated = Rules.patchedRoute(current, patch, memory.revision + 1)
    if (change.dryRun === true) return Effect.succeed(updated)
    memory.revision = updated.revision
    replaceRoute(memory, current, updated)
    const action = change.restoredFrom === undefined ? "update" : "restore"
    Log.append(
      log,
      Log.entry(updated.revision, millis, change.actor, action, current.id, current, updated, change.restoredFrom)
    )
    return Effect.succeed(updated)
  }
  // Decided on the stored state and applied without yielding: no other change comes between, and no reader sees part
  // of it. Steps are applied in order, then every route the batch leaves takes its method and shape, which an earlier
  // step's removal of another route's may have cleared (a swap).
  const applyBatch = (
    steps: ReadonlyArray<Batch.Step>,
    batch: string,
    millis: number,
    actor: string | null,
    description: string | undefined
  ) => {
    const batchEnd = steps[steps.length - 1]?.revision
    for (const { action, after, before, revision } of steps) {
      if (before === null) addRoute(memory, after!, Rules.conflictKey(after!.method, after!.path))
      else if (after === null) dropRoute(memory, before)
      else replaceRoute(memory, before, after)
      Log.append(log, {
        ...Log.entry(revision, millis, actor, action, (after ?? before)!.id, before, after),
        batch,
        batchEnd,
        ...(description === undefined ? {} : { batchDescription: description })
      })
    }
    for (const { after } of steps) {
      if (after !== null) memory.idByKey.set(Rules.conflictKey(after.method, after.path), after.id)
    }
    if (batchEnd !== undefined) memory.revision = batchEnd
  }
  const known: Batch.Known = {
    route: (id) => memory.byId.get(id),
    holder: (key) => memory.idByKey.get(key),
    methods: {
      count: (method) => memory.byMethod.get(method)?.length ?? 0,
      get distinct() {
        return memory.byMethod.size
      }
    }
  }
  // The key's first answer again, or the refusal of a key used with another input (a batch's never matches a create).
  const again = (input: Route.CreateRoute, idempotency: Idempotency, kept: KeptKey) =>
    kept.fingerprint === Rules.fingerprint(input)
      ? Effect.succeed<Remembered>({ outcome: Rules.answerAgain(input, kept.answer as FirstAnswer), replayed: true })
      : Effect.fail(new IdempotencyKeyReused({ key: idempotency.key }, true))
  // The live key of the principal, if it holds one.
  const liveKey = ({ key, principal }: Idempotency, now: number) => {
    const kept = principals.get(principal)?.keys.get(key)
    return kept !== undefined && kept.expiresAt > now ? kept : undefined
  }
  // The principal's keys, for a key it holds no live answer to: expired keys forgotten first.
  const heldKeys = ({ key, principal }: Idempotency, now: number): PrincipalKeys => {
    forgetIdlePrincipals(principals, now)
    const held = principals.get(principal) ?? { keys: new Map(), bytes: 0, latestExpiry: 0 }
    forgetExpiredPrefix(held, now)
    const expired = held.keys.get(key)
    if (expired !== undefined) forgetKey(held, key, expired)
    return held
  }
  // Keeps a new key's first answer, once `overLimit` let it.
  const keep = (held: PrincipalKeys, idempotency: Idempotency, now: number, kept: Omit<KeptKey, "expiresAt">) => {
    const expiresAt = now + Duration.toMillis(idempotency.expiresAfter)
    held.keys.set(idempotency.key, { ...kept, expiresAt })
    held.bytes += kept.size
    held.latestExpiry = Math.max(held.latestExpiry, expiresAt)
    // Stored again, so the principal moves to the end: the order of their last keys.
    principals.delete(idempotency.principal)
    principals.set(idempotency.principal, held)
  }
  const repository: Context.Tag.Service<RouteRepository> = {
    create: (input, options) =>
      withActorAndClock(
        options,
        (actor, clock): Effect.Effect<Route.StoredRoute, RouteConflict | TooManyMethods> => {
          const decided = insert(input, clock.unsafeCurrentTimeMillis(), { actor, dryRun: options?.dryRun })
          if (Either.isLeft(decided)) return Effect.fail(decided.left)
          const outcome = decided.right
          return Either.isRight(outcome) ? Effect.succeed(outcome.right) : Effect.fail(outcome.left)
        }
      ),
    findById: (id) =>
      Effect.suspend(() => {
        const route = memory.byId.get(id)
        return route === undefined ? notFound(id) : Effect.succeed(route)
      }),
    list: (query) => Effect.sync(() => listMemory(memory, query)),
    update: (id, patch, precondition, options) =>
      withActor(options, (actor) =>
        Effect.clockWith((clock) => {
          const current = memory.byId.get(id)
          if (current === undefined) return notFound(id)
          return replace(current, patch, precondition, clock.unsafeCurrentTimeMillis(), {
            actor,
            dryRun: options?.dryRun
          })
        })),
    remove: (id, precondition, options) =>
      withActor(
        options,
        (actor) =>
          Effect.clockWith((clock): Effect.Effect<number, RouteNotFound | OutsidePrefixes | PreconditionFailed> => {
            const current = memory.byId.get(id)
            if (current === undefined) return notFound(id)
            const barred = Rules.barredBy(precondition, current)
            if (barred !== undefined) return Effect.fail(barred)
            const revision = memory.revision + 1
            if (options?.dryRun === true) return Effect.succeed(revision)
            memory.revision = revision
            dropRoute(memory, current)
            const millis = clock.unsafeCurrentTimeMillis()
            Log.append(log, Log.entry(revision, millis, actor, "delete", id, current, null))
            return Effect.succeed(revision)
          })
      )
  }
  const changeLog: Context.Tag.Service<ChangeLog> = {
    history: (query) => Effect.sync(() => Log.page(log, query)),
    logAfter: (revision, limit) =>
      Effect.sync(() => ({ store, revision: memory.revision, ...Log.after(log, revision, limit, memory.revision) }))
  }
  const restorable: Context.Tag.Service<Restorable> = {
    restore: (id, revision, precondition, options) =>
      withActor(options, (actor) =>
        Effect.clockWith((clock): Effect.Effect<Restored, WriteError | InvalidRestore> => {
          const target = Log.at(log, revision)
          if (target === undefined || target.routeId !== id) {
            return Log.holds(log, id) || memory.byId.has(id)
              ? Effect.fail(new InvalidRestore({ id, revision, reason: "not_in_log" }, true))
              : notFound(id)
          }
          if (target.after === null) return Effect.fail(new InvalidRestore({ id, revision, reason: "deleted" }, true))
          const fields = Rules.restoredFields(target.after)
          // A prefix owner restores only what lies under its prefixes, then and now.
          if (!Rules.withinPrefixes(precondition, fields.path)) {
            return Effect.fail(new OutsidePrefixes({ id, path: fields.path }, true))
          }
          const change: Change = { actor, dryRun: options?.dryRun, restoredFrom: revision }
          const millis = clock.unsafeCurrentTimeMillis()
          const current = memory.byId.get(id)
          if (current !== undefined) {
            return Effect.map(replace(current, fields, precondition, millis, change), (route) => ({
              route,
              created: false
            }))
          }
          // A route deleted has no current revision for If-Match to name.
          if (precondition?.ifMatch !== undefined) {
            return Effect.fail(new PreconditionFailed({ id, revision: 0 }, true))
          }
          const decided = insert(fields.input, millis, change)
          if (Either.isLeft(decided)) return Effect.fail(decided.left)
          return Either.isRight(decided.right)
            ? Effect.succeed({ route: decided.right.right, created: true })
            : Effect.fail(decided.right.left)
        }))
  }
  const batches: Context.Tag.Service<Batches> = {
    // With a key, as `createIdempotent`: its answer (or its refusal, when kept) is kept in the same step as it is decided.
    applyBatch: (operations, options = {}) =>
      withActorAndClock(
        options,
        (actor, clock): Effect.Effect<BatchApplied, BatchRefused | IdempotencyKeyReused | TooManyIdempotencyKeys> => {
          const millis = clock.unsafeCurrentTimeMillis()
          const idempotency = options.dryRun === true ? undefined : options.idempotency
          const fingerprint = idempotency && BatchKeys.batchFingerprint(operations, options.description)
          const kept = idempotency && liveKey(idempotency, millis)
          if (kept !== undefined) {
            if (kept.fingerprint !== fingerprint) {
              return Effect.fail(new IdempotencyKeyReused({ key: idempotency!.key }, true))
            }
            return typeof kept.answer === "string"
              ? Effect.fail(BatchKeys.keptRefusal(kept.answer)!)
              : Effect.succeed({ ...kept.answer as BatchApplied, replayed: true })
          }
          // Keeps the key's answer, `json` its bytes, unless the principal's bounds refuse it.
          const remember = (answer: BatchApplied | string, json: string) => {
            const held = heldKeys(idempotency!, millis)
            const size = Rules.keySize(idempotency!.key) + BatchKeys.answerSize(json)
            const refused = overLimit(held, idempotency!, size, millis)
            if (refused === undefined) keep(held, idempotency!, millis, { fingerprint: fingerprint!, answer, size })
            return refused
          }
          const decided = Batch.plan(ids, operations, known, options, millis, memory.revision)
          if (Either.isLeft(decided)) {
            if (idempotency === undefined || !BatchKeys.keepsRefusal(decided.left)) return Effect.fail(decided.left)
            const json = BatchKeys.batchRefusalJson(decided.left)
            return Effect.fail(remember(json, json) ?? decided.left)
          }
          const { steps, ...applied } = decided.right
          if (idempotency !== undefined) {
            const refused = remember(applied, BatchKeys.batchAnswerJson(applied))
            if (refused !== undefined) return Effect.fail(refused)
          }
          if (options.dryRun !== true) applyBatch(steps, applied.batch, millis, actor, options.description)
          return Effect.succeed(applied)
        }
      )
  }
  // Read, decided and written without yielding: no other create with the key can start in between, so none is
  // ever in flight here, and the principal's bounds hold exactly.
  const idempotent: Context.Tag.Service<Idempotent> = {
    createIdempotent: (input, idempotency, options) =>
      withActor(options, (actor) =>
        Effect.clockWith((
          clock
        ): Effect.Effect<Remembered, IdempotencyKeyReused | TooManyIdempotencyKeys | TooManyMethods> => {
          const now = clock.unsafeCurrentTimeMillis()
          const kept = liveKey(idempotency, now)
          if (kept !== undefined) return again(input, idempotency, kept)
          const held = heldKeys(idempotency, now)
          const size = Rules.keySize(idempotency.key)
          const refused = overLimit(held, idempotency, size, now)
          if (refused !== undefined) return Effect.fail(refused)
          const decided = insert(input, now, { actor })
          if (Either.isLeft(decided)) return Effect.fail(decided.left)
          const answer = Rules.firstAnswerOf(decided.right)
          keep(held, idempotency, now, { fingerprint: Rules.fingerprint(input), answer, size })
          return Effect.succeed({ outcome: decided.right, replayed: false })
        }))
  }
  const memoryRead = { unsafeFindById: (id: string) => memory.byId.get(id) }
  return { repository, memoryRead, idempotent, changeLog, restorable, batches }
}
