/**
 * Property-based tests through the real adapters (memory store): random bodies never get a 500 and every error is
 * a well-formed problem document with the code the contract predicts; the create path accepts exactly the path
 * grammar and returns what it stored byte for byte; and no Authorization header authenticates unless it carries
 * a configured token (also checked on the static authenticator and the request core directly).
 */
import { assert, describe, it, onTestFinished } from "@effect/vitest"
import { Effect, Exit, Layer, Redacted } from "effect"
import * as fc from "fast-check"
import * as Authenticator from "route-registry/Authenticator"
import type * as Problem from "route-registry/Problem"
import * as Route from "route-registry/Route"
import * as RouteRepository from "route-registry/RouteRepository"
import * as RoutingHandler from "route-registry/RoutingHandler"
import type { Adapter, Received, Served } from "./utils/adapters.js"
import { adapters } from "./utils/adapters.js"
import { adversarialPath, createBody, grammarPath, methodFor, mutatedPath } from "./utils/arbitraries.js"
import { ADMIN, assertProblem, quiet, READER, tokens, WRITER } from "./utils/httpContract.js"
import { expectedGroups, oracle } from "./utils/oracle.js"

const LIMIT = 8192
const CONFIGURED = [ADMIN, READER, WRITER]

const withServer = async (adapter: Adapter, f: (server: Served) => Promise<void>) => {
  const server = await adapter.start(Layer.mergeAll(RouteRepository.layerMemory, tokens, quiet), {
    maxBodyBytes: LIMIT
  })
  onTestFinished(() => server.close())
  await f(server)
}

/** No header value of a response may carry a line break (header injection). */
const assertCleanHeaders = (response: Received) => {
  response.headers.forEach((value, name) => assert.notMatch(value, /[\r\n]/, `header ${name}`))
}

const EXTENSIONS: Partial<Record<Problem.Code, ReadonlyArray<string>>> = {
  invalid_route: ["errors"],
  route_conflict: ["conflictingRouteId"]
}

/** A 201 with the stored route, or a well-formed problem document; returns the code ("created" for a 201). */
const checkAnswer = (response: Received): string => {
  assertCleanHeaders(response)
  if (response.status === 201) {
    assert.strictEqual(response.headers.get("content-type"), "application/json")
    assert.deepStrictEqual(Object.keys(response.json), ["id", "method", "path", "middleware", "handler", "createdAt"])
    assert.isTrue(Route.isRouteId(response.json.id))
    assert.strictEqual(response.headers.get("location"), `/v1/routing/${response.json.id}`)
    return "created"
  }
  const code = response.json?.code as Problem.Code
  assert.isString(code, `not a problem document: ${response.status} ${response.text}`)
  assertProblem(response, code, EXTENSIONS[code] ?? [])
  if (code === "invalid_route") {
    assert.isAbove(response.json.errors.length, 0)
    for (const error of response.json.errors) {
      assert.deepStrictEqual(Object.keys(error), ["path", "message"])
      assert.isString(error.path)
      assert.isAbove(error.message.length, 0)
    }
  }
  return code
}

// ---------------------------------------------------------------------------------------------------------------
// Random bodies
// ---------------------------------------------------------------------------------------------------------------

/** Content types, and whether the contract reads the body as JSON under each. */
const contentTypes: ReadonlyArray<readonly [value: string | undefined, json: boolean]> = [
  ["application/json", true],
  ["application/json; charset=utf-8", true],
  ["Application/JSON;charset=\"UTF-8\"", true],
  ["application/json; charset=latin1", false],
  ["application/jsonx", false],
  ["application/merge-patch+json", false],
  ["text/plain", false],
  [undefined, false]
]

const contentType = fc.oneof(
  { weight: 12, arbitrary: fc.constant(contentTypes[0]!) },
  { weight: 3, arbitrary: fc.constantFrom(...contentTypes) }
)

