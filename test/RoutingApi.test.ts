import * as FetchHttpClient from "@effect/platform/FetchHttpClient"
import * as HttpApiClient from "@effect/platform/HttpApiClient"
import * as HttpClient from "@effect/platform/HttpClient"
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import * as Problem from "route-registry/Problem"
import * as Route from "route-registry/Route"
import * as RouteRepository from "route-registry/RouteRepository"
import * as RoutingApi from "route-registry/RoutingApi"
import { adapters, type Received, type Sent, type Served } from "./utils/adapters.js"
import { ADMIN, failingStore, get, post, quiet, READER, stalledBody, tokens } from "./utils/httpContract.js"

const spec = RoutingApi.openApi as any
const operations = { create: spec.paths["/v1/routing"].post, get: spec.paths["/v1/routing/{id}"].get }
type Operation = keyof typeof operations

const documented = (operation: Operation): Set<string> => {
  const entries = Object.entries<any>(operations[operation].responses).flatMap(([status, response]) => {
    const schema = response.content?.[Problem.CONTENT_TYPE]?.schema
    if (schema === undefined) return [`${status}`]
    return (schema.anyOf ?? [schema]).map((s: { $ref: string }) => {
      const name = s.$ref.split("/").pop()!
      return `${status} ${spec.components.schemas[name].properties.code.enum[0]}`
    })
  })
  return new Set(entries)
}

const sample = { method: "GET", path: "/users/:id", handler: "show" }

// Requests that, between them, draw every answer each operation can give.
const probes = async (served: Served): Promise<Record<Operation, Array<Received>>> => {
  const send = (request: Sent) => served.send(request)
  const created = await send(post(sample))
  const id = created.json.id as string
  return {
    create: [
      created,
      await send(post(sample, { authorization: "Bearer", "content-type": "application/json" })),
      await send(post("{", { authorization: `Bearer ${ADMIN}`, "content-type": "application/json" })),
      await send(post({ method: "get" })),
      await send(post(sample, { "content-type": "application/json" })),
      await send(post(sample, { authorization: "Bearer nope", "content-type": "application/json" })),
      await send(post(sample, { authorization: `Bearer ${READER}`, "content-type": "application/json" })),
      await send({ method: "GET", path: "/v1/routing", headers: {} }),
      await send(post(sample)),
      await send(post("x".repeat(70_000))),
      await send(post(sample, { authorization: `Bearer ${ADMIN}`, "content-type": "text/plain" })),
      await send({ ...post(sample), body: stalledBody() })
    ],
    get: [
      await send(get(id)),
      await send(get(id, { authorization: "Bearer" })),
      await send(get(id, {})),
      await send(get(id, { authorization: "Bearer nope" })),
      await send(get(id, { authorization: "Bearer write-token" })),
      await send(get(Route.makeRouteId(0))),
      await send({ method: "DELETE", path: `/v1/routing/${id}`, headers: {} })
    ]
  }
}

const answers = (responses: ReadonlyArray<Received>) =>
  responses.map((r) => r.status < 400 ? `${r.status}` : `${r.status} ${r.json.code}`)

describe("RoutingApi", () => {
  it("is an OpenAPI 3.1 document with bearer security on both operations", () => {
    assert.strictEqual(spec.openapi, "3.1.0")
    assert.deepStrictEqual(spec.components.securitySchemes, { bearer: { type: "http", scheme: "bearer" } })
    for (const operation of Object.values(operations)) assert.deepStrictEqual(operation.security, [{ bearer: [] }])
    assert.deepStrictEqual(Object.keys(spec.paths), ["/v1/routing", "/v1/routing/{id}"])
    assert.strictEqual(operations.create.responses["201"].headers.Location.schema.type, "string")
  })

  for (const adapter of adapters) {
    describe(adapter.name, () => {
      it("documents exactly the statuses and codes the server answers", async () => {
        const seen: Record<Operation, Set<string>> = { create: new Set(), get: new Set() }
        for (const store of [RouteRepository.layerMemory, failingStore("unavailable"), failingStore("defect")]) {
          const served = await adapter.start(Layer.mergeAll(store, tokens, quiet), { bodyTimeoutMillis: 300 })
          try {
            if (store === RouteRepository.layerMemory) {
              const drawn = await probes(served)
              answers(drawn.create).forEach((a) => seen.create.add(a))
              answers(drawn.get).forEach((a) => seen.get.add(a))
            } else {
              answers([await served.send(post(sample))]).forEach((a) => seen.create.add(a))
              answers([await served.send(get(Route.makeRouteId(0)))]).forEach((a) => seen.get.add(a))
            }
          } finally {
            await served.close()
          }
        }
        for (const operation of ["create", "get"] as const) {
          assert.deepStrictEqual([...seen[operation]].sort(), [...documented(operation)].sort(), operation)
        }
      })

      let served: Served
      beforeAll(async () => {
        served = await adapter.start(Layer.merge(RouteRepository.layerMemory, tokens))
      })
      afterAll(() => served.close())

      const client = (token: string) =>
        HttpApiClient.make(RoutingApi.RoutingApi, {
          baseUrl: served.origin,
          transformClient: HttpClient.mapRequest(HttpClientRequest.bearerToken(token))
        }).pipe(
          Effect.provide(FetchHttpClient.layer),
          Effect.provideService(FetchHttpClient.Fetch, served.fetch)
        )

      it.effect("the typed client creates and gets, decoding Route", () =>
        Effect.gen(function*() {
          const api = yield* client(ADMIN)
          const payload = Route.CreateRoute.make({
            method: "PUT" as Route.HttpMethod,
            path: "/typed/:id" as Route.RoutePath,
            middleware: ["auth" as Route.MiddlewareName],
            handler: "update" as Route.HandlerName
          })
          const created = yield* api.routing.create({ payload })
          assert.instanceOf(created, Route.Route)
          assert.instanceOf(created.createdAt, Date)
          const found = yield* api.routing.get({ path: { id: created.id } })
          assert.deepStrictEqual(found, created)
        }))

      it.effect("the typed client receives problems as typed errors, by code", () =>
        Effect.gen(function*() {
          const api = yield* client(ADMIN)
          const payload = Route.CreateRoute.make({
            method: "GET" as Route.HttpMethod,
            path: "/typed-conflict" as Route.RoutePath,
            handler: "h" as Route.HandlerName
          })
          const first = yield* api.routing.create({ payload })
          const conflict = yield* Effect.flip(api.routing.create({ payload }))
          assert.deepInclude(conflict, { code: "route_conflict", status: 409, conflictingRouteId: first.id })
          const missing = yield* Effect.flip(api.routing.get({ path: { id: "nope" } }))
          assert.deepInclude(missing, { code: "route_not_found", status: 404 })
          const denied = yield* Effect.flip(
            Effect.flatMap(client(READER), (reader) => reader.routing.create({ payload }))
          )
          assert.deepInclude(denied, { code: "insufficient_scope", status: 403 })
          const unknown = yield* Effect.flip(
            Effect.flatMap(client("nope"), (other) => other.routing.get({ path: { id: first.id } }))
          )
          assert.deepInclude(unknown, { code: "invalid_token", status: 401 })
        }))
    })
  }
})
