/**
 * The Postgres store's idempotency keys: a create with a key, decided once across every process.
 *
 * @internal
 */
import type { SqlError } from "@effect/sql/SqlError"
import { Duration, Effect, Either } from "effect"
import type * as Route from "../../Route.js"
import type { BatchOperation, BatchOptions, FirstAnswer, Idempotency, Remembered } from "../../RouteRepository.js"
import type * as Batch from "../store/batch.js"
import {
  answerSize,
  batchAnswerJson,
  batchFingerprint,
  batchRefusalJson,
  keepsRefusal,
  keptRefusal
} from "../store/batchKeys.js"
import {
  type BatchRefused,
  IdempotencyKeyInUse,
  IdempotencyKeyReused,
  TooManyIdempotencyKeys,
  type TooManyMethods
} from "../store/errors.js"
import {
  answerAgain,
  fingerprint,
  firstAnswerOf,
  IDEMPOTENCY_KEY_OVERHEAD_BYTES,
  keySize,
  makeRoute
} from "../store/rules.js"
import * as ChangeSet from "./changeSet.js"
import * as Log from "./log.js"
import * as Row from "./row.js"
import { create, type Store } from "./store.js"

// What a key keeps (see migrations 5 and 14): whether the request is the first one, and a create's `FirstAnswer` or
// an applied batch's answer.
interface KeyRow {
  readonly same: boolean
  readonly route_id: string | null
  readonly created_at: Date | null
  /** A bigint: node-postgres gives a string unless the host's client parses it. */
  readonly revision: string | number | bigint | null
  readonly batch_answer: string | null
}

// The last instant a Date can hold (ECMA-262 §21.4.1.1).
const MAX_DATE_MILLIS = 8.64e15

const keptAnswer = (row: KeyRow): FirstAnswer => ({
  routeId: row.route_id!,
  createdAt: row.created_at === null ? undefined : row.created_at.getTime(),
  revision: row.revision === null ? undefined : Number(row.revision)
})

// A principal's live keys: how many, the bytes they count (`keySize`) and when the oldest expires.
interface HeldRow {
  readonly keys: string | number
  readonly key_bytes: string | number
  /** `Infinity` for a key that never expires (node-postgres reads the timestamp `infinity` so). */
  readonly oldest: Date | number | null
}

// Refuses a new key of `size` bytes past the principal's bounds. The principal's lock (a transaction advisory lock,
// waited for) makes the count and the write that follows it one step across processes.
const checkHeld = ({ settings, sql }: Store, idempotency: Idempotency, size: number, at: Date) =>
  Effect.gen(function*() {
    const { key, maxBytes, maxKeys, principal } = idempotency
    const lockName = JSON.stringify([settings.idempotencyKeys, principal])
    yield* sql`SELECT pg_advisory_xact_lock(hashtextextended(${lockName}, 0))`
    const [held] = yield* sql<HeldRow>`
      SELECT count(*) AS keys, COALESCE(sum(octet_length(key) + COALESCE(octet_length(batch_answer), 0)), 0) AS key_bytes, min(expires_at) AS oldest
      FROM ${sql(settings.idempotencyKeys)} WHERE principal = ${principal} AND expires_at > ${at}`
    const count = Number(held?.keys ?? 0)
    const bytes = Number(held?.key_bytes ?? 0) + count * IDEMPOTENCY_KEY_OVERHEAD_BYTES
    if (count < maxKeys && bytes + size <= maxBytes) return
    const oldest = held?.oldest ?? null
    const oldestMillis = oldest instanceof Date ? oldest.getTime() : oldest ?? at.getTime()
    return yield* new TooManyIdempotencyKeys({
      key,
      keys: count,
      bytes,
      maxKeys,
      maxBytes,
      retryAfterMillis: Math.max(0, oldestMillis - at.getTime())
    })
  })

// Locks the key and reads its live row, if any. The key's lock is a transaction advisory lock on the table and key,
// taken without waiting: while a write with the key runs anywhere, another fails at once.
const lockKey = (store: Store, { key, principal }: Idempotency, digest: Buffer, at: Date) =>
  Effect.gen(function*() {
    const { settings, sql } = store
    const lockName = JSON.stringify([settings.idempotencyKeys, principal, key])
    const [lock] = yield* sql<{ locked: boolean }>`
      SELECT pg_try_advisory_xact_lock(hashtextextended(${lockName}, 0)) AS locked`
    if (lock?.locked !== true) return yield* new IdempotencyKeyInUse({ key })
    // The store's writers commit one at a time from here (internal/pg/log.ts): taken before any key row is.
    yield* Log.lock(store)
    const [kept] = yield* sql<KeyRow>`
      SELECT fingerprint = ${digest} AS same, route_id, created_at, revision, batch_answer
      FROM ${sql(settings.idempotencyKeys)}
      WHERE principal = ${principal} AND key = ${key} AND expires_at > ${at}`
    return kept
  })

