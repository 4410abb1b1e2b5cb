/**
 * What the Postgres store's SQL errors mean: the database cannot serve now (`StoreUnavailable`), or one of the store's
 * own refusals (the unique shape index, the method bound, a race creating the schema). Any other error is a defect.
 *
 * @internal
 */
import type { SqlError } from "@effect/sql/SqlError"
import { Effect } from "effect"
import { StoreUnavailable } from "../store/errors.js"

// SQLSTATE classes that mean the database cannot serve us right now: connection exception (08), insufficient
// resources (53), operator intervention such as a shutdown or a cancelled statement (57), system error (58),
// serialization failure or deadlock (40001, 40P01), which a retry resolves, and a read-only server (25006: a standby,
// or a primary being demoted, reached through an address that has not moved to the new primary yet).
const UNAVAILABLE_SQLSTATE = /^(08|53|57|58)|^40001$|^40P01$|^25006$/
const READ_ONLY_SQLSTATE = "25006"
const UNAVAILABLE_NODE_CODES = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "ETIMEDOUT",
  "EPIPE",
  "ENOTFOUND",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "EAI_AGAIN",
  "ECONNABORTED"
])
// node-postgres reports lost or refused connections with plain Errors that carry no code.
const UNAVAILABLE_MESSAGE =
  /connection terminated|connection ended|timeout exceeded when trying to connect|not queryable|terminating connection|cannot connect now|connection refused|connection.*closed/i

/**
 * `true` when an error (or one of its causes) says the database is unreachable, shutting down, overloaded or
 * timed out, rather than that the query itself is wrong (`PgRouteRepository.isUnavailable`).
 */
export const isUnavailable = (error: unknown): boolean => {
  for (let current = error, depth = 0; current !== undefined && current !== null && depth < 8; depth++) {
    if (typeof current !== "object") return false
    const { cause, code, message } = current as { code?: unknown; message?: unknown; cause?: unknown }
    if (typeof code === "string" && (UNAVAILABLE_SQLSTATE.test(code) || UNAVAILABLE_NODE_CODES.has(code))) return true
    if (typeof message === "string" && UNAVAILABLE_MESSAGE.test(message)) return true
    if (current instanceof AggregateError && current.errors.some(isUnavailable)) return true
    current = cause
  }
  return false
}

/** The server is read-only (`read_only_sql_transaction`): a standby, or a primary being demoted. */
export const isReadOnly = (error: unknown): boolean =>
  (error as { _tag?: unknown })._tag === "SqlError" &&
  ((error as SqlError).cause as { code?: unknown } | undefined)?.code === READ_ONLY_SQLSTATE

/** Why the store is unavailable, when it reached a read-only server. */
export const READ_ONLY_REASON = "the database reached is read-only (a standby, or a primary being demoted)"

/** `StoreUnavailable` for an unreachable database; any other SQL error is a defect. */
export const toStoreError = (error: SqlError) =>
  isUnavailable(error)
    ? Effect.fail(
      new StoreUnavailable({
        reason: isReadOnly(error) ? READ_ONLY_REASON : "the database could not be reached",
        cause: error
      })
    )
    : Effect.die(error)

/** `effect` with its SQL errors turned into `StoreUnavailable` or a defect (`toStoreError`). */
export const storeErrors = <A, E, R>(effect: Effect.Effect<A, E | SqlError, R>) =>
  Effect.catchIf(effect, (e): e is SqlError => (e as { _tag?: unknown })._tag === "SqlError", toStoreError)

const sqlState = (error: unknown): { readonly code?: unknown; readonly constraint?: unknown } | undefined =>
  (error as { _tag?: unknown })._tag === "SqlError" ? (error as SqlError).cause as never : undefined

/** Codes Postgres gives the loser when two processes create the same object at once. */
export const isCreateRace = (error: SqlError) => {
  const code = sqlState(error)?.code
  return code === "23505" || code === "42P07" || code === "42710"
}

/** The unique index on method and shape (named `constraint`) refused the row. */
export const isShapeConflict = (constraint: string) => (error: unknown): error is SqlError => {
  const state = sqlState(error)
  return state?.code === "23505" && state.constraint === constraint
}

/** The method bound's trigger (migration 6) refused the row: the whole statement is rolled back. */
export const isMethodLimit = (constraint: string) => (error: unknown): error is SqlError => {
  const state = sqlState(error)
  return state?.code === "23514" && state.constraint === constraint
}
