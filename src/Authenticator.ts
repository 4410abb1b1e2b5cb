/**
 * Authentication is the host's choice: the library asks an `Authenticator` who holds a bearer token. It ships one
 * implementation, a static list of tokens; hosts plug in their own (JWT, an identity provider, API keys in a
 * database) without touching the HTTP code.
 *
 * @since 0.1.0
 */
import { Context, Effect, Exit, Layer, Redacted, Schema } from "effect"
import { InvalidOption } from "./InvalidOption.js"

/**
 * The permissions the routing API checks: `routes:read` to get, `routes:write` to create.
 *
 * @since 0.1.0
 */
export const Scope = Schema.Literal("routes:read", "routes:write")

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
}

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
 * Turns a bearer token into a principal. An implementation that decides without waiting may return a completed
 * Effect (an `Exit`); the HTTP core then answers without starting a fiber.
 *
 * @since 0.1.0
 */
export class Authenticator extends Context.Tag("route-registry/Authenticator")<Authenticator, {
  readonly authenticate: (token: Redacted.Redacted<string>) => Effect.Effect<Principal, InvalidToken>
}>() {}

/**
 * One accepted token of a static list.
 *
 * @since 0.1.0
 */
export interface StaticToken {
  readonly token: Redacted.Redacted<string>
  readonly scopes: ReadonlyArray<Scope>
  /** Names the principal in logs; default `token-<n>` (its position in the list). */
  readonly id?: string | undefined
}

// Equal strings give 0 and every comparison walks the whole presented token: the time taken depends only on the
// presented token's length, never on how much of a configured token it matches.
const difference = (presented: string, configured: string): number => {
  let diff = presented.length ^ configured.length
  for (let i = 0; i < presented.length; i++) diff |= presented.charCodeAt(i) ^ (configured.charCodeAt(i) | 0)
  return diff
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
      const id = tokens[i]?.id
      return new InvalidOption({
        option: `tokens[${i}]`,
        message: `static token ${i + 1}${typeof id === "string" ? ` (${id})` : ""} ${problem}`
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
  const entries = tokens.map((entry, i) => ({
    token: Redacted.value(entry.token),
    principal: { id: entry.id ?? `token-${i + 1}`, scopes: entry.scopes } satisfies Principal
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
