/**
 * The JWT authenticator: bearer tokens verified with `jose`. The only module that imports `jose`, loaded by
 * `Authenticator.jwt` when a host asks for it, so that a host using static tokens never loads it.
 *
 * @internal
 */
import type { Context } from "effect"
import { Clock, Duration, Effect, Exit, Option, Redacted } from "effect"
import * as Jose from "jose"
import type { Authenticator, JwtAlgorithm, JwtOptions, Principal } from "../../Authenticator.js"
import { InvalidOption } from "../../InvalidOption.js"
import { AuthenticatorUnavailable, InvalidToken } from "./errors.js"
import { isPrintable } from "./principals.js"

const ASYMMETRIC: ReadonlyArray<JwtAlgorithm> = ["RS256", "PS256", "ES256", "EdDSA"]

/** The shortest HS256 secret: as long as the hash (RFC 7518 §3.2). */
export const MIN_SECRET_BYTES = 32

export const DEFAULT_COOLDOWN = Duration.seconds(30)
export const DEFAULT_CACHE_MAX_AGE = Duration.minutes(10)
export const DEFAULT_TIMEOUT = Duration.seconds(5)
export const DEFAULT_RETRY_AFTER = Duration.seconds(5)

/** The longest `actorPrefix`: it leaves most of a principal id's length to `sub`. */
export const MAX_ACTOR_PREFIX_LENGTH = 64

// The compact form: three base64url parts, the first a JSON header ("eyJ" is `{"` encoded). Anything else is refused
// at once, without jose: a static token presented to a combined authenticator costs nothing here.
const COMPACT = /^eyJ[A-Za-z0-9_-]*\.[A-Za-z0-9_-]*\.[A-Za-z0-9_-]*$/

const notAJwt = Exit.fail(new InvalidToken({ reason: "the token is not a JWT (three base64url parts)" }))

// The key set could not be fetched or read: what `keys` throws, so that it is told apart from a refused token.
class KeysUnreachable extends Error {
  constructor(readonly retryAfterMillis: number, readonly reason: string) {
    super(reason)
  }
}

// Built from jose's stable codes and a claim's name only: a reason never carries the token or a part of it.
const reasonOf = (error: unknown): string => {
  if (error instanceof Jose.errors.JWTClaimValidationFailed || error instanceof Jose.errors.JWTExpired) {
    return `${error.code}: the "${error.claim}" claim was refused (${error.reason})`
  }
  if (error instanceof Jose.errors.JOSEAlgNotAllowed) return `${error.code}: the token's algorithm is not accepted`
  if (error instanceof Jose.errors.JWKSNoMatchingKey) return `${error.code}: no key of the key set has the token's kid`
  return error instanceof Jose.errors.JOSEError ? error.code : "the token could not be verified"
}

// OAuth writes scopes as one space-separated string (RFC 8693 §4.2); some providers (`scp`) as an array of strings.
const scopesFrom = (value: unknown): ReadonlyArray<string> | undefined => {
  if (typeof value === "string") return value.split(" ").filter((scope) => scope !== "")
  if (Array.isArray(value)) return value.filter((scope): scope is string => typeof scope === "string")
  return undefined
}

const scopesOf = (payload: Jose.JWTPayload, claim: string | undefined): ReadonlyArray<string> =>
  claim !== undefined ? scopesFrom(payload[claim]) ?? [] : scopesFrom(payload.scope) ?? scopesFrom(payload.scp) ?? []

const invalid = (option: string, message: string) => new InvalidOption({ option, message })

const millis = (option: string, input: Duration.DurationInput | undefined, fallback: Duration.Duration) => {
  const duration = input === undefined ? Option.some(fallback) : Duration.decodeUnknown(input)
  if (Option.isNone(duration) || !Duration.isFinite(duration.value)) {
    throw invalid(option, `${option} must be a finite duration, such as "30 seconds"`)
  }
  return Duration.toMillis(duration.value)
}

type Key = Parameters<typeof Jose.jwtVerify>[1]

// The algorithms the options pin, each checked against the kind of key.
const algorithmsOf = (options: JwtOptions, defaults: ReadonlyArray<JwtAlgorithm>): ReadonlyArray<JwtAlgorithm> => {
  const algorithms = options.algorithms ?? defaults
  if (!Array.isArray(algorithms) || algorithms.length === 0) {
    throw invalid("algorithms", `algorithms must be a non-empty list of ${defaults.join(", ")}`)
  }
  for (const algorithm of algorithms) {
    if (!defaults.includes(algorithm)) {
      throw invalid(
        "algorithms",
        `${JSON.stringify(algorithm)} cannot be used with this kind of key: use ${defaults.join(", ")}`
      )
    }
  }
  return algorithms
}

