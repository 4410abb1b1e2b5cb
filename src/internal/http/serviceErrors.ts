/**
 * The declared errors of the services the core calls (the authenticator and the store), each bound to its answer in
 * one table: an operation's steps fail with them, and `answer` turns each into its problem.
 *
 * @internal
 */
import { Effect } from "effect"
import type * as Authenticator from "../../Authenticator.js"
import type * as Problem from "../../Problem.js"
import type * as RouteRepository from "../../RouteRepository.js"
import * as Answers from "./answers.js"
import type { Response } from "./exchange.js"
import * as Idempotency from "./idempotency.js"

/** What the services fail with, as declared. */
export type ServiceError =
  | Authenticator.InvalidToken
  | Authenticator.AuthenticatorUnavailable
  | RouteRepository.OutsidePrefixes
  | RouteRepository.RouteNotFound
  | RouteRepository.RouteConflict
  | RouteRepository.PreconditionFailed
  | RouteRepository.StoreUnavailable
  | RouteRepository.IdempotencyKeyReused
  | RouteRepository.IdempotencyKeyInUse
  | RouteRepository.TooManyIdempotencyKeys
  | RouteRepository.TooManyMethods
  | RouteRepository.ReadOnlyStore

/** What an answer may need beyond its error: the configured 503, and the id the request named. */
export interface Context {
  readonly unavailable: Response
  readonly id: string
}

/** One error's problem: its code, and the answer built from the error. */
export interface Entry<E> {
  readonly code: Problem.Code
  readonly answer: (error: E, context: Context) => Effect.Effect<Response>
}

type Table = { readonly [Tag in ServiceError["_tag"]]: Entry<Extract<ServiceError, { readonly _tag: Tag }>> }

/** Each declared error, by tag, with its problem. */
export const table: Table = {
  // Both are logged where the core calls the authenticator (internal/auth/principals.ts), a bounded number of times.
  InvalidToken: { code: "invalid_token", answer: () => Effect.succeed(Answers.INVALID_TOKEN) },
  // The key set of a JWT authenticator cannot be fetched.
  AuthenticatorUnavailable: {
    code: "authenticator_unavailable",
    answer: (error) => Effect.succeed(Answers.authenticatorUnavailable(error.retryAfterMillis))
  },
  // The stored route is outside the prefixes the principal owns (`Ownership.guard`), decided by the store.
  OutsidePrefixes: {
    code: "insufficient_scope",
    answer: (error) => Effect.succeed(Answers.outsidePrefixes(error.path))
  },
  RouteNotFound: { code: "route_not_found", answer: (_, { id }) => Effect.succeed(Answers.routeNotFound(id)) },
  PreconditionFailed: {
    code: "precondition_failed",
    answer: (_, { id }) => Effect.succeed(Answers.preconditionFailed(id))
  },
  RouteConflict: {
    code: "route_conflict",
    answer: (error) => Effect.succeed(Answers.conflict(error.method, error.path, error.conflictingRouteId))
  },
  StoreUnavailable: { code: "store_unavailable", answer: (_, { unavailable }) => Effect.succeed(unavailable) },
  IdempotencyKeyReused: {
    code: "idempotency_key_reused",
    answer: (error) => Effect.succeed(Idempotency.keyReused(error.key))
  },
  IdempotencyKeyInUse: {
    code: "idempotency_key_in_use",
    answer: (error) => Effect.succeed(Idempotency.keyInUse(error.key))
  },
  TooManyIdempotencyKeys: {
    code: "too_many_idempotency_keys",
    answer: (error) => Effect.succeed(Answers.tooManyIdempotencyKeys(error))
  },
  TooManyMethods: {
    code: "too_many_methods",
    answer: (error) => Effect.succeed(Answers.tooManyMethods(error.method, error.limit))
  },
  // A read-only store the dispatch did not know of (a wrapper that dropped `readOnly`): the same 405.
  ReadOnlyStore: { code: "method_not_allowed", answer: () => Effect.succeed(Answers.READ_ONLY) }
}

const isServiceError = (error: unknown): error is ServiceError =>
  typeof error === "object" && error !== null && Object.hasOwn(table, (error as { _tag?: unknown })._tag as string)

/**
 * The answer to a declared error; `undefined` for anything else a service fails with (outside its declared errors),
 * which is answered as a defect.
 */
export const answer = (error: unknown, context: Context): Effect.Effect<Response> | undefined => {
  if (!isServiceError(error)) return undefined
  const entry = table[error._tag] as Entry<ServiceError>
  return entry.answer(error, context)
}
