/**
 * Authentication is the host's choice: the library asks an `Authenticator` who holds a bearer token. It ships two
 * implementations, a static list of tokens and JWTs verified with `jose` (`jwt`), and one way to combine two
 * (`orElse`); hosts plug in their own (API keys in a database, say) without touching the HTTP code.
 * docs/authentication.md says how to configure each.
 *
 * @since 0.1.0
 */
import type { Duration } from "effect"
import { Context, Effect, Exit, Layer, Redacted, Schema } from "effect"
import { createHash } from "node:crypto"
import { type AuthenticatorUnavailable, InvalidToken } from "./internal/auth/errors.js"
import { TOKEN_IN_TEXT } from "./internal/auth/principals.js"
import * as Scopes from "./internal/auth/scopes.js"
import { InvalidOption } from "./InvalidOption.js"

/**
 * The permissions the routing API checks: `routes:read` to get and list, `routes:write` to create, update, restore
 * and delete any route, `routes:write:<prefix>` (such as `routes:write:/payments`) to do so only for routes whose path
 * is the prefix or starts with it followed by `/`. A prefix is a valid path of static segments. `fleet:report` (0.5.0),
 * besides `routes:read`, lets a follower name itself in the fleet and report the revision it applied.
 *
 * @since 0.1.0
 */
export const Scope = Schema.Union(
  Schema.Literal("routes:read", "routes:write", "fleet:report"),
  Schema.TemplateLiteral(Schema.Literal("routes:write:"), Schema.String)
)

/**
 * @since 0.1.0
 */
export type Scope = typeof Scope.Type

// RFC 6750 §2.1: b64token = 1*( ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/" ) *"="
const TOKEN68 = /^[A-Za-z0-9\-._~+/]+=*$/

/**
 * `true` when `token` has the form of a bearer credential (RFC 6750 §2.1): letters, digits and `- . _ ~ + /`,
 * optionally followed by `=` padding. A token of any other form could never be presented in a header.
 *
 * @since 0.1.0
 */
export const isWellFormedToken = (token: string): boolean => TOKEN68.test(token)

/**
 * Who made a request, and what it may do.
 *
 * @since 0.1.0
 */
export interface Principal {
  readonly id: string
  readonly scopes: ReadonlyArray<string>
  /**
   * When the credential stops being valid (a JWT's `exp`), if it does: a change stream opened with it ends then, with an
   * `expired` event (docs/scaling-out.md). Static tokens never expire.
   *
   * @since 0.5.0
   */
  readonly expiresAt?: Date | undefined
}

export {
  /**
   * The authenticator cannot decide now (an identity provider's key set cannot be fetched): the routing API answers
   * `503 authenticator_unavailable` with `Retry-After`, never a 401.
   *
   * @since 0.4.0
   */
  AuthenticatorUnavailable,
  /**
   * The token is not one the authenticator accepts (unknown, expired, badly signed, …).
   *
   * @since 0.1.0
   */
  InvalidToken
} from "./internal/auth/errors.js"

/**
 * Turns a bearer token into a principal. An implementation that decides without waiting may return a completed
 * Effect (an `Exit`); the HTTP core then answers without starting a fiber.
 *
 * @since 0.1.0
 */
export class Authenticator extends Context.Tag("route-registry/Authenticator")<Authenticator, {
  readonly authenticate: (
    token: Redacted.Redacted<string>
  ) => Effect.Effect<Principal, InvalidToken | AuthenticatorUnavailable>
}>() {}

/**
 * One accepted token of a static list.
 *
 * @since 0.1.0
 */
export interface StaticToken {
  readonly token: Redacted.Redacted<string>
  readonly scopes: ReadonlyArray<Scope>
  /**
   * The principal's id (`alice`), in logs and in the change log; default `token-` and the first 12 hex digits of the
   * token's SHA-256 (`principalIdOf`), so that an id never contains the token.
   */
  readonly id?: string | undefined
}

