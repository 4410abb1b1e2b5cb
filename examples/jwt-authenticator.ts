/**
 * A second `Authenticator`: bearer tokens are HS256 JWTs, and the scopes come from their OAuth `scope` claim.
 * The HTTP code is unchanged; only the layer providing `Authenticator` differs.
 *
 *   npx tsx examples/jwt-authenticator.ts   # PORT (default 3004), HOST, JWT_SECRET, JWT_ISSUER, JWT_AUDIENCE
 */
import type { Context } from "effect"
import { Cause, Clock, Duration, Effect, Layer, Redacted } from "effect"
import { errors, jwtVerify, SignJWT } from "jose"
import { randomBytes } from "node:crypto"
import * as Authenticator from "route-registry/Authenticator"
import * as NodeListener from "route-registry/NodeListener"
import * as RouteRepository from "route-registry/RouteRepository"
import * as Env from "./env.js"

export interface JwtOptions {
  /** The shared HS256 secret: at least 32 bytes, as long as the hash (RFC 7518 §3.2). */
  readonly secret: Redacted.Redacted<string>
  /** The `iss` every token must carry. */
  readonly issuer: string
  /** A value the token's `aud` must contain: this service's name, so tokens minted for another are refused. */
  readonly audience: string
  /** Leeway for `exp` and `nbf` against clock skew between the issuer and this host. Default none. */
  readonly clockTolerance?: Duration.DurationInput | undefined
}

// Built from jose's stable codes and the claim's name only: a message must never carry the token (or part of it).
const reasonOf = (error: unknown): string => {
  if (error instanceof errors.JWTClaimValidationFailed || error instanceof errors.JWTExpired) {
    return `${error.code}: the "${error.claim}" claim was refused (${error.reason})`
  }
  return error instanceof errors.JOSEError ? error.code : "the token could not be verified"
}

// OAuth 2.0 writes scopes as one space-separated string (RFC 8693 §4.2).
const scopesOf = (scope: unknown): ReadonlyArray<string> =>
  typeof scope === "string" ? scope.split(" ").filter((s) => s !== "") : []

export const makeJwt = (
  options: JwtOptions
): Effect.Effect<Context.Tag.Service<Authenticator.Authenticator>, Cause.IllegalArgumentException> =>
  Effect.suspend(() => {
    const key = new TextEncoder().encode(Redacted.value(options.secret))
    if (key.length < 32) {
      return Effect.fail(new Cause.IllegalArgumentException("the JWT secret must be at least 32 bytes long"))
    }
    const verify = {
      // Pinned: the token's own header must not choose the algorithm (no "none", no RS/HS confusion).
      algorithms: ["HS256"],
      issuer: options.issuer,
      audience: options.audience,
      // A token without an expiry would be valid for ever; without a subject, nobody could be named in logs.
      requiredClaims: ["exp", "sub"],
      ...(options.clockTolerance === undefined
        ? {}
        : { clockTolerance: Duration.toSeconds(options.clockTolerance) })
    }
    return Effect.succeed(Authenticator.Authenticator.of({
      authenticate: (token) =>
        Effect.flatMap(Clock.currentTimeMillis, (now) =>
          Effect.tryPromise({
            // Effect's clock, not Date.now: tests can move time with TestClock.
            try: () => jwtVerify(Redacted.value(token), key, { ...verify, currentDate: new Date(now) }),
            catch: (error) => new Authenticator.InvalidToken({ reason: reasonOf(error) })
          })).pipe(
            Effect.flatMap(({ payload }) =>
              typeof payload.sub === "string"
                ? Effect.succeed({ id: payload.sub, scopes: scopesOf(payload.scope) })
                : Effect.fail(new Authenticator.InvalidToken({ reason: "the \"sub\" claim is not a string" }))
            )
          )
    }))
  })

export const layerJwt = (
  options: JwtOptions
): Layer.Layer<Authenticator.Authenticator, Cause.IllegalArgumentException> =>
  Layer.effect(Authenticator.Authenticator, makeJwt(options))

if (Env.isMain(import.meta.url)) {
  const options = {
    secret: Redacted.make(process.env.JWT_SECRET || randomBytes(32).toString("hex")),
    issuer: process.env.JWT_ISSUER || "https://issuer.example",
    audience: process.env.JWT_AUDIENCE || "route-registry"
  }
  if (!process.env.JWT_SECRET) {
    // Stands in for the identity provider, so the API can be tried with curl at once.
    const token = await new SignJWT({ scope: "routes:read routes:write" }).setProtectedHeader({ alg: "HS256" })
      .setSubject("example-admin").setIssuer(options.issuer).setAudience(options.audience).setExpirationTime("1h")
      .sign(new TextEncoder().encode(Redacted.value(options.secret)))
    console.log(`no JWT_SECRET set; a token valid for one hour: ${token}`)
  }
  const listener = await NodeListener.fromLayer(Layer.merge(RouteRepository.layerMemory, layerJwt(options)))
  Env.serve(listener, 3004, listener.dispose)
}
