import { assert, describe, it } from "@effect/vitest"
import type { Context } from "effect"
import { Cause, Effect, Exit, Layer, Logger, LogLevel, Option, Redacted, Runtime, TestClock } from "effect"
import * as Authenticator from "route-registry/Authenticator"
import * as InvalidOption from "route-registry/InvalidOption"
import * as RouteRepository from "route-registry/RouteRepository"
import * as RoutingHandler from "route-registry/RoutingHandler"
import * as Runner from "../src/internal/http/runner.js"

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
      // Unnamed: "token-" and the first 12 hex digits of the token's SHA-256 (of "beta").
      assert.deepStrictEqual(yield* authenticate("beta"), { id: "token-f44e64e75f39", scopes: ["routes:read"] })
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

describe("named tokens (docs/authentication.md)", () => {
  it("parseTokenEntry: name=token names the principal; a bare token is named by its hash, never by itself", () => {
    const named = Authenticator.parseTokenEntry("alice=s3cret-Token")
    assert.strictEqual(named.id, "alice")
    assert.strictEqual(Redacted.value(named.token), "s3cret-Token")
    // "=" only as padding at the end: a bare base64 token, not a name.
    for (const bare of ["dG9rZW4=", "YWJj==", "plain-token"]) {
      const entry = Authenticator.parseTokenEntry(bare)
      assert.strictEqual(Redacted.value(entry.token), bare)
      assert.match(entry.id, /^token-[0-9a-f]{12}$/)
      assert.notInclude(entry.id, bare.replace(/=+$/, ""))
    }
    // A named token whose token has padding keeps it.
    assert.strictEqual(Redacted.value(Authenticator.parseTokenEntry("bob=YWJj==").token), "YWJj==")
    assert.strictEqual(Authenticator.parseTokenEntry("bob=YWJj==").id, "bob")
  })

  it("principalIdOf: token- and the first 12 hex digits of the SHA-256, the same for the same token", () => {
    assert.strictEqual(Authenticator.principalIdOf(Redacted.make("beta")), "token-f44e64e75f39")
    assert.notStrictEqual(
      Authenticator.principalIdOf(Redacted.make("beta")),
      Authenticator.principalIdOf(Redacted.make("betb"))
    )
  })

  it("a name that is not a plain name, or that contains its token, is refused when the list is built", () => {
    for (const id of ["", "has space", "x=y", "-leading"]) {
      const invalid = Authenticator.checkStaticTokens([{ token: Redacted.make("t0ken-of-alice"), scopes: [], id }])
      assert.instanceOf(invalid, InvalidOption.InvalidOption, id)
      assert.include(invalid!.message, "name")
    }
    const leaking = Authenticator.checkStaticTokens([
      { token: Redacted.make("t0ken-of-alice"), scopes: [], id: "my-t0ken-of-alice" }
    ])
    assert.include(leaking!.message, "contains its token")
    assert.notInclude(leaking!.message, "t0ken-of-alice")
    // A short token found in a name by chance is no leak of it.
    assert.isUndefined(Authenticator.checkStaticTokens([{ token: Redacted.make("p"), scopes: [], id: "p0" }]))
  })
})

describe("prefix scopes are checked where they are configured", () => {
  it("accepts routes:read, routes:write and routes:write:<static path>", () => {
    const scopes = ["routes:read", "routes:write", "routes:write:/payments", "routes:write:/api/v1.2/orders"] as const
    assert.isUndefined(Authenticator.checkStaticTokens([{ token: Redacted.make("t"), scopes }]))
  })

  it("refuses unknown scopes and prefixes that are not static paths, naming the scope", () => {
    const refused: ReadonlyArray<readonly [string, string]> = [
      ["routes:write:payments", "not a valid path"],
      ["routes:write:/payments/", "not a valid path"],
      ["routes:write:/payments/:id", "static segments only"],
      ["routes:write:/files/*rest", "static segments only"],
      ["routes:write:/", "routes:write instead"],
      ["routes:writer", "not a scope"],
      ["routes:admin", "not a scope"]
    ]
    for (const [scope, message] of refused) {
      const invalid = Authenticator.checkStaticTokens([
        { token: Redacted.make("t"), scopes: [scope as Authenticator.Scope], id: "x" }
      ])
      assert.instanceOf(invalid, InvalidOption.InvalidOption, scope)
      assert.include(invalid!.message, "scopes[0]", scope)
      assert.include(invalid!.message, message, scope)
    }
  })
})

