/**
 * `Authenticator.jwt` (docs/authentication.md) against a JWKS server of its own on 127.0.0.1, a PEM key and an HS256 secret.
 */
import { assert, describe, it, onTestFinished } from "@effect/vitest"
import { Effect, Exit, Layer, Redacted, TestClock } from "effect"
import type { CryptoKey, JWK } from "jose"
import { exportJWK, exportSPKI, generateKeyPair, SignJWT, UnsecuredJWT } from "jose"
import * as Http from "node:http"
import type { AddressInfo } from "node:net"
import * as Authenticator from "route-registry/Authenticator"
import * as InvalidOption from "route-registry/InvalidOption"
import * as RouteRepository from "route-registry/RouteRepository"
import { nodeListener } from "./utils/adapters.js"
import { assertProblem, get, post } from "./utils/httpContract.js"
import * as TestDatabase from "./utils/TestDatabase.js"

const ISSUER = "https://idp.test/realms/routing"
const AUDIENCE = "route-registry"
const SECRET = "a-test-secret-of-at-least-32-bytes!"

interface SigningKey {
  readonly alg: string
  readonly kid: string
  readonly privateKey: CryptoKey
  readonly jwk: JWK
  readonly spki: string
}

const signingKey = async (alg: string, kid: string): Promise<SigningKey> => {
  const { privateKey, publicKey } = await generateKeyPair(alg, { extractable: true })
  return {
    alg,
    kid,
    privateKey,
    jwk: { ...await exportJWK(publicKey), kid, alg, use: "sig" },
    spki: await exportSPKI(publicKey)
  }
}

const inAnHour = () => Math.floor(Date.now() / 1000) + 3600

const claims = (extra: Record<string, unknown> = {}) => ({
  sub: "alice",
  iss: ISSUER,
  aud: AUDIENCE,
  exp: inAnHour(),
  scope: "routes:read routes:write",
  ...extra
})

const sign = (key: SigningKey, extra: Record<string, unknown> = {}, kid: string = key.kid) =>
  new SignJWT(claims(extra)).setProtectedHeader({ alg: key.alg, kid }).sign(key.privateKey)

const signHs = (extra: Record<string, unknown> = {}, secret: string | Uint8Array = SECRET) =>
  new SignJWT(claims(extra)).setProtectedHeader({ alg: "HS256" }).sign(
    typeof secret === "string" ? new TextEncoder().encode(secret) : secret
  )

