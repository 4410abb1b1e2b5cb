/**
 * The declared errors of the services the core calls (the authenticator and the store), each bound to its answer in
 * one table: an operation's steps fail with them, and `cases` gives each its problem, for `Effect.catchTags`.
 *
 * @internal
 */
import { Effect } from "effect"
import type * as Authenticator from "../../Authenticator.js"
import type * as Problem from "../../Problem.js"
import type * as RouteRepository from "../../RouteRepository.js"
import * as Answers from "./answers.js"
import type { Refusal } from "./answers.js"
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

/** One error's problem: its code, and the answer built from the error and the configured 503. */
export interface Entry<E> {
  readonly code: Problem.Code
  readonly answer: (error: E, unavailable: Response) => Response
}

type Table = { readonly [Tag in ServiceError["_tag"]]: Entry<Extract<ServiceError, { readonly _tag: Tag }>> }

/** Each declared error, by tag, with its problem. */
export const table: Table = {
  // Both are logged where the core calls the authenticator (internal/auth/principals.ts), a bounded number of times.
  InvalidToken: { code: "invalid_token", answer: () => Answers.INVALID_TOKEN },
  // The key set of a JWT authenticator cannot be fetched.
  AuthenticatorUnavailable: {
    code: "authenticator_unavailable",
    answer: (error) => Answers.authenticatorUnavailable(error.retryAfterMillis)
  },
  // The stored route is outside the prefixes the principal owns (`Ownership.guard`), decided by the store.
  OutsidePrefixes: { code: "insufficient_scope", answer: (error) => Answers.outsidePrefixes(error.path) },
  // Both name the id of the route the request named, which the store looked up.
  RouteNotFound: { code: "route_not_found", answer: (error) => Answers.routeNotFound(error.id) },
  PreconditionFailed: { code: "precondition_failed", answer: (error) => Answers.preconditionFailed(error.id) },
  RouteConflict: {
    code: "route_conflict",
    answer: (error) => Answers.conflict(error.method, error.path, error.conflictingRouteId, error.when)
  },
  StoreUnavailable: { code: "store_unavailable", answer: (_, unavailable) => unavailable },
  IdempotencyKeyReused: { code: "idempotency_key_reused", answer: (error) => Idempotency.keyReused(error.key) },
  IdempotencyKeyInUse: { code: "idempotency_key_in_use", answer: (error) => Idempotency.keyInUse(error.key) },
  TooManyIdempotencyKeys: {
    code: "too_many_idempotency_keys",
    answer: (error) => Answers.tooManyIdempotencyKeys(error)
  },
  TooManyMethods: {
    code: "too_many_methods",
    answer: (error) => Answers.tooManyMethods(error.method, error.limit)
  },
  // A read-only store the dispatch did not know of (no `RouteRepository.ReadOnly` beside it): the same 405.
  ReadOnlyStore: { code: "method_not_allowed", answer: () => Answers.READ_ONLY }
}

/** The answers of an operation's steps by the tag they fail with, for `Effect.catchTags`: a refusal carries its own. */
export type Cases = {
  readonly [Tag in ServiceError["_tag"] | "Refusal"]: (
    error: Extract<ServiceError | Refusal, { readonly _tag: Tag }>
  ) => Effect.Effect<Response>
}

/** The answer to each declared error, and to a refusal, with `unavailable` the configured 503: built once per core. */
export const cases = (unavailable: Response): Cases => {
  const cases: Record<string, (error: any) => Effect.Effect<Response>> = {
    Refusal: (refusal: Refusal) => Effect.succeed(refusal.response)
  }
  for (const [tag, entry] of Object.entries(table) as Array<[string, Entry<any>]>) {
    cases[tag] = (error) => Effect.succeed(entry.answer(error, unavailable))
  }
  return cases as Cases
}