const encode = (text: string) => new TextEncoder().encode(text)

const bodyBytes: fc.Arbitrary<Uint8Array> = fc.oneof(
  { weight: 6, arbitrary: createBody.map((body) => encode(JSON.stringify(body))) },
  { weight: 2, arbitrary: fc.jsonValue().map((value) => encode(JSON.stringify(value) ?? "")) },
  { weight: 1, arbitrary: fc.uint8Array({ maxLength: 200 }) },
  { weight: 1, arbitrary: fc.string({ unit: "binary", maxLength: 100 }).map(encode) },
  {
    weight: 1,
    arbitrary: fc
      .tuple(createBody, fc.nat())
      .map(([body, cut]) => {
        const text = JSON.stringify(body)
        return encode(text.slice(0, cut % text.length))
      })
  },
  {
    weight: 1,
    arbitrary: fc
      .integer({ min: LIMIT - 40, max: 2 * LIMIT })
      .map((n) => encode(JSON.stringify({ method: "GET", path: "/big", handler: "a".repeat(n) })))
  }
)

const decoder = new TextDecoder("utf-8", { fatal: true })

/** The code the contract predicts for an authorised POST with this content type and body. */
const predict = (json: boolean, bytes: Uint8Array): ReadonlyArray<string> => {
  if (!json) return ["unsupported_media_type"]
  if (bytes.length > LIMIT) return ["payload_too_large"]
  let value: unknown
  try {
    value = JSON.parse(decoder.decode(bytes))
  } catch {
    return ["malformed_json"]
  }
  return expectedGroups(value).length > 0 ? ["invalid_route"] : ["created", "route_conflict"]
}

const ALLOWED_STATUSES = [201, 400, 409, 413, 415]

describe("RoutingHandler through every adapter (property-based)", () => {
  for (const adapter of adapters) {
    describe(adapter.name, () => {
      it("random bodies answer 201/400/409/413/415 (never 500), each with the code the contract predicts", () =>
        withServer(adapter, async (server) => {
          await fc.assert(
            fc.asyncProperty(contentType, bodyBytes, async ([type, json], bytes) => {
              const response = await server.send({
                method: "POST",
                path: "/v1/routing",
                headers: { authorization: `Bearer ${ADMIN}`, ...(type === undefined ? {} : { "content-type": type }) },
                body: bytes
              })
              assert.include(ALLOWED_STATUSES, response.status, response.text)
              const code = checkAnswer(response)
              assert.include(predict(json, bytes), code, response.text)
            }),
            { numRuns: 250 }
          )
        }))

      it("create accepts exactly the path grammar, and GET returns the stored path byte for byte", () =>
        withServer(adapter, async (server) => {
          let n = 0
          await fc.assert(
            fc.asyncProperty(fc.oneof(grammarPath, adversarialPath, mutatedPath), async (path) => {
              const method = methodFor(n++) // a method of its own: no conflicts between runs
              const created = await server.send({
                method: "POST",
                path: "/v1/routing",
                headers: { authorization: `Bearer ${ADMIN}`, "content-type": "application/json" },
                body: JSON.stringify({ method, path, handler: "h" })
              })
              const code = checkAnswer(created)
              if (oracle(path) === undefined) {
                assert.strictEqual(code, "invalid_route", `${JSON.stringify(path)}: ${created.text}`)
                assert.deepStrictEqual([...new Set(created.json.errors.map((e: any) => e.path))], ["path"])
                return
              }
              assert.strictEqual(code, "created", `${JSON.stringify(path)}: ${created.text}`)
              assert.strictEqual(created.json.path, path)
              const found = await server.send({
                method: "GET",
                path: created.headers.get("location")!,
                headers: { authorization: `Bearer ${READER}` }
              })
              assert.strictEqual(found.status, 200)
              assert.strictEqual(found.text, created.text)
              assert.strictEqual(found.json.path, path)
            }),
            { numRuns: 200 }
          )
        }))
    })
  }
})