// After a failed fetch of the key set, no other is tried before `retryAfter`: meanwhile the requests that need it are
// answered 503 at once, rather than each waiting for a provider that is down.
const remoteKeys = (
  options: JwtOptions,
  url: URL,
  clock: Clock.Clock
): Jose.JWTVerifyGetKey => {
  const retryAfter = millis("retryAfter", options.retryAfter, DEFAULT_RETRY_AFTER)
  let failedUntil = 0
  const fetchKeys: Jose.FetchImplementation = (href, init) => {
    const now = clock.unsafeCurrentTimeMillis()
    if (now < failedUntil) return Promise.reject(new KeysUnreachable(failedUntil - now, "a recent fetch failed"))
    return fetch(href, init).then((response) => {
      if (response.status !== 200) failedUntil = clock.unsafeCurrentTimeMillis() + retryAfter
      return response
    }, (error: unknown) => {
      failedUntil = clock.unsafeCurrentTimeMillis() + retryAfter
      throw error
    })
  }
  const remote = Jose.createRemoteJWKSet(url, {
    cooldownDuration: millis("cooldown", options.cooldown, DEFAULT_COOLDOWN),
    cacheMaxAge: millis("cacheMaxAge", options.cacheMaxAge, DEFAULT_CACHE_MAX_AGE),
    timeoutDuration: Math.round(millis("timeout", options.timeout, DEFAULT_TIMEOUT)),
    [Jose.customFetch]: fetchKeys
  })
  return (header, token) =>
    remote(header, token).catch((error: unknown) => {
      // A key set that was fetched but has no key for the token, or several: the token is refused.
      if (error instanceof Jose.errors.JWKSNoMatchingKey || error instanceof Jose.errors.JWKSMultipleMatchingKeys) {
        throw error
      }
      if (error instanceof KeysUnreachable) throw error
      failedUntil = Math.max(failedUntil, clock.unsafeCurrentTimeMillis() + retryAfter)
      throw new KeysUnreachable(retryAfter, error instanceof Jose.errors.JOSEError ? error.code : "fetch failed")
    })
}

// A PEM public key, imported once for each algorithm its kind allows; the token's (pinned) algorithm picks one.
const pemKeys = async (
  pem: string,
  options: JwtOptions
): Promise<{ readonly algorithms: ReadonlyArray<JwtAlgorithm>; readonly key: Key }> => {
  const wanted = algorithmsOf(options, ASYMMETRIC)
  const imported = await Promise.all(
    wanted.map((algorithm) => Jose.importSPKI(pem, algorithm).then((key) => [algorithm, key] as const, () => undefined))
  )
  const usable = new Map(imported.filter((entry) => entry !== undefined))
  if (usable.size === 0) {
    throw invalid(
      "publicKey",
      "publicKey must be a PEM public key (-----BEGIN PUBLIC KEY-----) of a kind the algorithms allow: RSA for " +
        "RS256 or PS256, P-256 for ES256, Ed25519 for EdDSA"
    )
  }
  const refused = wanted.filter((algorithm) => !usable.has(algorithm))
  if (options.algorithms !== undefined && refused.length > 0) {
    throw invalid("algorithms", `the public key cannot verify ${refused.join(", ")}: pin only the key's algorithms`)
  }
  return {
    algorithms: [...usable.keys()],
    key: ((header: Jose.JWSHeaderParameters) => usable.get(header.alg as JwtAlgorithm)!) as Jose.JWTVerifyGetKey
  }
}

const secretKey = (secret: Redacted.Redacted<string>, options: JwtOptions) => {
  const key = typeof Redacted.value(secret) === "string" ? new TextEncoder().encode(Redacted.value(secret)) : undefined
  if (key === undefined || key.length < MIN_SECRET_BYTES) {
    throw invalid(
      "secret",
      `the HS256 secret must be at least ${MIN_SECRET_BYTES} bytes long (got ${key?.length ?? 0}): use a random ` +
        "secret such as the output of `openssl rand -base64 48`"
    )
  }
  return { algorithms: algorithmsOf(options, ["HS256"]), key }
}

const keysOf = async (options: JwtOptions, clock: Clock.Clock) => {
  const given = [options.jwksUrl, options.publicKey, options.secret].filter((key) => key !== undefined)
  if (given.length !== 1) {
    throw invalid("jwksUrl", "give exactly one of jwksUrl (an identity provider's jwks_uri), publicKey or secret")
  }
  if (options.secret !== undefined) return secretKey(options.secret, options)
  if (options.publicKey !== undefined) return pemKeys(options.publicKey, options)
  const url = URL.canParse(String(options.jwksUrl)) ? new URL(String(options.jwksUrl)) : undefined
  if (url === undefined || !/^https?:$/.test(url.protocol)) {
    throw invalid("jwksUrl", "jwksUrl must be an http:// or https:// URL: the identity provider's jwks_uri")
  }
  return { algorithms: algorithmsOf(options, ASYMMETRIC), key: remoteKeys(options, url, clock) }
}