/** An identity provider's JWKS endpoint: its keys can change, and it can go down. */
const jwksServer = async () => {
  const state = { keys: [] as Array<JWK>, down: false, fetches: 0 }
  const server = Http.createServer((_req, res) => {
    state.fetches++
    if (state.down) return res.writeHead(503).end()
    res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ keys: state.keys }))
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  onTestFinished(() => new Promise<void>((resolve) => server.close(() => resolve())))
  return { state, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/certs` }
}

const authenticate = (authenticator: Verifier, token: string) => authenticator.authenticate(Redacted.make(token))
type Verifier = Effect.Effect.Success<ReturnType<typeof Authenticator.jwt>>

const refusal = (authenticator: Verifier, token: string) => Effect.flip(authenticate(authenticator, token))

describe("Authenticator.jwt with a JWKS URL", () => {
  it.live("verifies RS256, PS256, ES256 and EdDSA tokens with the key their kid names; sub is the principal", () =>
    Effect.gen(function*() {
      const keys = yield* Effect.promise(() =>
        Promise.all([
          signingKey("RS256", "rsa"),
          signingKey("PS256", "pss"),
          signingKey("ES256", "ec"),
          signingKey("EdDSA", "ed")
        ])
      )
      const jwks = yield* Effect.promise(jwksServer)
      jwks.state.keys = keys.map((key) => key.jwk)
      const authenticator = yield* Authenticator.jwt({ jwksUrl: jwks.url, issuer: ISSUER, audience: AUDIENCE })
      for (const key of keys) {
        const token = yield* Effect.promise(() => sign(key, { sub: `svc-${key.kid}` }))
        // The principal expires with the token: a change stream opened with it ends then.
        const { exp } = JSON.parse(Buffer.from(token.split(".")[1]!, "base64url").toString("utf8"))
        assert.deepStrictEqual(yield* authenticate(authenticator, token), {
          id: `svc-${key.kid}`,
          scopes: ["routes:read", "routes:write"],
          expiresAt: new Date(exp * 1000)
        })
      }
      // Fetched once, then cached.
      assert.strictEqual(jwks.state.fetches, 1)
      // A key of the set used under another key's kid does not verify.
      const forged = yield* Effect.promise(() => sign(keys[0]!, {}, "pss"))
      assert.strictEqual((yield* refusal(authenticator, forged))._tag, "InvalidToken")
    }))

  it.live("rotation: a token with a new kid fetches the key set again and is accepted", () =>
    Effect.gen(function*() {
      const [first, second] = yield* Effect.promise(() =>
        Promise.all([signingKey("RS256", "2026-01"), signingKey("RS256", "2026-02")])
      )
      const jwks = yield* Effect.promise(jwksServer)
      jwks.state.keys = [first!.jwk]
      const authenticator = yield* Authenticator.jwt({
        jwksUrl: jwks.url,
        issuer: ISSUER,
        audience: AUDIENCE,
        cooldown: 0
      })
      yield* authenticate(authenticator, yield* Effect.promise(() => sign(first!)))
      jwks.state.keys = [first!.jwk, second!.jwk]
      const principal = yield* authenticate(authenticator, yield* Effect.promise(() => sign(second!)))
      assert.strictEqual(principal.id, "alice")
      assert.strictEqual(jwks.state.fetches, 2)
    }))

  it.live("an unknown kid within the cool-down is refused without fetching the key set again", () =>
    Effect.gen(function*() {
      const [known, unknown] = yield* Effect.promise(() =>
        Promise.all([signingKey("ES256", "known"), signingKey("ES256", "unknown")])
      )
      const jwks = yield* Effect.promise(jwksServer)
      jwks.state.keys = [known!.jwk]
      const authenticator = yield* Authenticator.jwt({ jwksUrl: jwks.url, issuer: ISSUER, audience: AUDIENCE })
      yield* authenticate(authenticator, yield* Effect.promise(() => sign(known!)))
      for (let i = 0; i < 5; i++) {
        const error = yield* refusal(authenticator, yield* Effect.promise(() => sign(unknown!)))
        assert.strictEqual(error._tag, "InvalidToken")
      }
      assert.strictEqual(jwks.state.fetches, 1)
    }))

  it.live("refuses alg none, HS256 signed with the public key (HS/RS confusion), and other algorithms", () =>
    Effect.gen(function*() {
      const rsa = yield* Effect.promise(() => signingKey("RS256", "rsa"))
      const jwks = yield* Effect.promise(jwksServer)
      jwks.state.keys = [rsa.jwk]
      const authenticator = yield* Authenticator.jwt({
        jwksUrl: jwks.url,
        issuer: ISSUER,
        audience: AUDIENCE,
        algorithms: ["RS256"]
      })
      const none = new UnsecuredJWT(claims()).encode()
      const confused = yield* Effect.promise(() => signHs({}, new TextEncoder().encode(rsa.spki)))
      const ps = yield* Effect.promise(() => signingKey("PS256", "rsa"))
      const pinnedOut = yield* Effect.promise(() => sign(ps))
      for (const token of [none, confused, pinnedOut]) {
        const error = yield* refusal(authenticator, token)
        assert.strictEqual(error._tag, "InvalidToken")
        for (const part of token.split(".")) if (part !== "") assert.notInclude(error.reason, part)
      }
      // Refused on the header alone: the key set was never fetched for them.
      assert.strictEqual(jwks.state.fetches, 0)
    }))

  it.live("expired, not yet valid, wrong aud or iss, no sub, no exp: 401 reasons naming the claim, never the token", () =>
    Effect.gen(function*() {
      const key = yield* Effect.promise(() => signingKey("RS256", "k"))
      const jwks = yield* Effect.promise(jwksServer)
      jwks.state.keys = [key.jwk]
      const authenticator = yield* Authenticator.jwt({ jwksUrl: jwks.url, issuer: ISSUER, audience: AUDIENCE })
      const now = Math.floor(Date.now() / 1000)
      const cases: ReadonlyArray<readonly [Record<string, unknown>, string]> = [
        [{ exp: now - 60 }, "exp"],
        [{ nbf: now + 600 }, "nbf"],
        [{ aud: "another-api" }, "aud"],
        [{ iss: "https://evil.test" }, "iss"],
        [{ sub: undefined }, "sub"],
        [{ exp: undefined }, "exp"]
      ]
      for (const [extra, claim] of cases) {
        const token = yield* Effect.promise(() => sign(key, extra))
        const error = yield* refusal(authenticator, token)
        assert.strictEqual(error._tag, "InvalidToken", claim)
        assert.include(error.reason, claim)
        for (const part of token.split(".")) assert.notInclude(error.reason, part)
      }
    }))
})

describe("Authenticator.jwt through the routing API", () => {
  const start = async (options: Authenticator.JwtOptions) => {
    const server = await nodeListener.start(Layer.merge(RouteRepository.layerMemory, Authenticator.layerJwt(options)))
    onTestFinished(() => server.close())
    return server
  }
  const bearer = (token: string) => ({ authorization: `Bearer ${token}` })
  const json = { "content-type": "application/json" }
  const route = { method: "GET", path: "/jwt/:id", handler: "show" }

  it("an unknown kid while the key set is down is 503 authenticator_unavailable with Retry-After; cached keys still work", async () => {
    const [known, rotated] = await Promise.all([signingKey("RS256", "known"), signingKey("RS256", "rotated")])
    const jwks = await jwksServer()
    jwks.state.keys = [known.jwk]
    const server = await start({ jwksUrl: jwks.url, issuer: ISSUER, audience: AUDIENCE, cooldown: 0 })
    const created = await server.send(post(route, { ...bearer(await sign(known)), ...json }))
    assert.strictEqual(created.status, 201, created.text)

    jwks.state.down = true
    const refused = await server.send(post({ ...route, path: "/jwt2" }, { ...bearer(await sign(rotated)), ...json }))
    assertProblem(refused, "authenticator_unavailable")
    assert.strictEqual(refused.headers.get("retry-after"), "5")
    const fetches = jwks.state.fetches
    // Within the retry delay, no fetch is tried again: the answer is 503 at once.
    const again = await server.send(get(created.json.id, bearer(await sign(rotated))))
    assertProblem(again, "authenticator_unavailable")
    assert.strictEqual(jwks.state.fetches, fetches)
    // A token whose key is cached needs no fetch.
    assert.strictEqual((await server.send(get(created.json.id, bearer(await sign(known))))).status, 200)
    // Nothing was created by the refused request.
    assert.strictEqual((await server.send(get(created.json.id, bearer(await sign(known))))).json.path, "/jwt/:id")
  })

  it("a key set that cannot be fetched at all is 503, never 401 or 500", async () => {
    const key = await signingKey("ES256", "k")
    const jwks = await jwksServer()
    jwks.state.down = true
    const server = await start({ jwksUrl: jwks.url, issuer: ISSUER, audience: AUDIENCE })
    assertProblem(await server.send(get("x", bearer(await sign(key)))), "authenticator_unavailable")
    const closed = await start({ jwksUrl: "http://127.0.0.1:9/certs", issuer: ISSUER, audience: AUDIENCE })
    assertProblem(await closed.send(get("x", bearer(await sign(key)))), "authenticator_unavailable")
  })

  it("scopes from scope (space-separated) or scp (an array); the claim name is configurable", async () => {
    const server = await start({ secret: Redacted.make(SECRET), issuer: ISSUER, audience: AUDIENCE })
    const write = (token: string) =>
      server.send(post({ ...route, path: `/s${Math.random()}`.replace(".", "") }, {
        ...bearer(token),
        ...json
      }))
    assert.strictEqual((await write(await signHs({ scope: "openid routes:write" }))).status, 201)
    assert.strictEqual((await write(await signHs({ scope: undefined, scp: ["routes:write"] }))).status, 201)
    assertProblem(await write(await signHs({ scope: "routes:read" })), "insufficient_scope")
    assertProblem(await write(await signHs({ scope: undefined })), "insufficient_scope")

    const custom = await start({
      secret: Redacted.make(SECRET),
      issuer: ISSUER,
      audience: AUDIENCE,
      scopeClaim: "permissions"
    })
    const permitted = await signHs({ scope: undefined, permissions: ["routes:read"] })
    assert.strictEqual((await custom.send(get("x", bearer(permitted)))).status, 404)
    // With a claim named, the others are not read.
    assertProblem(await custom.send(get("x", bearer(await signHs({ scope: "routes:read" })))), "insufficient_scope")
  })

  it("a refused token is 401 invalid_token with the Bearer challenge", async () => {
    const server = await start({ secret: Redacted.make(SECRET), issuer: ISSUER, audience: AUDIENCE })
    for (
      const token of [await signHs({ aud: "x" }), "not-a-jwt", await signHs({}, "another-secret-of-at-least-32-bytes")]
    ) {
      const response = await server.send(get("x", bearer(token)))
      assertProblem(response, "invalid_token")
      assert.strictEqual(response.headers.get("www-authenticate"), "Bearer realm=\"routing\", error=\"invalid_token\"")
    }
  })
})

describe("Authenticator.jwt: what a sub may hold, iat, and actorPrefix", () => {
  const bearer = (token: string) => ({ authorization: `Bearer ${token}` })
  const json = { "content-type": "application/json" }
  const options = { secret: Redacted.make(SECRET), issuer: ISSUER, audience: AUDIENCE }
  const stores = [
    ["memory", (): Layer.Layer<RouteRepository.RouteRepository, unknown> => RouteRepository.layerMemory],
    [
      "Postgres",
      () => TestDatabase.storeLayer({ table: TestDatabase.freshTable() }).pipe(Layer.provide(TestDatabase.layer()))
    ]
  ] as const

  for (const [name, store] of stores) {
    it(`a sub with a NUL, a lone surrogate or over 256 characters is 401 invalid_token on writes and reads (${name})`, async () => {
      const server = await nodeListener.start(Layer.merge(store(), Authenticator.layerJwt(options)))
      onTestFinished(() => server.close())
      for (const sub of ["alice\u0000", "bob\uD800", "x".repeat(257)]) {
        const token = await signHs({ sub })
        const write = await server.send(
          post({ method: "GET", path: "/nul", handler: "h" }, { ...bearer(token), ...json })
        )
        assertProblem(write, "invalid_token")
        assertProblem(await server.send(get("x", bearer(token))), "invalid_token")
      }
      const created = await server.send(
        post({ method: "GET", path: "/ok", handler: "h" }, {
          ...bearer(await signHs({ sub: "x".repeat(256) })),
          ...json
        })
      )
      assert.strictEqual(created.status, 201, created.text)
    })
  }

  it.effect("an iat in the future beyond the clock tolerance is refused; within it, accepted", () =>
    Effect.gen(function*() {
      const authenticator = yield* Authenticator.jwt({ ...options, clockTolerance: "30 seconds" })
      yield* TestClock.setTime(1_000_000_000)
      const future = yield* Effect.promise(() => signHs({ iat: 1_000_000 + 60, exp: 1_000_000 + 3600 }))
      const error = yield* refusal(authenticator, future)
      assert.strictEqual(error._tag, "InvalidToken")
      assert.include(error.reason, "iat")
      const skewed = yield* Effect.promise(() => signHs({ iat: 1_000_000 + 20, exp: 1_000_000 + 3600 }))
      assert.strictEqual((yield* authenticate(authenticator, skewed)).id, "alice")
      // An iat in the past is fine, however old: the age of a token is bounded by its exp.
      const old = yield* Effect.promise(() => signHs({ iat: 1_000, exp: 1_000_000 + 3600 }))
      assert.strictEqual((yield* authenticate(authenticator, old)).id, "alice")
    }))

  it("actorPrefix names JWT principals apart from static tokens in the change log", async () => {
    const jwt = await Effect.runPromise(Authenticator.jwt({ ...options, actorPrefix: "jwt:" }))
    const statics = Authenticator.makeStaticTokens([
      { token: Redacted.make("static-alice-token"), scopes: ["routes:read", "routes:write"], id: "alice" }
    ])
    const server = await nodeListener.start(
      Layer.merge(
        RouteRepository.layerMemory,
        Layer.succeed(Authenticator.Authenticator, Authenticator.orElse(statics, jwt))
      )
    )
    onTestFinished(() => server.close())
    const byJwt = await server.send(
      post({ method: "GET", path: "/a", handler: "h" }, { ...bearer(await signHs()), ...json })
    )
    const byStatic = await server.send(
      post({ method: "GET", path: "/b", handler: "h" }, { ...bearer("static-alice-token"), ...json })
    )
    assert.strictEqual(byJwt.status, 201)
    assert.strictEqual(byStatic.status, 201)
    const log = await server.send({ method: "GET", path: "/v1/routing/history", headers: bearer("static-alice-token") })
    assert.deepStrictEqual(log.json.items.map((entry: { actor: string }) => entry.actor), ["alice", "jwt:alice"])
  })

  it.effect("an actorPrefix that is not short printable text fails with InvalidOption naming it", () =>
    Effect.gen(function*() {
      for (const actorPrefix of ["x".repeat(65), "jwt\n", 42 as unknown as string]) {
        const error = yield* Effect.flip(Authenticator.jwt({ ...options, actorPrefix }))
        assert.strictEqual(error.option, "actorPrefix")
      }
    }))
})

describe("Authenticator.jwt with a PEM key or a secret", () => {
  it.live("a PEM public key verifies its own algorithm and refuses the others", () =>
    Effect.gen(function*() {
      const key = yield* Effect.promise(() => signingKey("ES256", "pem"))
      const authenticator = yield* Authenticator.jwt({ publicKey: key.spki, issuer: ISSUER, audience: AUDIENCE })
      assert.strictEqual((yield* authenticate(authenticator, yield* Effect.promise(() => sign(key)))).id, "alice")
      const confused = yield* Effect.promise(() => signHs({}, new TextEncoder().encode(key.spki)))
      assert.strictEqual((yield* refusal(authenticator, confused))._tag, "InvalidToken")
      const pinned = yield* Effect.exit(
        Authenticator.jwt({ publicKey: key.spki, issuer: ISSUER, audience: AUDIENCE, algorithms: ["RS256"] })
      )
      assert.isTrue(Exit.isFailure(pinned))
    }))

  it.effect("expiry and nbf on Effect's clock, with the clock tolerance", () =>
    Effect.gen(function*() {
      const authenticator = yield* Authenticator.jwt({
        secret: Redacted.make(SECRET),
        issuer: ISSUER,
        audience: AUDIENCE,
        clockTolerance: "30 seconds"
      })
      // TestClock starts at 0: this token expires 100 seconds in, and is valid from 50 seconds.
      const token = yield* Effect.promise(() => signHs({ exp: 100, nbf: 50 }))
      yield* TestClock.adjust("21 seconds")
      assert.strictEqual((yield* authenticate(authenticator, token)).id, "alice")
      yield* TestClock.adjust("108 seconds")
      assert.strictEqual((yield* authenticate(authenticator, token)).id, "alice")
      yield* TestClock.adjust("2 seconds")
      assert.include((yield* refusal(authenticator, token)).reason, "exp")
    }))

  it.effect("options that could never verify a token fail with InvalidOption naming the option", () =>
    Effect.gen(function*() {
      const base = { issuer: ISSUER, audience: AUDIENCE }
      const cases: ReadonlyArray<readonly [Authenticator.JwtOptions, string]> = [
        [{ ...base, secret: Redacted.make("too-short") }, "secret"],
        [{ ...base }, "jwksUrl"],
        [{ ...base, secret: Redacted.make(SECRET), jwksUrl: "http://127.0.0.1/certs" }, "jwksUrl"],
        [{ ...base, jwksUrl: "not a url" }, "jwksUrl"],
        [{ ...base, secret: Redacted.make(SECRET), algorithms: ["RS256"] }, "algorithms"],
        [{ ...base, publicKey: "-----BEGIN PUBLIC KEY-----\nnope\n-----END PUBLIC KEY-----" }, "publicKey"],
        [{ ...base, issuer: "", secret: Redacted.make(SECRET) }, "issuer"],
        [{ ...base, audience: [], secret: Redacted.make(SECRET) }, "audience"]
      ]
      for (const [options, option] of cases) {
        const error = yield* Effect.flip(Authenticator.jwt(options))
        assert.instanceOf(error, InvalidOption.InvalidOption, option)
        assert.strictEqual(error.option, option)
        assert.notInclude(error.message, SECRET)
      }
    }))
})

describe("static tokens in front of JWTs (Authenticator.orElse)", () => {
  it.effect("a static token, a JWT, and neither", () =>
    Effect.gen(function*() {
      const jwt = yield* Authenticator.jwt({ secret: Redacted.make(SECRET), issuer: ISSUER, audience: AUDIENCE })
      const statics = Authenticator.makeStaticTokens([
        { token: Redacted.make("static-admin"), scopes: ["routes:read"], id: "ops" }
      ])
      const both = Authenticator.orElse(statics, jwt)
      assert.strictEqual((yield* authenticate(both, "static-admin")).id, "ops")
      yield* TestClock.setTime(Date.now())
      assert.strictEqual((yield* authenticate(both, yield* Effect.promise(() => signHs()))).id, "alice")
      assert.strictEqual((yield* Effect.flip(authenticate(both, "unknown"))).reason.includes("not a JWT"), true)
    }))
})
