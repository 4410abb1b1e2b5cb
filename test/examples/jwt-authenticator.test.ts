import { assert, describe, it, onTestFinished } from "@effect/vitest"
import { Effect, Exit, Layer, Redacted, TestClock } from "effect"
import { SignJWT } from "jose"
import * as Authenticator from "route-registry/Authenticator"
import * as RouteRepository from "route-registry/RouteRepository"
import { layerJwt, makeJwt } from "../../examples/jwt-authenticator.js"
import { nodeListener } from "../utils/adapters.js"
import { assertProblem, get, post } from "../utils/httpContract.js"

const SECRET = "a-test-secret-of-at-least-32-bytes!"
const options = { secret: Redacted.make(SECRET), issuer: "https://issuer.test", audience: "route-registry" }

const sign = (
  claims: Record<string, unknown>,
  { alg = "HS256", secret = SECRET }: { readonly alg?: string; readonly secret?: string } = {}
) =>
  new SignJWT({
    sub: "svc-1",
    iss: options.issuer,
    aud: options.audience,
    exp: Math.floor(Date.now() / 1000) + 600,
    scope: "routes:read routes:write",
    ...claims
  }).setProtectedHeader({ alg }).sign(new TextEncoder().encode(secret))

const bearer = (token: string) => ({ authorization: `Bearer ${token}` })
const json = { "content-type": "application/json" }
const sample = { method: "GET", path: "/jwt/:id", handler: "show" }

describe("examples/jwt-authenticator", () => {
  describe("through a real server", () => {
    const start = () => nodeListener.start(Layer.merge(RouteRepository.layerMemory, layerJwt(options)))

    it("a valid token with routes:write creates (201); with routes:read it gets", async () => {
      const server = await start()
      onTestFinished(() => server.close())
      const created = await server.send(post(sample, { ...bearer(await sign({ scope: "routes:write" })), ...json }))
      assert.strictEqual(created.status, 201, created.text)
      const found = await server.send(get(created.json.id, bearer(await sign({ scope: "routes:read" }))))
      assert.strictEqual(found.status, 200)
      assert.strictEqual(found.text, created.text)
    })

    it("a token without the scope (OAuth space-separated list) is 403 insufficient_scope", async () => {
      const server = await start()
      onTestFinished(() => server.close())
      for (const scope of ["routes:read", "routes:read openid", "routes:writer", ""]) {
        const response = await server.send(post(sample, { ...bearer(await sign({ scope })), ...json }))
        assertProblem(response, "insufficient_scope")
      }
      const unscoped = await server.send(post(sample, { ...bearer(await sign({ scope: undefined })), ...json }))
      assertProblem(unscoped, "insufficient_scope")
    })

    it("expired, wrongly addressed, badly signed or garbage tokens are 401 invalid_token, and create nothing", async () => {
      const now = Math.floor(Date.now() / 1000)
      const refused: ReadonlyArray<readonly [string, Promise<string> | string]> = [
        ["expired", sign({ exp: now - 60 })],
        ["not yet valid", sign({ nbf: now + 600 })],
        ["wrong audience", sign({ aud: "another-service" })],
        ["wrong issuer", sign({ iss: "https://evil.test" })],
        ["no expiry", sign({ exp: undefined })],
        ["no subject", sign({ sub: undefined })],
        ["another secret", sign({}, { secret: "another-secret-of-at-least-32-bytes" })],
        ["another algorithm", sign({}, { alg: "HS512" })],
        ["garbage", "garbage"],
        ["three garbage parts", "a.b.c"]
      ]
      const server = await start()
      onTestFinished(() => server.close())
      for (const [name, token] of refused) {
        const response = await server.send(post({ ...sample, handler: name.replace(/ /g, "_") }, {
          ...bearer(await token),
          ...json
        }))
        assertProblem(response, "invalid_token")
        assert.strictEqual(
          response.headers.get("www-authenticate"),
          "Bearer realm=\"routing\", error=\"invalid_token\"",
          name
        )
      }
      // None of them was stored: the same route can still be created.
      const created = await server.send(post(sample, { ...bearer(await sign({})), ...json }))
      assert.strictEqual(created.status, 201)
    })
  })

  describe("the authenticator", () => {
    it.effect("reads the subject and the scopes, and expires on Effect's clock", () =>
      Effect.gen(function*() {
        const authenticator = yield* makeJwt(options)
        // TestClock starts at 0: this token expires 100 seconds in.
        const token = Redacted.make(yield* Effect.promise(() => sign({ exp: 100, scope: " routes:read  x " })))
        assert.deepStrictEqual(yield* authenticator.authenticate(token), { id: "svc-1", scopes: ["routes:read", "x"] })
        yield* TestClock.adjust("101 seconds")
        const error = yield* Effect.flip(authenticator.authenticate(token))
        assert.instanceOf(error, Authenticator.InvalidToken)
        assert.include(error.reason, "exp")
      }))

    it.effect("a refusal's reason never contains the token", () =>
      Effect.gen(function*() {
        const authenticator = yield* makeJwt(options)
        const tokens = [
          "not-a-jwt-secret-value",
          yield* Effect.promise(() => sign({ aud: "another-service" })),
          yield* Effect.promise(() => sign({}, { secret: "another-secret-of-at-least-32-bytes" }))
        ]
        for (const token of tokens) {
          const error = yield* Effect.flip(authenticator.authenticate(Redacted.make(token)))
          assert.isAbove(error.reason.length, 0)
          for (const part of token.split(".")) assert.notInclude(error.reason, part)
        }
      }))

    it.effect("a secret shorter than 32 bytes is refused when the layer is built", () =>
      Effect.gen(function*() {
        const exit = yield* Effect.exit(makeJwt({ ...options, secret: Redacted.make("too-short") }))
        assert.isTrue(Exit.isFailure(exit))
      }))
  })
})
