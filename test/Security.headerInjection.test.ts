/**
 * Security: no header injection. Location is built from a route id only; a line break anywhere in a request is
 * refused or answered 404, never echoed into a header.
 */
import { assert, describe, it, onTestFinished } from "@effect/vitest"
import { Effect, Layer } from "effect"
import * as fc from "fast-check"
import * as Route from "route-registry/Route"
import * as RouteRepository from "route-registry/RouteRepository"
import * as RoutingHandler from "route-registry/RoutingHandler"
import type { Received } from "./utils/adapters.js"
import { adapters } from "./utils/adapters.js"
import { methodFor } from "./utils/arbitraries.js"
import { assertProblem, get, post, tokens } from "./utils/httpContract.js"
import { coreRequest, runCore, sample, staticTokens } from "./utils/security.js"

const assertCleanHeaders = (response: Received) =>
  response.headers.forEach((value, name) => assert.notMatch(value, /[\r\n]/, `header ${name}`))

const CRLF = fc.constantFrom("\r", "\n", "\r\n", "\r\nSet-Cookie: x=1", "\nLocation: //evil.example")

/** A valid body with a line break put somewhere: in a value, a middleware name or a key. */
const bodyWithLineBreak = fc
  .tuple(fc.constantFrom("method", "path", "handler", "middleware", "key"), CRLF, fc.nat())
  .map(([field, crlf, at]) => {
    const body: Record<string, unknown> = { ...sample, middleware: ["auth", "log"] }
    const insert = (s: string) => s.slice(0, at % (s.length + 1)) + crlf + s.slice(at % (s.length + 1))
    if (field === "key") body[insert("extra")] = 1
    else if (field === "middleware") body.middleware = ["auth", insert("log")]
    else body[field] = insert(body[field] as string)
    return { field, body }
  })

describe("no header injection", () => {
  for (const adapter of adapters) {
    describe(adapter.name, () => {
      it("Location is exactly /v1/routing/{id} for every create; no header value carries a line break", async () => {
        const server = await adapter.start(Layer.merge(RouteRepository.layerMemory, tokens))
        onTestFinished(() => server.close())
        let n = 0
        await fc.assert(
          fc.asyncProperty(fc.constantFrom("/", "/a/:b", "/%0D%0A/:x", "/Set-Cookie=x;y"), async (path) => {
            const created = await server.send(post({ method: methodFor(n++), path, handler: "h" }))
            assert.strictEqual(created.status, 201, created.text)
            assertCleanHeaders(created)
            assert.isTrue(Route.isRouteId(created.json.id))
            assert.strictEqual(created.headers.get("location"), `/v1/routing/${created.json.id}`)
            assert.isNull(created.headers.get("set-cookie"))
          }),
          { numRuns: 100 }
        )
      })

      it("a CR or LF anywhere in the body is refused 400 invalid_route, never stored", async () => {
        const server = await adapter.start(Layer.merge(RouteRepository.layerMemory, tokens))
        onTestFinished(() => server.close())
        await fc.assert(
          fc.asyncProperty(bodyWithLineBreak, async ({ body, field }) => {
            const response = await server.send(post(body))
            assertCleanHeaders(response)
            assertProblem(response, "invalid_route", ["errors"])
            const paths = response.json.errors.map((e: { path: string }) => e.path)
            if (field === "key") assert.isTrue(paths.some((p: string) => /[\r\n]/.test(p)))
            else assert.isTrue(paths.some((p: string) => p.startsWith(field)), JSON.stringify(paths))
            assert.isNull(response.headers.get("location"))
            assert.isNull(response.headers.get("set-cookie"))
          }),
          { numRuns: 100 }
        )
      })

      it("GET /v1/routing/%0D%0ASet-Cookie:x answers 404 with no Set-Cookie", async () => {
        const server = await adapter.start(Layer.merge(RouteRepository.layerMemory, tokens))
        onTestFinished(() => server.close())
        for (
          const id of [
            "%0D%0ASet-Cookie:x",
            "%0ASet-Cookie:%20x=1",
            "x%0D%0ALocation:%20evil",
            "%E5%98%8A%E5%98%8D"
          ]
        ) {
          const response = await server.send(get(id))
          assertProblem(response, "route_not_found")
          assertCleanHeaders(response)
          assert.isNull(response.headers.get("set-cookie"))
          assert.isNull(response.headers.get("location"))
        }
        // With a "/" in it, it is no item path at all: the host's (or the adapter's) 404, still nothing injected.
        const response = await server.send(get("x%0D%0ALocation:%20//evil.example"))
        assert.strictEqual(response.status, 404)
        assertCleanHeaders(response)
        assert.isNull(response.headers.get("set-cookie"))
        assert.isNull(response.headers.get("location"))
      })
    })
  }

  it("the request core builds Location from a route id only, whatever id a store hands back", async () => {
    for (const id of ["x\r\nSet-Cookie: a=b", "../../admin", "//evil.example/x", "a b"]) {
      const repository = RouteRepository.RouteRepository.of({
        create: (input) =>
          Effect.succeed(
            new Route.StoredRoute({ ...input, id: id as Route.RouteId, createdAt: new Date(0), revision: 1 }, true)
          ),
        findById: (id) => Effect.fail(new RouteRepository.RouteNotFound({ id })),
        list: () => Effect.succeed({ items: [], hasMore: false }),
        update: (id) => Effect.fail(new RouteRepository.RouteNotFound({ id })),
        remove: (id) => Effect.fail(new RouteRepository.RouteNotFound({ id }))
      })
      const handler = RoutingHandler.makeWith(repository, staticTokens)
      const response = await runCore(handler, coreRequest("POST"))
      for (const [name, value] of Object.entries(response.headers)) {
        assert.notMatch(value, /[\r\n]/, `${JSON.stringify(id)}: header ${name}`)
      }
      if (response.status === 201) {
        assert.match(response.headers.location ?? "", /^\/v1\/routing\/[0-9a-f]{8}-[0-9a-f]{4}-7/, JSON.stringify(id))
      } else {
        assert.strictEqual(response.status, 500, JSON.stringify(id))
      }
    }
  })
})