// ---------------------------------------------------------------------------------------------------------------
// Authorization headers
// ---------------------------------------------------------------------------------------------------------------

const configuredToken = fc.constantFrom(...CONFIGURED)
const bearerScheme = fc.constantFrom("Bearer", "bearer", "BEARER", "bEaReR")
const token68 = fc
  .tuple(
    fc.string({
      unit: fc.constantFrom(..."ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~+/"),
      minLength: 1,
      maxLength: 40
    }),
    fc.string({ unit: fc.constant("="), maxLength: 2 })
  )
  .map(([body, padding]) => body + padding)

/**
 * Whitespace a client can put in a header (HTTP's own space and tab, and Latin-1's no-break space and NEL), and
 * the other characters a Unicode-aware trim removes, which only reach the core directly.
 */
const whitespace = fc.constantFrom(" ", "  ", "\t", "\u00a0", "\u0085")
const unicodeWhitespace = fc.constantFrom("\u000b", "\u000c", "\u2028", "\u2029", "\u3000", "\ufeff", "\u2003")

/** What an HTTP client sends as a header value: tab, visible ASCII, Latin-1 (obs-text). */
const sendable = (value: string) => /^[\t\x20-\x7e\x80-\xff]*$/.test(value)

type Edit = (token: string, at: number, char: string) => string
const nearMisses: ReadonlyArray<Edit> = [
  (t, at) => t.slice(0, at % t.length), // a proper prefix
  (t, _, c) => t + c, // a suffix
  (t) => t.toUpperCase(),
  (t, at) => t.slice(0, at % t.length) + flipCase(t[at % t.length]!) + t.slice((at % t.length) + 1),
  (t, at, c) => t.slice(0, at % t.length) + c + t.slice((at % t.length) + 1), // one character changed
  (t, at, c) => t.slice(0, at % t.length) + c + t.slice(at % t.length), // one character inserted
  (t) => t + "=",
  (t) => `${t}, ${t}`,
  (t) => `${t} ${t}`
]
const flipCase = (c: string) => (c === c.toUpperCase() ? c.toLowerCase() : c.toUpperCase())

const nearMissToken = fc
  .tuple(configuredToken, fc.constantFrom(...nearMisses), fc.nat(), fc.constantFrom("x", "-", "=", "A", "0", " ", "é"))
  .map(([token, edit, at, char]) => edit(token, at, char))
  .filter((token) => !CONFIGURED.includes(token))

/** Header values a transport can carry (Latin-1, no CR, LF or NUL). */
const latin1 = fc.oneof(
  { weight: 6, arbitrary: fc.integer({ min: 0x20, max: 0x7e }) },
  { weight: 1, arbitrary: fc.integer({ min: 0x80, max: 0xff }) },
  { weight: 1, arbitrary: fc.constant(0x09) }
).map((c) => String.fromCharCode(c))

const headerValue = (space: fc.Arbitrary<string>): fc.Arbitrary<string> =>
  fc.oneof(
    { weight: 2, arbitrary: fc.string({ unit: latin1, maxLength: 40 }) },
    {
      weight: 2,
      arbitrary: fc
        .tuple(fc.constantFrom("Basic", "Token", "Bearerx", "Digest", "Negotiate", "B", ""), configuredToken)
        .map(([scheme, token]) => `${scheme} ${token}`)
    },
    { weight: 2, arbitrary: fc.tuple(bearerScheme, token68).map(([scheme, token]) => `${scheme} ${token}`) },
    { weight: 4, arbitrary: fc.tuple(bearerScheme, nearMissToken).map(([scheme, token]) => `${scheme} ${token}`) },
    {
      // A configured token with whitespace added around or inside the credential.
      weight: 4,
      arbitrary: fc
        .tuple(bearerScheme, configuredToken, space, fc.constantFrom("before", "after", "between", "inside", "scheme"))
        .map(([scheme, token, ws, where]) =>
          where === "before"
            ? `${ws}${scheme} ${token}`
            : where === "after"
            ? `${scheme} ${token}${ws}`
            : where === "between"
            ? `${scheme}${ws}${token}`
            : where === "inside"
            ? `${scheme} ${token.slice(0, 3)}${ws}${token.slice(3)}`
            : `${scheme.slice(0, 3)}${ws}${scheme.slice(3)} ${token}`
        )
    },
    {
      // The accepted form: the scheme in any case, one or more spaces, a configured token.
      weight: 2,
      arbitrary: fc
        .tuple(bearerScheme, fc.integer({ min: 1, max: 3 }), configuredToken)
        .map(([scheme, spaces, token]) => `${scheme}${" ".repeat(spaces)}${token}`)
    }
  )

