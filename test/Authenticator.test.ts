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

  it("refuses a configured token that could never be presented, naming it but not its value", () => {
    for (const bad of ["has space", "", "semi;colon", "é"]) {
      assert.throws(
        () =>
          Authenticator.makeStaticTokens([{ token: Redacted.make("good"), scopes: [] }, {
            token: Redacted.make(bad),
            scopes: ["routes:read"],
            id: "ops"
          }]),
        /static token 2 \(ops\) is not a well-formed bearer token/
      )
    }
  })

  it("isWellFormedToken follows RFC 6750 b64token", () => {
    for (const token of ["abc", "A-b.c_d~e+f/g", "abc==", "a="]) {
      assert.isTrue(Authenticator.isWellFormedToken(token), token)
    }
    for (const token of ["", "=abc", "a b", "a,b", "a=b", "ä", "a\tb"]) {
      assert.isFalse(Authenticator.isWellFormedToken(token), token)
    }
  })
})
