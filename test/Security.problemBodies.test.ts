/**
 * Security: no stack, SQL or driver text in problem bodies, whatever a store fails with; only the fixed 500 and 503
 * documents.
 */
import { SqlError } from "@effect/sql/SqlError"
import { assert, beforeAll, describe, it, onTestFinished } from "@effect/vitest"
import type { Context } from "effect"
import { Effect, Layer } from "effect"
import * as fc from "fast-check"
import * as Util from "node:util"
import * as Route from "route-registry/Route"
import * as RouteRepository from "route-registry/RouteRepository"
import * as RoutingHandler from "route-registry/RoutingHandler"
import { adapters } from "./utils/adapters.js"
import { ADMIN, get, post, quiet, tokens } from "./utils/httpContract.js"
import { coreRequest, runCore, sample, staticTokens } from "./utils/security.js"

const LEAKS = [
  "SELECT * FROM route_registry_routes WHERE id = $1",
  "INSERT INTO secret_table VALUES ('x')",
  "at Object.<anonymous> (/srv/app/src/PgRouteRepository.ts:120:17)",
  "    at processTicksAndRejections (node:internal/process/task_queues:95:5)",
  "connect ECONNREFUSED 127.0.0.1:5432",
  "pg: password authentication failed for user \"postgres\"",
  "relation \"route_registry_routes\" does not exist",
  "/home/deploy/.env",
  "DATABASE_URL=postgres://admin:hunter2@db:5432/prod",
  ADMIN
]

const leakyText = fc.oneof(
  fc.constantFrom(...LEAKS),
  fc.tuple(fc.constantFrom(...LEAKS), fc.string({ maxLength: 20 })).map(([a, b]) => a + b),
  fc.string({ minLength: 1, maxLength: 40 })
)

type Failure = {
  readonly kind: "Error" | "pg" | "SqlError" | "string" | "object" | "throw" | "typed SqlError" | "unavailable"
  readonly text: string
}

const failure: fc.Arbitrary<Failure> = fc.record({
  kind: fc.constantFrom("Error", "pg", "SqlError", "string", "object", "throw", "typed SqlError", "unavailable"),
  text: leakyText
})

const pgError = (text: string) =>
  Object.assign(new Error(text), {
    code: "42P01",
    severity: "ERROR",
    detail: text,
    hint: text,
    where: `SQL statement "${text}"`,
    query: `SELECT * FROM x WHERE y = '${text}'`,
    routine: "parserOpenTable"
  })

/** A store failing with `f` on every call: defects of every shape, and the one typed failure it may have. */
const failWith = (f: Failure): Effect.Effect<never, RouteRepository.StoreUnavailable> => {
  switch (f.kind) {
    case "Error":
      return Effect.die(Object.assign(new Error(f.text), { cause: new Error(f.text) }))
    case "pg":
      return Effect.die(pgError(f.text))
    case "SqlError":
      return Effect.die(new SqlError({ cause: pgError(f.text), message: f.text }))
    case "string":
      return Effect.die(f.text)
    case "object":
      return Effect.die({ message: f.text, stack: f.text, sql: f.text })
    case "throw":
      return Effect.sync(() => {
        throw new TypeError(f.text)
      })
    case "typed SqlError":
      // A host's store letting a driver error through its error channel (outside its declared types, but tagged).
      return Effect.fail(new SqlError({ cause: pgError(f.text), message: f.text }) as never)
    case "unavailable":
      return Effect.fail(new RouteRepository.StoreUnavailable({ reason: f.text, cause: pgError(f.text) }))
  }
}

const storeFailing = (current: () => Failure): Context.Tag.Service<RouteRepository.RouteRepository> =>
  RouteRepository.RouteRepository.of({
    create: () => Effect.suspend(() => failWith(current())),
    findById: () => Effect.suspend(() => failWith(current())),
    list: () => Effect.suspend(() => failWith(current())),
    update: () => Effect.suspend(() => failWith(current())),
    remove: () => Effect.suspend(() => failWith(current()))
  })