describe("Authenticator.orElse", () => {
  const statics = Authenticator.makeStaticTokens([{ token: Redacted.make("static-1"), scopes: ["routes:read"] }])
  const calls: Array<string> = []
  const second = Authenticator.Authenticator.of({
    authenticate: (token) => {
      calls.push("second")
      return Redacted.value(token) === "other"
        ? Exit.succeed({ id: "other", scopes: [] })
        : Exit.fail(new Authenticator.InvalidToken({ reason: "no" }))
    }
  })
  const both = Authenticator.orElse(statics, second)

  it("asks the first, and the second only for a token the first refuses; decided at once stays an Exit", () => {
    calls.length = 0
    const first = both.authenticate(Redacted.make("static-1"))
    assert.isTrue(Exit.isExit(first) && Exit.isSuccess(first))
    assert.deepStrictEqual(calls, [])
    const other = both.authenticate(Redacted.make("other"))
    assert.isTrue(Exit.isExit(other) && Exit.isSuccess(other))
    assert.deepStrictEqual(calls, ["second"])
    const neither = both.authenticate(Redacted.make("neither"))
    assert.isTrue(Exit.isExit(neither) && Exit.isFailure(neither))
  })

  it.effect("the first's unavailability is answered as is, without asking the second", () =>
    Effect.gen(function*() {
      calls.length = 0
      const down = Authenticator.Authenticator.of({
        authenticate: () =>
          Effect.fail(new Authenticator.AuthenticatorUnavailable({ reason: "down", retryAfterMillis: 1 }))
      })
      const error = yield* Effect.flip(Authenticator.orElse(down, second).authenticate(Redacted.make("other")))
      assert.strictEqual(error._tag, "AuthenticatorUnavailable")
      assert.deepStrictEqual(calls, [])
    }))
})