const checkClaims = (options: JwtOptions) => {
  if (typeof options.issuer !== "string" || options.issuer === "") {
    throw invalid("issuer", "issuer must be the identity provider's issuer (the iss of its tokens)")
  }
  const audiences = typeof options.audience === "string" ? [options.audience] : options.audience
  if (!Array.isArray(audiences) || audiences.length === 0 || audiences.some((a) => typeof a !== "string" || a === "")) {
    throw invalid("audience", "audience must name this API as the identity provider writes it in aud")
  }
  if (options.scopeClaim !== undefined && (typeof options.scopeClaim !== "string" || options.scopeClaim === "")) {
    throw invalid("scopeClaim", "scopeClaim must be the name of the claim that holds the scopes, such as scope")
  }
  return audiences
}

const actorPrefixOf = (options: JwtOptions): string => {
  const prefix: unknown = options.actorPrefix ?? ""
  if (typeof prefix !== "string" || prefix.length > MAX_ACTOR_PREFIX_LENGTH || !isPrintable(prefix)) {
    throw invalid(
      "actorPrefix",
      `actorPrefix must be at most ${MAX_ACTOR_PREFIX_LENGTH} printable characters, such as "jwt:"`
    )
  }
  return prefix
}

// jose checks `iat` only against a maximum age; a token issued in the future is refused here, as `nbf` is.
const issuedInTheFuture = (payload: Jose.JWTPayload, nowMillis: number, toleranceSeconds: number): boolean =>
  typeof payload.iat === "number" && payload.iat > Math.floor(nowMillis / 1000) + toleranceSeconds

// The principal of a verified token: it expires when the token stops being accepted, `exp` and the tolerance past it.
const principalOf = (
  payload: Jose.JWTPayload,
  claim: string | undefined,
  prefix: string,
  toleranceSeconds: number
): Effect.Effect<Principal, InvalidToken> =>
  typeof payload.sub === "string" && payload.sub !== ""
    ? Exit.succeed({
      id: prefix + payload.sub,
      scopes: scopesOf(payload, claim),
      ...(typeof payload.exp === "number" ? { expiresAt: new Date((payload.exp + toleranceSeconds) * 1000) } : {})
    })
    : Exit.fail(new InvalidToken({ reason: "the \"sub\" claim is not a non-empty string" }))

const FUTURE_IAT = Exit.fail(
  new InvalidToken({
    reason: "the \"iat\" claim was refused: the token is issued in the future, beyond the clock tolerance"
  })
)

/** The authenticator of `options`, or the `InvalidOption` that names what is wrong with them. */
export const make = (
  options: JwtOptions
): Effect.Effect<Context.Tag.Service<Authenticator>, InvalidOption> =>
  Effect.flatMap(Effect.clock, (clock) =>
    Effect.tryPromise({
      try: async () => {
        const audience = checkClaims(options)
        const prefix = actorPrefixOf(options)
        const clockTolerance = millis("clockTolerance", options.clockTolerance, Duration.zero) / 1000
        const { algorithms, key } = await keysOf(options, clock)
        const verify = {
          // Pinned: the token's own header never chooses the algorithm (no "none", no HS/RS confusion).
          algorithms: [...algorithms],
          issuer: options.issuer,
          audience: [...audience],
          // A token without an expiry would be valid for ever; without a subject, no principal could be named.
          requiredClaims: ["exp", "sub"],
          clockTolerance
        }
        return { key, prefix, verify }
      },
      catch: (error) =>
        error instanceof InvalidOption ? error : invalid("jwt", `the JWT options could not be used: ${String(error)}`)
    })).pipe(Effect.map(({ key, prefix, verify }) => ({
      authenticate: (token: Redacted.Redacted<string>) => {
        const compact = Redacted.value(token)
        if (!COMPACT.test(compact)) return notAJwt
        return Effect.flatMap(
          Clock.currentTimeMillis,
          (now) =>
            Effect.tryPromise({
              // Effect's clock, not Date.now: tests move time with TestClock.
              try: () => Jose.jwtVerify(compact, key, { ...verify, currentDate: new Date(now) }),
              catch: (error) =>
                error instanceof KeysUnreachable
                  ? new AuthenticatorUnavailable({
                    reason: `the key set at the JWKS URL could not be fetched: ${error.reason}`,
                    retryAfterMillis: error.retryAfterMillis
                  })
                  : new InvalidToken({ reason: reasonOf(error) })
            }).pipe(Effect.flatMap(({ payload }) =>
              issuedInTheFuture(payload, now, verify.clockTolerance)
                ? FUTURE_IAT
                : principalOf(payload, options.scopeClaim, prefix, verify.clockTolerance)
            ))
        )
      }
    })))