// Equal strings give 0 and every comparison walks the whole presented token: the time taken depends only on the
// presented token's length, never on how much of a configured token it matches.
const difference = (presented: string, configured: string): number => {
  let diff = presented.length ^ configured.length
  for (let i = 0; i < presented.length; i++) diff |= presented.charCodeAt(i) ^ (configured.charCodeAt(i) | 0)
  return diff
}

/**
 * Why `scope` is not a scope the routing API knows (`routes:read`, `routes:write`, or `routes:write:<prefix>` with a
 * valid path of static segments other than `/` as the prefix), or `undefined`: for scopes a host configures.
 *
 * @since 0.4.0
 */
export const checkScope: (scope: unknown) => string | undefined = Scopes.checkScope

/**
 * The principal id of an unnamed token: `token-` and the first 12 hex digits of its SHA-256. It tells tokens apart in
 * logs and the change log without containing the token (nor enough of its hash to search for it).
 *
 * @since 0.4.0
 */
export const principalIdOf = (token: Redacted.Redacted<string>): string =>
  `token-${createHash("sha256").update(Redacted.value(token), "utf8").digest("hex").slice(0, 12)}`

// A principal's name: what logs, the change log and an actor filter show; printable, without spaces or "=".
const NAME = /^[A-Za-z0-9][A-Za-z0-9._@+-]{0,127}$/

// The problem with a principal's name, or undefined. The token is never part of the message.
const checkName = (name: unknown, token: string): string | undefined => {
  if (typeof name !== "string" || !NAME.test(name)) {
    return "has a name that is not 1–128 letters, digits and . _ @ + - (starting with a letter or digit)"
  }
  return token.length >= TOKEN_IN_TEXT && name.includes(token)
    ? "has a name that contains its token: a principal id must never show the token"
    : undefined
}

/**
 * One entry of a token list as `npm start` reads it: `name=token` names the principal, a bare `token` is named by
 * `principalIdOf`. A bearer token only ever has `=` as padding at its end, so an entry with `=` followed by anything
 * else is a name and a token.
 *
 * @since 0.4.0
 */
export const parseTokenEntry = (entry: string): { readonly id: string; readonly token: Redacted.Redacted<string> } => {
  const equals = entry.indexOf("=")
  const named = equals > 0 && /[^=]/.test(entry.slice(equals + 1))
  const token = Redacted.make(named ? entry.slice(equals + 1) : entry)
  return { id: named ? entry.slice(0, equals) : principalIdOf(token), token }
}

// The problem with one entry of a static list, or undefined. The value of a token is never part of the message.
const checkEntry = (entry: StaticToken | null | undefined): string | undefined => {
  if (typeof entry !== "object" || entry === null) return "is not an object: give { token, scopes }"
  if (!Redacted.isRedacted(entry.token)) return "has a token that is not Redacted: wrap it with Redacted.make"
  const token: unknown = Redacted.value(entry.token)
  if (typeof token !== "string") {
    return `has a token that is ${
      token === undefined ? "undefined (an unset environment variable?)" : `a ${typeof token}`
    }, not a string: set it to the token text`
  }
  if (token === "") return "has an empty token: set it to the token text, or leave the entry out"
  if (!isWellFormedToken(token)) {
    return "is not a well-formed bearer token: use letters, digits and - . _ ~ + / only, optionally followed by = padding"
  }
  if (!Array.isArray(entry.scopes)) return "has no scopes array: give scopes such as [\"routes:read\"]"
  for (let i = 0; i < entry.scopes.length; i++) {
    const problem = Scopes.checkScope(entry.scopes[i])
    if (problem !== undefined) return `has an unusable scopes[${i}]: ${problem}`
  }
  if (entry.id !== undefined) return checkName(entry.id, token)
  return undefined
}

/**
 * The first entry of `tokens` that could never authenticate anyone (a token that is not a non-empty, well-formed
 * string in a `Redacted`, or no scopes array), as an `InvalidOption` naming it; `undefined` when all are usable.
 *
 * @since 0.2.0
 */