/**
 * `true` when the value is "Bearer" (any case), one or more spaces (RFC 6750: 1*SP), then exactly a configured
 * token, once the leading and trailing spaces and tabs every HTTP transport strips (RFC 9110 §5.5) are removed.
 */
const carriesConfiguredToken = (value: string): boolean => {
  const match = /^bearer +(.*)$/i.exec(value.replace(/^[ \t]+|[ \t]+$/g, ""))
  return match !== null && CONFIGURED.includes(match[1]!)
}

const AUTH_CODES = ["unauthenticated", "invalid_request", "invalid_token"]

/** A header value for a message, every non-ASCII character escaped (a no-break space is not a space). */
const show = (value: string) =>
  JSON.stringify(value).replace(/[\u007f-\uffff]/g, (c) => "\\u" + c.charCodeAt(0).toString(16).padStart(4, "0"))

/** The answer to a GET of an unknown id: authenticated callers get past authentication (403 or 404). */
const checkAuthentication = (value: string, response: Received): boolean => {
  assertCleanHeaders(response)
  const code = checkAnswer(response)
  if (carriesConfiguredToken(value)) {
    assert.include(["route_not_found", "insufficient_scope"], code, `${show(value)}: ${response.text}`)
    return true
  } else {
    assert.include(AUTH_CODES, code, `${show(value)} got past authentication: ${response.status}`)
    assert.match(response.headers.get("www-authenticate") ?? "", /^Bearer realm="routing"/)
    return false
  }
}