const TRANSPORT_HEADERS = new Set(["date", "connection", "keep-alive", "content-length", "transfer-encoding"])

describe("no stack, SQL or driver text in any problem body", () => {
  // The 503 document, as answered for a store that is simply unavailable.
  let unavailableBody = ""
  beforeAll(async () => {
    const handler = RoutingHandler.makeWith(storeFailing(() => ({ kind: "unavailable", text: "x" })), staticTokens)
    unavailableBody = (await runCore(handler, coreRequest("GET"))).body
    assert.include(unavailableBody, "store_unavailable")
  })

  const expectFixed = (f: Failure, status: number, body: string, headers: Record<string, string | null>) => {
    if (f.kind === "unavailable") {
      assert.strictEqual(status, 503)
      assert.strictEqual(body, unavailableBody)
    } else {
      assert.strictEqual(status, 500)
      assert.strictEqual(body, RoutingHandler.internalError.body)
    }
    // The answer's own headers are exactly the fixed ones (a substring search would match a short random text in
    // a legitimate value, such as "appl" in the content type); the transport's own headers carry nothing of it.
    const own = Object.fromEntries(Object.entries(headers).filter(([name]) => !TRANSPORT_HEADERS.has(name)))
    assert.deepStrictEqual(
      own,
      f.kind === "unavailable"
        ? { "content-type": "application/problem+json", "retry-after": "1" }
        : { "content-type": "application/problem+json" }
    )
  }

  it("the request core answers exactly the fixed 500 or 503 document, whatever the store fails with", async () => {
    let current: Failure = { kind: "Error", text: "x" }
    const handler = RoutingHandler.makeWith(storeFailing(() => current), staticTokens)
    await fc.assert(
      fc.asyncProperty(failure, fc.constantFrom("GET" as const, "POST" as const), async (f, method) => {
        current = f
        const response = await runCore(handler, coreRequest(method))
        expectFixed(f, response.status, response.body, response.headers)
      }),
      { numRuns: 2000 }
    )
  })

  for (const adapter of adapters) {
    it(`through ${adapter.name}: exactly the fixed 500 or 503 document`, async () => {
      let current: Failure = { kind: "Error", text: "x" }
      const store = Layer.succeed(RouteRepository.RouteRepository, storeFailing(() => current))
      const server = await adapter.start(Layer.mergeAll(store, tokens, quiet))
      onTestFinished(() => server.close())
      await fc.assert(
        fc.asyncProperty(failure, fc.boolean(), async (f, create) => {
          current = f
          const response = await server.send(create ? post(sample) : get(Route.makeRouteId(0)))
          const headers: Record<string, string> = {}
          response.headers.forEach((value, name) => (headers[name] = value))
          expectFixed(f, response.status, response.text, headers)
          assert.strictEqual(response.headers.get("content-type"), "application/problem+json")
        }),
        { numRuns: 80 }
      )
    })
  }

  it("a store failing with an untagged value in its error channel (an untyped host store) still gets the 500 document", async () => {
    for (const value of [new Error("SELECT * FROM secret_table"), "ECONNREFUSED 127.0.0.1:5432", { detail: "pg" }]) {
      const repository = RouteRepository.RouteRepository.of({
        create: () => Effect.fail(value as never),
        findById: () => Effect.fail(value as never),
        list: () => Effect.fail(value as never),
        update: () => Effect.fail(value as never),
        remove: () => Effect.fail(value as never)
      })
      const handler = RoutingHandler.makeWith(repository, staticTokens)
      for (const method of ["GET", "POST"] as const) {
        const response = await runCore(handler, coreRequest(method)).catch((error) => ({
          status: -1,
          body: `the core failed: ${error}`
        }))
        assert.strictEqual(response.status, 500, `${method} with ${Util.inspect(value)}: ${response.body}`)
        assert.strictEqual(response.body, RoutingHandler.internalError.body)
      }
    }
  })
})