export const checkStaticTokens = (tokens: ReadonlyArray<StaticToken>): InvalidOption | undefined => {
  if (!Array.isArray(tokens)) return new InvalidOption({ option: "tokens", message: "tokens must be an array" })
  for (let i = 0; i < tokens.length; i++) {
    const problem = checkEntry(tokens[i])
    if (problem !== undefined) {
      // The name is shown only when it is a plain name that cannot be showing the token.
      const id = tokens[i]?.id
      const token: unknown = Redacted.isRedacted(tokens[i]?.token) ? Redacted.value(tokens[i]!.token) : undefined
      const shown = typeof id === "string" && typeof token === "string" && checkName(id, token) === undefined
      return new InvalidOption({
        option: `tokens[${i}]`,
        message: `static token ${i + 1}${shown ? ` (${id})` : ""} ${problem}`
      })
    }
  }
  return undefined
}

/**
 * An authenticator over a fixed list of tokens; it throws the `InvalidOption` of `checkStaticTokens` if an entry
 * could never authenticate anyone. The presented token is compared with every configured token in constant time
 * (no early exit, within a token or across the list), so the time taken reveals neither a token nor which one
 * matched.
 *
 * @since 0.1.0
 */
export const makeStaticTokens = (tokens: ReadonlyArray<StaticToken>): Context.Tag.Service<Authenticator> => {
  // Such a token could never be presented: refuse the configuration rather than a caller, later.
  const unusable = checkStaticTokens(tokens)
  if (unusable !== undefined) throw unusable
  const entries = tokens.map((entry) => ({
    token: Redacted.value(entry.token),
    principal: { id: entry.id ?? principalIdOf(entry.token), scopes: entry.scopes } satisfies Principal
  }))
  const invalid = Exit.fail(new InvalidToken({ reason: "the token is not one of the configured tokens" }))
  return Authenticator.of({
    // A pure function of the token and a fixed list, so it is decided at once and returned completed (an Exit):
    // the HTTP core then answers without starting a fiber.
    authenticate: (token) => {
      const presented = Redacted.value(token)
      let found: Principal | undefined
      for (const entry of entries) {
        if (difference(presented, entry.token) === 0 && found === undefined) found = entry.principal
      }
      return found === undefined ? invalid : Exit.succeed(found)
    }
  })
}

/**
 * `makeStaticTokens` as a layer, failing with `InvalidOption` when it is built if an entry is unusable.
 *
 * @since 0.1.0
 */
export const layerStaticTokens = (tokens: ReadonlyArray<StaticToken>): Layer.Layer<Authenticator, InvalidOption> => {
  const invalid = checkStaticTokens(tokens)
  return invalid === undefined ? Layer.succeed(Authenticator, makeStaticTokens(tokens)) : Layer.fail(invalid)
}

/**
 * An authenticator that asks `self` first and `that` only for a token `self` refuses (`InvalidToken`): static tokens
 * in front of JWTs, say. `self`'s unavailability is answered as is. A token `self` decides at once (an `Exit`) stays
 * decided at once.
 *
 * @since 0.4.0
 */
export const orElse = (
  self: Context.Tag.Service<Authenticator>,
  that: Context.Tag.Service<Authenticator>
): Context.Tag.Service<Authenticator> =>
  Authenticator.of({
    authenticate: (token) => {
      const first = self.authenticate(token)
      if (!Exit.isExit(first)) return Effect.catchTag(first, "InvalidToken", () => that.authenticate(token))
      if (Exit.isSuccess(first)) return first
      const failure = first.cause._tag === "Fail" ? first.cause.error : undefined
      return failure instanceof InvalidToken ? that.authenticate(token) : first
    }
  })

/**
 * The algorithms a JWT may be signed with; the options pin them, the token never chooses.
 *
 * @since 0.4.0
 */
