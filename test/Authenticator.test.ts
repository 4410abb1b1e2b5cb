import { assert, describe, it } from "@effect/vitest"
import { Effect, Redacted } from "effect"
import * as Authenticator from "route-registry/Authenticator"

const authenticate = (token: string) =>
  Effect.flatMap(Authenticator.Authenticator, (auth) => auth.authenticate(Redacted.make(token)))

const layer = Authenticator.layerStaticTokens([
  { token: Redacted.make("alpha-token"), scopes: ["routes:read", "routes:write"], id: "alpha" },
  { token: Redacted.make("beta"), scopes: ["routes:read"] },
  { token: Redacted.make("a-much-longer-token-than-the-others-0123456789"), scopes: ["routes:write"] }
])

describe("Authenticator.layerStaticTokens", () => {
  it.effect("yields the principal of each configured token, with its scopes", () =>
    Effect.gen(function*() {
      assert.deepStrictEqual(yield* authenticate("alpha-token"), {
        id: "alpha",
        scopes: ["routes:read", "routes:write"]
      })
      assert.deepStrictEqual(yield* authenticate("beta"), { id: "token-2", scopes: ["routes:read"] })
      assert.deepStrictEqual((yield* authenticate("a-much-longer-token-than-the-others-0123456789")).scopes, [
        "routes:write"
      ])
    }).pipe(Effect.provide(layer)))

  it.effect("refuses anything else exactly: prefixes, extensions, case, empty, whitespace", () =>
    Effect.gen(function*() {
      for (
        const token of ["alpha", "alpha-token ", " alpha-token", "alpha-tokenx", "ALPHA-TOKEN", "", "bet", "betaa"]
      ) {
        const error = yield* Effect.flip(authenticate(token))
        assert.strictEqual(error._tag, "InvalidToken", token)
        if (token !== "") assert.notInclude(error.reason, token)
      }
    }).pipe(Effect.provide(layer)))

  it.effect("with no tokens, nothing authenticates", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(authenticate("anything"))
      assert.strictEqual(error._tag, "InvalidToken")
    }).pipe(Effect.provide(Authenticator.layerStaticTokens([]))))

  it("keeps tokens redacted when the configuration is printed", () => {
    const entry = { token: Redacted.make("secret-value"), scopes: ["routes:read"] as const }
    assert.notInclude(String(entry.token), "secret-value")
    assert.notInclude(JSON.stringify(entry), "secret-value")
  })
})