describe("Authorization headers (property-based)", () => {
  it("the static authenticator accepts a token if and only if it is exactly a configured one", () => {
    fc.assert(
      fc.property(
        fc.uniqueArray(token68, { minLength: 1, maxLength: 5 }), // configured tokens must be well formed
        fc.nat(),
        fc.oneof(
          fc.string({ unit: "binary", maxLength: 14 }),
          fc.tuple(fc.nat(), fc.constantFrom(...nearMisses), fc.nat(), fc.string({ minLength: 1, maxLength: 1 }))
        ),
        (configured, pick, presentedSpec) => {
          const authenticator = Authenticator.makeStaticTokens(
            configured.map((token, i) => ({ token: Redacted.make(token), scopes: ["routes:read"], id: `p${i}` }))
          )
          const presented = typeof presentedSpec === "string"
            ? (pick % 3 === 0 ? configured[pick % configured.length]! : presentedSpec)
            : presentedSpec[1](configured[presentedSpec[0] % configured.length]!, presentedSpec[2], presentedSpec[3])
          const exit = Effect.runSyncExit(authenticator.authenticate(Redacted.make(presented)))
          const index = configured.indexOf(presented)
          if (index === -1) {
            assert.isTrue(
              Exit.isFailure(exit),
              `${JSON.stringify(presented)} accepted; configured ${JSON.stringify(configured)}`
            )
          } else {
            assert.isTrue(Exit.isSuccess(exit))
            if (Exit.isSuccess(exit)) assert.strictEqual(exit.value.id, `p${index}`)
          }
        }
      ),
      { numRuns: 5000 }
    )
  })

  it("the request core: no header authenticates unless it is \"Bearer <configured token>\"", async () => {
    const handler = Effect.runSync(
      RoutingHandler.make().pipe(Effect.provide(Layer.merge(RouteRepository.layerMemory, tokens)))
    )
    let authenticated = 0
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(headerValue(fc.oneof(whitespace, unicodeWhitespace)), fc.string({ unit: "binary", maxLength: 30 })),
        async (value) => {
          const effect = handler.handle({
            method: "GET",
            path: `/v1/routing/${Route.makeRouteId(0)}`,
            query: "",
            header: (name) => (name === "authorization" ? value : undefined),
            body: () => Effect.succeed(new Uint8Array(0))
          })!
          const response = await Effect.runPromise(effect)
          const json = JSON.parse(response.body)
          const received = {
            status: response.status,
            headers: new Headers(response.headers),
            text: response.body,
            json
          }
          if (checkAuthentication(value, received)) authenticated++
        }
      ),
      { numRuns: 3000 }
    )
    assert.isAbove(authenticated, 0, "the accepted form was never generated")
  })

  for (const adapter of adapters) {
    it(`through ${adapter.name}: no header authenticates unless it is "Bearer <configured token>"`, () =>
      withServer(adapter, async (server) => {
        let authenticated = 0
        await fc.assert(
          fc.asyncProperty(
            headerValue(whitespace).filter(sendable),
            async (value) => {
              const response = await server.send({
                method: "GET",
                path: `/v1/routing/${Route.makeRouteId(0)}`,
                headers: { authorization: value }
              })
              if (checkAuthentication(value, response)) authenticated++
            }
          ),
          { numRuns: 250 }
        )
        assert.isAbove(authenticated, 0, "the accepted form was never generated")
      }))
  }
})

describe("the listing query (property-based)", () => {
  const names = fc.constantFrom("limit", "cursor", "method", "pathPrefix", "handler", "middleware", "access_token", "x")
  const values = fc.oneof(
    fc.constantFrom("1", "1000", "1001", "0", "GET", "get", "/users", "users", "auth", "a b", "", "%2B", "+"),
    fc.string({ maxLength: 12 })
  )
  const KNOWN = new Set(["limit", "cursor", "method", "pathPrefix", "handler", "middleware"])

  it("any query is a page or 400 invalid_query naming only parameters it holds, and every repeated or unknown one", async () => {
    const handler = Effect.runSync(
      RoutingHandler.make().pipe(Effect.provide(Layer.merge(RouteRepository.layerMemory, tokens)))
    )
    await fc.assert(
      fc.asyncProperty(fc.array(fc.tuple(names, values), { maxLength: 6 }), async (pairs) => {
        const query = new URLSearchParams(pairs).toString()
        const response = await Effect.runPromise(
          handler.handle({
            method: "GET",
            path: "/v1/routing",
            query,
            header: (name) => (name === "authorization" ? `Bearer ${ADMIN}` : undefined),
            body: () => Effect.succeed(new Uint8Array(0))
          })!
        )
        const json = JSON.parse(response.body)
        const given = pairs.map(([name]) => name)
        const mustName = given.filter((name, i) => !KNOWN.has(name) || given.indexOf(name) !== i)
        if (response.status === 200) {
          assert.deepStrictEqual(mustName, [])
          assert.deepStrictEqual(Object.keys(json), ["items", "nextCursor"])
          return
        }
        assert.strictEqual(response.status, 400, response.body)
        assert.strictEqual(json.code, "invalid_query")
        const named = json.errors.map((e: { path: string }) => e.path)
        for (const name of named) assert.include(given, name)
        for (const name of mustName) assert.include(named, name)
        assert.strictEqual(new Set(named).size, named.length, "each parameter named once")
      }),
      { numRuns: 2000 }
    )
  })
})