export type JwtAlgorithm = "RS256" | "PS256" | "ES256" | "EdDSA" | "HS256"

/**
 * How `jwt` verifies a token. Exactly one of `jwksUrl`, `publicKey` and `secret` gives the keys.
 *
 * @since 0.4.0
 */
export interface JwtOptions {
  /** The identity provider's `jwks_uri`: its key set, fetched and cached; the key chosen by the token's `kid`. */
  readonly jwksUrl?: string | URL | undefined
  /** A PEM public key (`-----BEGIN PUBLIC KEY-----`): RSA (RS256, PS256), P-256 (ES256) or Ed25519 (EdDSA). */
  readonly publicKey?: string | undefined
  /** An HS256 secret of at least 32 bytes; a shorter one is refused when the authenticator is built. */
  readonly secret?: Redacted.Redacted<string> | undefined
  /** The `iss` every token must carry, exactly. */
  readonly issuer: string
  /** This API as the provider names it: the token's `aud` must contain one of them. */
  readonly audience: string | ReadonlyArray<string>
  /**
   * The accepted algorithms. Default: RS256, PS256, ES256 and EdDSA with `jwksUrl`; those the key's kind allows with
   * `publicKey`; HS256 with `secret` (the only one it allows).
   */
  readonly algorithms?: ReadonlyArray<JwtAlgorithm> | undefined
  /**
   * Leeway for `exp`, `nbf` and `iat` against clock skew between the provider and this host: a token issued (`iat`)
   * further in the future than this is refused. Default none.
   */
  readonly clockTolerance?: Duration.DurationInput | undefined
  /**
   * Prefixed to `sub` to make the principal id, the actor the change log records (`jwt:` makes `sub: "alice"` the
   * actor `jwt:alice`, which no static token's name can be, since names hold no `:`). At most 64 printable characters.
   * Default none: the principal id is `sub` as it is.
   */
  readonly actorPrefix?: string | undefined
  /** The claim that holds the scopes. Default: `scope` (space-separated), else `scp` (an array, or space-separated). */
  readonly scopeClaim?: string | undefined
  /** With `jwksUrl`: the least time between two fetches caused by a token of an unknown `kid`. Default 30 s. */
  readonly cooldown?: Duration.DurationInput | undefined
  /** With `jwksUrl`: how long a fetched key set is used before it is fetched again. Default 10 min. */
  readonly cacheMaxAge?: Duration.DurationInput | undefined
  /** With `jwksUrl`: the longest a fetch may take. Default 5 s. */
  readonly timeout?: Duration.DurationInput | undefined
  /**
   * With `jwksUrl`: after a failed fetch, how long requests that need the key set are answered 503 at once before
   * another fetch is tried. Default 5 s.
   */
  readonly retryAfter?: Duration.DurationInput | undefined
}

/**
 * An authenticator of JWT bearer tokens, verified with `jose` (loaded only when this is called): the signature with
 * the keys of the options, `iss` and `aud` against the options, `exp` required, `nbf` honoured and an `iat` in the
 * future refused, all on Effect's `Clock`. The principal is `actorPrefix` followed by `sub` (required), its scopes the
 * scope claim. A token refused is `InvalidToken` with a reason that never contains it; a key set that cannot be fetched
 * is `AuthenticatorUnavailable`. Options that could never verify a token (a secret under 32 bytes, no issuer…) fail
 * with `InvalidOption` naming the option.
 *
 * @since 0.4.0
 */
export const jwt = (options: JwtOptions): Effect.Effect<Context.Tag.Service<Authenticator>, InvalidOption> =>
  Effect.flatMap(
    Effect.promise(() => import("./internal/auth/jwt.js")),
    (Jwt) => Jwt.make(options)
  )

/**
 * `jwt` as a layer.
 *
 * @since 0.4.0
 */
export const layerJwt = (options: JwtOptions): Layer.Layer<Authenticator, InvalidOption> =>
  Layer.effect(Authenticator, jwt(options))
