import { assert, describe, it } from "@effect/vitest"
import { Cause, Effect, Exit, Layer, Option, Redacted } from "effect"
import * as Authenticator from "route-registry/Authenticator"
import * as InvalidOption from "route-registry/InvalidOption"

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
        /static token 2 \(ops\) (is not a well-formed bearer token|has an empty token)/
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

describe("Authenticator.layerStaticTokens refuses unusable entries when it is built", () => {
  for (
    const [name, entry, fragment] of [
      [
        "an unset variable",
        { token: Redacted.make(process.env.ROUTE_REGISTRY_SURELY_UNSET!), scopes: [] },
        "undefined"
      ],
      ["an empty token", { token: Redacted.make(""), scopes: [] }, "empty"],
      ["a number", { token: Redacted.make(42 as unknown as string), scopes: [] }, "a number"],
      ["a plain string", { token: "abc" as unknown as Redacted.Redacted<string>, scopes: [] }, "Redacted.make"],
      ["a malformed token", { token: Redacted.make("a b"), scopes: [] }, "not a well-formed"],
      ["no scopes", { token: Redacted.make("abc") } as unknown as Authenticator.StaticToken, "scopes"]
    ] as const
  ) {
    it(`${name}: InvalidOption naming the entry and the fix`, async () => {
      const tokens = [{ token: Redacted.make("fine"), scopes: ["routes:read"] as const }, entry]
      const exit = await Effect.runPromiseExit(Layer.build(Authenticator.layerStaticTokens(tokens)).pipe(Effect.scoped))
      const failure = Exit.isFailure(exit) ? Cause.failureOption(exit.cause) : Option.none()
      assert.isTrue(Option.isSome(failure) && failure.value instanceof InvalidOption.InvalidOption)
      const error = Option.getOrThrow(failure)
      assert.strictEqual(error.option, "tokens[1]")
      assert.include(error.message, "static token 2")
      assert.include(error.message, fragment)
      assert.throws(() => Authenticator.makeStaticTokens(tokens), /static token 2/)
    })
  }
})