// Writes a new key's first answer, once the principal's bounds let it; each forgets a batch of expired keys,
// skipping those another one is forgetting: expiry needs no background job, and no write waits for another's.
const keep = (
  store: Store,
  idempotency: Idempotency,
  digest: Buffer,
  at: Date,
  answer: { readonly first: FirstAnswer | undefined; readonly batchAnswer: string | null }
) =>
  Effect.gen(function*() {
    const { settings, sql } = store
    const keys = sql(settings.idempotencyKeys)
    const { key, principal } = idempotency
    const now = at.getTime()
    const lifetime = Duration.toMillis(idempotency.expiresAfter)
    // Past the last instant a Date holds, a key never expires.
    const expiresAt = now + lifetime <= MAX_DATE_MILLIS ? new Date(now + lifetime) : "infinity"
    const { batchAnswer, first } = answer
    const createdAt = first?.createdAt === undefined ? null : new Date(first.createdAt)
    // The lock is ours and no live row holds the key, so a row in the way has expired: it is replaced.
    yield* sql`
      INSERT INTO ${keys} (principal, key, fingerprint, route_id, created_at, revision, batch_answer, expires_at)
      VALUES (${principal}, ${key}, ${digest}, ${first?.routeId ?? null}, ${createdAt}, ${first?.revision ?? null},
              ${batchAnswer}, ${expiresAt})
      ON CONFLICT (principal, key) DO UPDATE
      SET fingerprint = excluded.fingerprint, route_id = excluded.route_id, created_at = excluded.created_at,
        revision = excluded.revision, batch_answer = excluded.batch_answer, expires_at = excluded.expires_at`
  })

const forgetExpired = ({ settings, sql }: Store, at: Date) => {
  const keys = sql(settings.idempotencyKeys)
  return sql`DELETE FROM ${keys} WHERE (principal, key) IN (
      SELECT principal, key FROM ${keys} WHERE expires_at <= ${at} LIMIT 100 FOR UPDATE SKIP LOCKED)`
}

// One transaction locks the key, reads it and, when it is new, checks the principal's bounds and writes the route
// and the key's first answer together: a 201 is remembered exactly when its route is committed.
export const createIdempotent = (
  store: Store,
  input: Route.CreateRoute,
  idempotency: Idempotency,
  change: Log.Change
): Effect.Effect<
  Remembered,
  | IdempotencyKeyReused
  | IdempotencyKeyInUse
  | TooManyIdempotencyKeys
  | TooManyMethods
  | SqlError
> =>
  Effect.gen(function*() {
    const digest = Buffer.from(fingerprint(input), "base64url")
    const at = change.at
    const kept = yield* lockKey(store, idempotency, digest, at)
    if (kept !== undefined) {
      // A batch's key never matches a create's input: their fingerprints differ.
      if (!kept.same) return yield* new IdempotencyKeyReused({ key: idempotency.key })
      return { outcome: answerAgain(input, keptAnswer(kept)), replayed: true }
    }
    yield* checkHeld(store, idempotency, keySize(idempotency.key), at)
    yield* forgetExpired(store, at)
    const outcome = yield* create(store, makeRoute(store.ids, input, at.getTime()), change).pipe(
      Effect.map(Either.right),
      Effect.catchTag("RouteConflict", (conflict) => Effect.succeed(Either.left(conflict)))
    )
    yield* keep(store, idempotency, digest, at, { first: firstAnswerOf(outcome), batchAnswer: null })
    return { outcome, replayed: false }
  })

/**
 * A change set with a key, in one transaction as `createIdempotent`: the key is read first, and an applied batch's
 * answer is written with it, the principal's bounds counting the answer's bytes. A refusal the key keeps
 * (`keepsRefusal`) is decided before the batch writes anything, so the transaction then writes the key alone and
 * commits, the refusal its value (`Left`): nothing of the batch, and the counter left where it was. Any other refusal
 * fails the transaction, and the key stays free. A replay has no steps: nothing was written.
 */
export const applyBatchIdempotent = (
  store: Store,
  operations: ReadonlyArray<BatchOperation>,
  options: BatchOptions,
  idempotency: Idempotency,
  change: Log.Change
): Effect.Effect<
  Either.Either<Batch.Plan, BatchRefused>,
  BatchRefused | IdempotencyKeyReused | IdempotencyKeyInUse | TooManyIdempotencyKeys | SqlError
> =>
  Effect.gen(function*() {
    const digest = Buffer.from(batchFingerprint(operations, options.description), "base64url")
    const at = change.at
    const kept = yield* lockKey(store, idempotency, digest, at)
    if (kept !== undefined) {
      if (!kept.same || kept.batch_answer === null) return yield* new IdempotencyKeyReused({ key: idempotency.key })
      const refused = keptRefusal(kept.batch_answer)
      if (refused !== undefined) return yield* refused
      return Either.right({ ...Row.decodeBatchAnswer(kept.batch_answer), replayed: true, steps: [] })
    }
    const remember = (batchAnswer: string) =>
      Effect.gen(function*() {
        yield* checkHeld(store, idempotency, keySize(idempotency.key) + answerSize(batchAnswer), at)
        yield* forgetExpired(store, at)
        yield* keep(store, idempotency, digest, at, { first: undefined, batchAnswer })
      })
    return yield* ChangeSet.decideAndWrite(
      store,
      operations,
      options,
      change,
      ({ steps: _, ...applied }) => remember(batchAnswerJson(applied))
    ).pipe(
      Effect.map((plan) => Either.right(plan)),
      Effect.catchTag("BatchRefused", (
        refused
      ): Effect.Effect<Either.Either<Batch.Plan, BatchRefused>, BatchRefused | TooManyIdempotencyKeys | SqlError> =>
        keepsRefusal(refused)
          ? Effect.as(remember(batchRefusalJson(refused)), Either.left(refused))
          : Effect.fail(refused))
    )
  })
