/**
 * What an authenticator fails with: here, not in `Authenticator`, so that the JWT authenticator (loaded by a dynamic
 * import from `Authenticator`) imports them without importing its importer.
 *
 * @internal
 */
import { Schema } from "effect"

/**
 * The token is not one the authenticator accepts (unknown, expired, badly signed, …). `reason` is for logs and
 * must never contain the token.
 *
 * @since 0.1.0
 */
export class InvalidToken extends Schema.TaggedError<InvalidToken>()("InvalidToken", {
  reason: Schema.String
}) {}

/**
 * The authenticator cannot decide now (an identity provider's key set cannot be fetched): the routing API answers
 * `503 authenticator_unavailable` with `Retry-After`, never a 401. `reason` is for logs and never contains the token.
 *
 * @since 0.4.0
 */
export class AuthenticatorUnavailable
  extends Schema.TaggedError<AuthenticatorUnavailable>()("AuthenticatorUnavailable", {
    reason: Schema.String,
    /** When trying again may succeed. */
    retryAfterMillis: Schema.Number
  })
{}
