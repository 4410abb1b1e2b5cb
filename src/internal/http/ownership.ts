/**
 * Owners of path prefixes (docs/authentication.md): what a principal holding `routes:write:<prefix>` scopes may write, checked on
 * the request's path before the store, and on the stored route's path by the store itself, atomically with the
 * write (`Precondition.pathPrefixes`).
 *
 * @internal
 */
import { Effect } from "effect"
import type { Principal } from "../../Authenticator.js"
import type { Precondition } from "../../RouteRepository.js"
import * as Scopes from "../auth/scopes.js"
import * as Answers from "./answers.js"
import { type Refusal, refuse } from "./answers.js"

/** `true` when `scopes` hold `scope`: for `routes:write`, the scope itself or a prefix scope of it. */
export const holds = (scopes: ReadonlyArray<string>, scope: string): boolean =>
  scope === Scopes.WRITE ? Scopes.writeGrant(scopes) !== undefined : scopes.includes(scope)

/** `input` when the principal may write a route at its path (none given: nothing to check), else the 403. */
export const mayWrite = <A extends { readonly path?: string | undefined }>(
  principal: Principal,
  input: A
): Effect.Effect<A, Refusal> => {
  const grant = Scopes.writeGrant(principal.scopes)
  return input.path === undefined || (grant !== undefined && Scopes.allows(grant, input.path))
    ? Effect.succeed(input)
    : refuse(Answers.outsidePrefixes(input.path))
}

/** `precondition`, limited to the principal's prefixes when it owns prefixes rather than every route. */
export const guard = (principal: Principal, precondition: Precondition | undefined): Precondition | undefined => {
  const grant = Scopes.writeGrant(principal.scopes)
  return grant === "all" ? precondition : { ...precondition, pathPrefixes: grant ?? [] }
}