// The routing API's core over a host's own authenticator: what it makes of the principals and refusals it is given.
describe("the principals every authenticator gives the routing API", () => {
  const READ = { method: "GET", path: "/v1/routing", query: "", body: () => Effect.die("no body") } as const
  const request = (token: string): RoutingHandler.Request => ({
    ...READ,
    header: (name) => name === "authorization" ? `Bearer ${token}` : undefined
  })
  // A host's authenticator whose principal id is whatever the token's suffix says (after "id-").
  const byToken = Authenticator.Authenticator.of({
    authenticate: (token) => {
      const value = Redacted.value(token)
      if (value.startsWith("down")) {
        return Effect.fail(new Authenticator.AuthenticatorUnavailable({ reason: "idp down", retryAfterMillis: 1000 }))
      }
      if (!value.startsWith("id-")) {
        return Exit.fail(new Authenticator.InvalidToken({ reason: `unknown (${value.slice(6)})` }))
      }
      return Exit.succeed({ id: ids.get(value) ?? value.slice(3), scopes: ["routes:read"] })
    }
  })
  const ids = new Map<string, string>()
  const handler = RoutingHandler.makeWith(Effect.runSync(RouteRepository.makeMemory), byToken)
  const statusOf = (token: string, id?: string) => {
    if (id !== undefined) ids.set(token, id)
    return Effect.map(handler.handle(request(token))!, (response) => response.status)
  }

  it.effect("an id that is not 1 to 256 printable characters is 401 invalid_token, whichever authenticator gave it", () =>
    Effect.gen(function*() {
      const refused: ReadonlyArray<readonly [string, string]> = [
        ["nul", "alice\u0000"],
        ["empty", ""],
        ["long", "a".repeat(257)],
        ["lone-surrogate", "bob\uD800"],
        ["newline", "carol\nadmin"],
        ["separator", "dave\u2028"],
        ["override", "eve\u202Eevil"],
        ["control", "\u009Bfrank"]
      ]
      for (const [name, id] of refused) assert.strictEqual(yield* statusOf(`id-${name}`, id), 401, name)
      const accepted = ["alice", "a".repeat(256), "Jörg Müller", "svc:payments/42", "名前", "🙂 smile"]
      for (const [i, id] of accepted.entries()) assert.strictEqual(yield* statusOf(`id-ok${i}`, id), 200, id)
    }).pipe(Logger.withMinimumLogLevel(LogLevel.None)))

  it("a usable principal decided at once is answered at once (an Exit), as before", () => {
    ids.set("id-fast", "fast")
    // The adapters' runner completes it in the call that starts it.
    assert.isTrue(Exit.isExit(Runner.make(Runtime.defaultRuntime)(handler.handle(request("id-fast"))!)))
  })

  it.effect("each request's authenticator is given its own token, even after one wiped the token it was given", () =>
    Effect.gen(function*() {
      const given: Array<string> = []
      const wiping = RoutingHandler.makeWith(Effect.runSync(RouteRepository.makeMemory), {
        authenticate: (token) => {
          given.push(Redacted.value(token))
          Redacted.unsafeWipe(token)
          return Exit.succeed({ id: "wiper", scopes: ["routes:read"] })
        }
      })
      const statuses: Array<number> = []
      for (const token of ["id-a", "id-a", "id-b", "id-a"]) {
        statuses.push((yield* wiping.handle(request(token))!).status)
      }
      assert.deepStrictEqual(statuses, [200, 200, 200, 200])
      assert.deepStrictEqual(given, ["id-a", "id-a", "id-b", "id-a"])
    }))

  it.effect("concurrent requests with one token: an authenticator that waits, then wipes its token, wipes no other's", () =>
    Effect.gen(function*() {
      const given: Array<string> = []
      const wiping = RoutingHandler.makeWith(Effect.runSync(RouteRepository.makeMemory), {
        authenticate: (token) =>
          Effect.gen(function*() {
            yield* Effect.yieldNow()
            given.push(Redacted.value(token))
            Redacted.unsafeWipe(token)
            return { id: "wiper", scopes: ["routes:read"] }
          })
      })
      const at = yield* Effect.all(
        ["id-c", "id-c", "id-c", "id-c"].map((token) => wiping.handle(request(token))!),
        { concurrency: "unbounded" }
      )
      assert.deepStrictEqual(at.map((response) => response.status), Array(4).fill(200))
      assert.deepStrictEqual(given, Array(4).fill("id-c"))
    }))

  // The core over `authenticator`, built where the log lines go to `lines` (it runs requests on the runtime it is made in).
  const logging = (authenticator: Context.Tag.Service<typeof Authenticator.Authenticator>) => {
    const lines: Array<{ readonly level: string; readonly message: string }> = []
    const logger = Layer.merge(
      Logger.replace(
        Logger.defaultLogger,
        Logger.make(({ logLevel, message }) =>
          lines.push({ level: logLevel.label, message: (Array.isArray(message) ? message : [message]).join(" ") })
        )
      ),
      Logger.minimumLogLevel(LogLevel.All)
    )
    const core = RoutingHandler.make().pipe(
      Effect.provide(RouteRepository.layerMemory),
      Effect.provideService(Authenticator.Authenticator, authenticator),
      Effect.provide(logger)
    )
    // `handle` starts nothing: each request runs where the log lines go, as an adapter runs it on its runtime.
    return Effect.map(core, (own) => ({
      lines,
      send: (token: string) => Effect.provide(own.handle(request(token))!, logger)
    }))
  }

  it.effect("each refusal's reason is logged as a warning, once per reason and minute, never with the token", () =>
    Effect.gen(function*() {
      const { lines, send } = yield* logging(byToken)
      const secret = "not-a-valid-token-0123456789"
      for (let i = 0; i < 5; i++) yield* send(secret)
      yield* send("down-0123456789")
      yield* send("down-0123456789")
      ids.set("id-nul", "x\u0000")
      yield* send("id-nul")
      assert.deepStrictEqual(lines.map((line) => line.level), ["WARN", "WARN", "WARN"])
      assert.include(lines[0]!.message, "token refused: unknown (valid-token-0123456789)")
      assert.include(lines[1]!.message, "authenticator unavailable: idp down")
      assert.include(lines[2]!.message, "the principal id holds a control character")
      for (const line of lines) assert.notInclude(line.message, secret)

      // A minute later the same reason is logged again, saying how many refusals the minute before did not log.
      yield* TestClock.adjust("60 seconds")
      yield* send(secret)
      assert.lengthOf(lines, 4)
      assert.include(lines[3]!.message, "(5 more refusals in the interval before were not logged)")

      // At most 32 reasons a minute: a client sending ever new reasons cannot fill the log.
      yield* TestClock.adjust("60 seconds")
      lines.length = 0
      for (let i = 0; i < 40; i++) yield* send(`other-${String(i).padStart(4, "0")}`)
      assert.lengthOf(lines, 32, JSON.stringify(lines))
    }))

  it.effect("a reason that quotes the token is withheld from the log; a long one is cut", () =>
    Effect.gen(function*() {
      const { lines, send } = yield* logging(Authenticator.Authenticator.of({
        authenticate: (token) =>
          Exit.fail(new Authenticator.InvalidToken({ reason: `no such token: ${Redacted.value(token)}` }))
      }))
      yield* send("a-token-written-into-its-reason")
      assert.lengthOf(lines, 1)
      assert.notInclude(lines[0]!.message, "a-token-written-into-its-reason")
      assert.include(lines[0]!.message, "withheld")
      // A long reason (one quoting the request, say) is cut: the log's lines stay bounded.
      const { lines: long, send: sendLong } = yield* logging(Authenticator.Authenticator.of({
        authenticate: () => Exit.fail(new Authenticator.InvalidToken({ reason: "x".repeat(10_000) }))
      }))
      yield* sendLong("some-token")
      assert.isBelow(long[0]!.message.length, 400)
    }))
})
