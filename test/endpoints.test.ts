import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Layer, Tracer } from "effect"
import * as Problem from "route-registry/Problem"
import * as RouteRepository from "route-registry/RouteRepository"
import * as RoutingApi from "route-registry/RoutingApi"
import * as RoutingHandler from "route-registry/RoutingHandler"
import * as Telemetry from "route-registry/Telemetry"
import { ENDPOINTS, EVERY_ENDPOINT, type Name, RESOURCES } from "../src/internal/http/endpoints.js"
import { ADMIN, READER, tokens, WRITER } from "./utils/httpContract.js"

// The endpoint table is the one statement of the API: the OpenAPI document, dispatch, the Allow of a 405 and
// telemetry's names must each say what it says.

const spec = RoutingApi.openApi as any
const names = Object.keys(ENDPOINTS) as ReadonlyArray<Name>
const ID = "r_00000000000000000000000000"

const spans: Array<Tracer.Span> = []
const recording = Layer.unwrapEffect(Effect.map(Effect.tracer, (native) =>
  Layer.setTracer(Tracer.make({
    span: (...args) => {
      const span = native.span(...args)
      spans.push(span)
      return span
    },
    context: (f, fiber) => native.context(f, fiber)
  }))))

const send = (method: string, path: string, token: string) =>
  Effect.flatMap(RoutingHandler.make(), (handler) => {
    const answer = handler.handle({
      method,
      path,
      query: "",
      header: (name) => name === "authorization" ? `Bearer ${token}` : undefined,
      body: () => Effect.succeed(new Uint8Array())
    })
    assert.isDefined(answer, `${method} ${path} is served`)
    return answer!
  }).pipe(Effect.provide(Layer.mergeAll(RouteRepository.layerMemory, tokens, Telemetry.layer(), recording)))

const codesOf = (response: any): Array<string> => {
  const schema = response.content?.[Problem.CONTENT_TYPE]?.schema
  if (schema === undefined) return []
  return (schema.anyOf ?? [schema]).map((s: { $ref: string }) =>
    spec.components.schemas[s.$ref.split("/").pop()!].properties.code.enum[0]
  )
}

describe("the endpoint table", () => {
  it("is the OpenAPI document's operations, each with its problems and those of every endpoint", () => {
    const documented = Object.entries<Record<string, any>>(spec.paths).flatMap(([path, item]) =>
      Object.entries<any>(item).map(([method, operation]) => `${method.toUpperCase()} ${path} ${operation.operationId}`)
    )
    assert.deepStrictEqual(
      documented.sort(),
      names.map((name) => `${ENDPOINTS[name].method} ${ENDPOINTS[name].path} routing.${name}`).sort()
    )
    for (const name of names) {
      const { method, path, problems } = ENDPOINTS[name]
      const operation = spec.paths[path][method.toLowerCase()]
      const codes = new Set(Object.values<any>(operation.responses).flatMap(codesOf))
      assert.deepStrictEqual([...codes].sort(), [...new Set([...problems, ...EVERY_ENDPOINT])].sort(), name)
    }
  })

  it("gives every path's Allow, in the document and in the 405 the core answers", () =>
    Effect.gen(function*() {
      for (const resource of RESOURCES) {
        const item = spec.paths[resource.path]
        for (const operation of Object.values<any>(item)) {
          assert.deepStrictEqual(operation.responses["405"].headers.Allow.schema.enum, [resource.allow])
        }
        const refused = yield* send("PUT", resource.path.replace("{id}", ID), ADMIN)
        assert.strictEqual(refused.status, 405, resource.path)
        assert.strictEqual(refused.headers.allow, resource.allow, resource.path)
      }
      assert.strictEqual(RoutingHandler.COLLECTION_ALLOW, "GET, POST")
      assert.strictEqual(RoutingHandler.ROUTE_ALLOW, "GET, PATCH, DELETE")
      assert.strictEqual(RoutingHandler.CHANGES_ALLOW, "GET")
    }))

  it("dispatches each endpoint to its operation, under its scope, named by telemetry after its row", () =>
    Effect.gen(function*() {
      for (const name of names) {
        const { method, operation, path, scope } = ENDPOINTS[name]
        const target = path.replace("{id}", ID)
        const refused = yield* send(method, target, scope === "routes:read" ? WRITER : READER)
        assert.strictEqual(refused.problem, "insufficient_scope", name)
        spans.length = 0
        const answered = yield* Effect.exit(send(method, target, ADMIN))
        assert.isTrue(Exit.isSuccess(answered), name)
        const span = spans.find((span) => span.name === `${method} ${path}`)
        assert.isDefined(span, `${name}: a span named ${method} ${path}`)
        assert.strictEqual(span!.attributes.get("route_registry.operation"), operation, name)
      }
    }))
})
