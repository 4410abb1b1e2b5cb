import * as FetchHttpClient from "@effect/platform/FetchHttpClient"
import * as HttpApiClient from "@effect/platform/HttpApiClient"
import * as HttpClient from "@effect/platform/HttpClient"
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import { afterAll, assert, beforeAll, describe, it, onTestFinished } from "@effect/vitest"
import { Effect, Layer, Redacted } from "effect"
import * as Authenticator from "route-registry/Authenticator"
import * as Problem from "route-registry/Problem"
import * as Route from "route-registry/Route"
import * as RouteRepository from "route-registry/RouteRepository"
import * as RouteTable from "route-registry/RouteTable"
import * as RoutingApi from "route-registry/RoutingApi"
import { PATH_PATTERN } from "../src/internal/route/pathPattern.js"
import { adapters, type Received, type Sent, type Served } from "./utils/adapters.js"
import { ADMIN, get, post, quiet, READER, stalledBody, tokenList, tokens, WRITER } from "./utils/httpContract.js"
import { methodName } from "./utils/repositoryContract.js"

const spec = RoutingApi.openApi as any
const COLLECTION = "/v1/routing"
const ITEM = "/v1/routing/{id}"
const operations = {
  list: spec.paths[COLLECTION].get,
  create: spec.paths[COLLECTION].post,
  get: spec.paths[ITEM].get,
  update: spec.paths[ITEM].patch,
  delete: spec.paths[ITEM].delete
}
type Operation = keyof typeof operations
const names = Object.keys(operations) as ReadonlyArray<Operation>

const codesOf = (response: any): Array<string> => {
  const schema = response.content?.[Problem.CONTENT_TYPE]?.schema
  if (schema === undefined) return []
  return (schema.anyOf ?? [schema]).map((s: { $ref: string }) =>
    spec.components.schemas[s.$ref.split("/").pop()!].properties.code.enum[0]
  )
}

const documented = (operation: Operation): Set<string> =>
  new Set(
    Object.entries<any>(operations[operation].responses).flatMap(([status, response]) => {
      const codes = codesOf(response)
      return codes.length === 0 ? [status] : codes.map((code) => `${status} ${code}`)
    })
  )

const sample = { method: "GET", path: "/users/:id", handler: "show" }
const auth = (token: string) => ({ authorization: `Bearer ${token}` })
const json = { "content-type": "application/json" }
const item = (id: string) => `${COLLECTION}/${id}`
const list = (query = "", headers: Record<string, string> = auth(ADMIN)): Sent => ({
  method: "GET",
  path: `${COLLECTION}${query}`,
  headers
})
const patch = (id: string, body: unknown, headers: Record<string, string> = { ...auth(ADMIN), ...json }): Sent => ({
  method: "PATCH",
  path: item(id),
  headers,
  body: typeof body === "string" ? body : JSON.stringify(body)
})
const keyed = (body: unknown, key: string) => post(body, { ...auth(ADMIN), ...json, "idempotency-key": key })
const del = (id: string, headers: Record<string, string> = auth(ADMIN)): Sent => ({
  method: "DELETE",
  path: item(id),
  headers
})

// Requests that, between them, draw every answer each operation can give from a working store. A 405 belongs to
// every operation of its path.
// The configured tokens, and one whose authenticator cannot decide now (an identity provider that is down).
const DOWN = "down-token"
const probeTokens = Layer.succeed(
  Authenticator.Authenticator,
  Authenticator.orElse(Authenticator.makeStaticTokens(tokenList), {
    authenticate: (token) =>
      Redacted.value(token) === DOWN
        ? Effect.fail(new Authenticator.AuthenticatorUnavailable({ reason: "test", retryAfterMillis: 5000 }))
        : Effect.fail(new Authenticator.InvalidToken({ reason: "test" }))
  })
)

const probes = async (served: Served): Promise<Record<Operation, Array<Received>>> => {
  const send = (request: Sent) => served.send(request)
  const created = await send(post(sample))
  const id = created.json.id as string
  const other = (await send(post({ ...sample, path: "/other" }))).json.id as string
  const etag = created.headers.get("etag")!
  const collection405 = await send({ method: "PUT", path: COLLECTION, headers: auth(ADMIN) })
  const item405 = await send({ method: "PUT", path: item(id), headers: auth(ADMIN) })
  const missing = Route.makeRouteId(0)
  const authentication = async (request: (headers: Record<string, string>) => Sent, denied: string) => [
    await send(request({ authorization: "Bearer" })),
    await send(request({})),
    await send(request(auth("nope"))),
    await send(request(auth(denied))),
    await send(request(auth(DOWN)))
  ]
  return {
    list: [
      await send(list()),
      await send(list("?limit=0")),
      ...await authentication((headers) => list("", headers), WRITER),
      collection405
    ],
    create: [
      created,
      await send(post("{")),
      await send(post({ method: "get" })),
      await send(post(sample)),
      await send(post("x".repeat(70_000))),
      await send(post(sample, { ...auth(ADMIN), "content-type": "text/plain" })),
      await send(keyed(sample, "\"unclosed")),
      await send(keyed({ ...sample, path: "/keyed" }, "\"k\"")),
      await send(keyed({ ...sample, path: "/keyed/again" }, "\"k\"")),
      await send(keyed({ ...sample, path: "/keyed/second" }, "\"k2\"")),
      // Past idempotencyKeysPerPrincipal (2, below).
      await send(keyed({ ...sample, path: "/keyed/third" }, "\"k3\"")),
      await send({ ...post(sample), body: stalledBody() }),
      ...await authentication((headers) => post(sample, { ...headers, ...json }), READER),
      collection405,
      // Every method the registry may hold stored (GET is), then one more.
      ...await Promise.all(
        Array.from(
          { length: RouteRepository.MAX_METHODS - 1 },
          (_, i) => send(post({ ...sample, method: methodName(i), path: "/methods" }))
        )
      ),
      await send(post({ ...sample, method: "ONE-MORE" }))
    ],
    get: [
      await send(get(id)),
      await send(get(id, { ...auth(ADMIN), "if-none-match": etag })),
      await send(get(missing)),
      ...await authentication((headers) => get(id, headers), WRITER),
      item405
    ],
    update: [
      await send(patch(id, { handler: "edit" })),
      await send(patch(id, "{")),
      await send(patch(id, {})),
      await send(patch(missing, { handler: "edit" })),
      await send(patch(other, { path: "/users/:userId" })),
      await send(patch(id, { handler: "again" }, { ...auth(ADMIN), ...json, "if-match": etag })),
      await send(patch(id, "x".repeat(70_000))),
      await send(patch(id, { handler: "edit" }, { ...auth(ADMIN), "content-type": "text/plain" })),
      await send({ ...patch(id, {}), body: stalledBody() }),
      await send(patch(id, { method: "ONE-MORE" })),
      ...await authentication((headers) => patch(id, { handler: "edit" }, { ...headers, ...json }), READER),
      item405
    ],
    delete: [
      await send(del(id, { ...auth(ADMIN), "if-match": etag })),
      await send(del(other)),
      await send(del(other)),
      ...await authentication((headers) => del(id, headers), READER),
      item405
    ]
  }
}

// One request per operation that reaches the store, for the stores that fail.
const storeProbes = async (served: Served): Promise<Record<Operation, Array<Received>>> => {
  const id = Route.makeRouteId(0)
  return {
    list: [await served.send(list())],
    create: [await served.send(post(sample)), await served.send(keyed(sample, "\"k\""))],
    get: [await served.send(get(id))],
    update: [await served.send(patch(id, { handler: "edit" }))],
    delete: [await served.send(del(id))]
  }
}

const failingStore = (failure: "unavailable" | "defect") => {
  const fail = () =>
    failure === "unavailable"
      ? Effect.fail(new RouteRepository.StoreUnavailable({ reason: "test" }))
      : Effect.die(new Error("boom"))
  return Layer.merge(
    Layer.succeed(
      RouteRepository.RouteRepository,
      RouteRepository.RouteRepository.of({ create: fail, findById: fail, list: fail, update: fail, remove: fail })
    ),
    Layer.succeed(RouteRepository.Idempotent, {
      // A create with the same key still running elsewhere.
      createIdempotent: (_, { key }) =>
        failure === "unavailable" ? Effect.fail(new RouteRepository.IdempotencyKeyInUse({ key })) : fail()
    })
  )
}

const answer = (r: Received) => r.status < 400 ? `${r.status}` : `${r.status} ${r.json.code}`

// Every header the document marks required for this answer is there, with a value its schema allows.
const assertHeaders = (operation: Operation, response: Received) => {
  const documentedResponse = operations[operation].responses[response.status]
  for (const [name, header] of Object.entries<any>(documentedResponse?.headers ?? {})) {
    const value = response.headers.get(name)
    if (header.required === true) assert.isNotNull(value, `${operation} ${response.status}: ${name}`)
    if (value !== null && header.schema.enum !== undefined) assert.include(header.schema.enum, value)
  }
  if (response.status >= 400) assert.strictEqual(response.headers.get("content-type"), Problem.CONTENT_TYPE)
}

describe("RoutingApi", () => {
  it("is an OpenAPI 3.1 document with bearer security on every operation", () => {
    assert.strictEqual(spec.openapi, "3.1.0")
    assert.deepStrictEqual(spec.components.securitySchemes, { bearer: { type: "http", scheme: "bearer" } })
    for (const operation of Object.values(operations)) assert.deepStrictEqual(operation.security, [{ bearer: [] }])
    assert.deepStrictEqual(Object.keys(spec.paths), [
      COLLECTION,
      `${COLLECTION}/changes`,
      `${COLLECTION}/followers`,
      `${COLLECTION}/match`,
      `${COLLECTION}/batch`,
      `${COLLECTION}/history`,
      `${ITEM}/history`,
      `${ITEM}/restore`,
      ITEM
    ])
    assert.deepStrictEqual(Object.keys(spec.paths[COLLECTION]), ["get", "post"])
    assert.deepStrictEqual(Object.keys(spec.paths[`${COLLECTION}/changes`]), ["get"])
    assert.deepStrictEqual(Object.keys(spec.paths[`${COLLECTION}/match`]), ["get"])
    assert.deepStrictEqual(Object.keys(spec.paths[`${COLLECTION}/followers`]), ["get", "post"])
    assert.deepStrictEqual(Object.keys(spec.paths[ITEM]), ["get", "patch", "delete"])
    assert.deepStrictEqual(spec.info.license, { name: "MIT", identifier: "MIT" })
    assert.deepStrictEqual(spec.servers.map((s: { url: string }) => s.url), ["/"])
  })

  it("describes the listing query with its rules as schema constraints", () => {
    const parameters = Object.fromEntries(operations.list.parameters.map((p: any) => [p.name, p]))
    assert.deepStrictEqual(Object.keys(parameters), [
      "limit",
      "cursor",
      "method",
      "pathPrefix",
      "handler",
      "middleware",
      "q",
      "enabled",
      "tag"
    ])
    for (const parameter of Object.values<any>(parameters)) {
      assert.strictEqual(parameter.in, "query")
      assert.isFalse(parameter.required)
    }
    assert.deepInclude(parameters.limit.schema, { type: "integer", minimum: 1, maximum: 1000, default: 100 })
    assert.strictEqual(parameters.method.schema.pattern, "^[A-Z]+(?:-[A-Z]+)*$")
    assert.strictEqual(parameters.pathPrefix.schema.pattern, "^/")
    assert.strictEqual(parameters.handler.schema.pattern, parameters.middleware.schema.pattern)
    assert.strictEqual(parameters.tag.schema.pattern, "^[a-z0-9][a-z0-9._:/-]{0,63}$")
  })

  it("describes the page exactly, and the conditional headers of get, update and delete", () => {
    assert.deepStrictEqual(spec.components.schemas.RoutePage, {
      type: "object",
      required: ["items", "nextCursor"],
      properties: {
        items: { type: "array", items: { $ref: "#/components/schemas/Route" } },
        nextCursor: {
          anyOf: [{ type: "string" }, { type: "null" }],
          description: spec.components.schemas.RoutePage.properties.nextCursor.description
        }
      },
      additionalProperties: false
    })
    const headerNames = (operation: Operation) =>
      operations[operation].parameters.filter((p: any) => p.in === "header").map((p: any) => p.name)
    assert.deepStrictEqual(headerNames("get"), ["if-none-match"])
    assert.deepStrictEqual(headerNames("update"), ["if-match"])
    assert.deepStrictEqual(headerNames("delete"), ["if-match"])
    assert.deepStrictEqual(Object.keys(operations.update.requestBody.content), [
      "application/json",
      "application/merge-patch+json"
    ])
    assert.isUndefined(operations.get.responses["304"].content)
    assert.isUndefined(operations.delete.responses["204"].content)
  })

  it("declares ?dryRun=true on every write, and Registry-Revision on every write's success", () => {
    const writes = { ...operations, restore: spec.paths[`${ITEM}/restore`].post }
    for (const name of ["create", "update", "delete", "restore"] as const) {
      const dryRun = writes[name].parameters.filter((parameter: any) => parameter.name === "dryRun")
      assert.strictEqual(dryRun.length, 1, name)
      assert.deepInclude(dryRun[0], { in: "query", required: false }, name)
      assert.deepInclude(dryRun[0].schema, { type: "string", enum: ["true"] }, name)
      assert.match(dryRun[0].description, /invalid_query/, name)
      const successes = Object.entries<any>(writes[name].responses).filter(([status]) => status.startsWith("2"))
      assert.isNotEmpty(successes, name)
      for (const [status, response] of successes) {
        const header = response.headers?.["Registry-Revision"]
        assert.isDefined(header, `${name} ${status}`)
        // Absent on a dry run, so never required.
        assert.notStrictEqual(header.required, true, `${name} ${status}`)
        assert.strictEqual(header.schema.pattern, "^[1-9][0-9]*$", `${name} ${status}`)
      }
    }
  })

  it("describes createdAt as date-time, paths by the grammar's pattern, and statuses as integers", () => {
    const route = spec.components.schemas.Route.properties
    assert.strictEqual(route.createdAt.format, "date-time")
    const path = route.path.$ref === undefined ? route.path : spec.components.schemas[route.path.$ref.split("/").pop()]
    assert.strictEqual(path.pattern, PATH_PATTERN)
    assert.match(path.description, /parameter name .*(once|twice)/) // the rule the pattern cannot say
    for (const [name, schema] of Object.entries<any>(spec.components.schemas)) {
      if (name.endsWith("Problem")) assert.strictEqual(schema.properties.status.type, "integer", name)
    }
  })

  for (const adapter of adapters) {
    describe(adapter.name, () => {
      it("documents exactly the statuses and codes the server answers, with their headers", async () => {
        const seen = Object.fromEntries(names.map((name) => [name, new Set<string>()])) as Record<
          Operation,
          Set<string>
        >
        const stores = [
          [RouteRepository.layerMemory, probes],
          [failingStore("unavailable"), storeProbes],
          [failingStore("defect"), storeProbes]
        ] as const
        for (const [store, draw] of stores) {
          const served = await adapter.start(Layer.mergeAll(store, probeTokens, quiet), {
            bodyTimeoutMillis: 300,
            idempotencyKeysPerPrincipal: 2
          })
          onTestFinished(() => served.close())
          const drawn = await draw(served)
          for (const operation of names) {
            for (const response of drawn[operation]) {
              seen[operation].add(answer(response))
              assertHeaders(operation, response)
            }
          }
        }
        for (const operation of names) {
          assert.deepStrictEqual([...seen[operation]].sort(), [...documented(operation)].sort(), operation)
        }
      })

      let served: Served
      beforeAll(async () => {
        // Over a route table, which match reads.
        served = await adapter.start(
          Layer.merge(RouteTable.layer.pipe(Layer.provideMerge(RouteRepository.layerMemory)), tokens)
        )
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

      it.effect("the typed client creates, gets, lists, updates and deletes, decoding Route", () =>
        Effect.gen(function*() {
          const api = yield* client(ADMIN)
          const payload = Route.CreateRoute.make({
            method: "PUT" as Route.HttpMethod,
            path: "/typed/:id" as Route.RoutePath,
            middleware: ["auth" as Route.MiddlewareName],
            handler: "update" as Route.HandlerName
          })
          const [created, createdResponse] = yield* api.routing.create({ payload, withResponse: true })
          assert.instanceOf(created, Route.Route)
          assert.instanceOf(created.createdAt, Date)
          const etag = createdResponse.headers["etag"]!
          const [found, foundResponse] = yield* api.routing.get({
            path: { id: created.id },
            headers: {},
            withResponse: true
          })
          assert.deepStrictEqual(found, created)
          assert.strictEqual(foundResponse.headers["etag"], etag)
          const notModified = yield* Effect.flip(
            api.routing.get({ path: { id: created.id }, headers: { "if-none-match": etag } })
          )
          assert.instanceOf(notModified, RoutingApi.NotModified)

          const page = yield* api.routing.list({
            urlParams: {
              limit: 10,
              method: "PUT" as Route.HttpMethod,
              pathPrefix: "/typed/",
              handler: "update" as Route.HandlerName,
              middleware: "auth" as Route.MiddlewareName
            }
          })
          assert.deepStrictEqual(page, { items: [created], nextCursor: null })
          yield* api.routing.create({ payload: { ...payload, path: "/typed/:id/more" as Route.RoutePath } })
          const [first, firstResponse] = yield* api.routing.list({
            urlParams: { limit: 1, pathPrefix: "/typed/" },
            withResponse: true
          })
          assert.deepStrictEqual(first.items, [created])
          assert.isString(first.nextCursor)
          const link = /^<(\/v1\/routing\?[^>]*)>; rel="next"$/.exec(firstResponse.headers["link"]!)
          assert.isNotNull(link, firstResponse.headers["link"])
          const next = new URL(link![1]!, "http://host").searchParams
          assert.deepStrictEqual(Object.fromEntries(next), {
            limit: "1",
            pathPrefix: "/typed/",
            cursor: first.nextCursor!
          })
          const second = yield* api.routing.list({ urlParams: { limit: 1, cursor: first.nextCursor! } })
          assert.strictEqual(second.items[0]!.path, "/typed/:id/more")

          const [updated, updatedResponse] = yield* api.routing.update({
            path: { id: created.id },
            headers: { "if-match": etag },
            payload: { handler: "replace" as Route.HandlerName },
            withResponse: true
          })
          assert.deepStrictEqual(updated, new Route.Route({ ...created, handler: "replace" as Route.HandlerName }))
          assert.notStrictEqual(updatedResponse.headers["etag"], etag)
          const stale = yield* Effect.flip(
            api.routing.delete({ path: { id: created.id }, headers: { "if-match": etag } })
          )
          assert.deepInclude(stale, { code: "precondition_failed", status: 412 })
          yield* api.routing.delete({
            path: { id: created.id },
            headers: { "if-match": updatedResponse.headers["etag"] }
          })
          const gone = yield* Effect.flip(api.routing.get({ path: { id: created.id }, headers: {} }))
          assert.deepInclude(gone, { code: "route_not_found", status: 404 })
        }))

      it.effect("the typed client asks which route serves a request, decoding the answer's routes", () =>
        Effect.gen(function*() {
          const api = yield* client(ADMIN)
          const created = yield* api.routing.create({
            payload: Route.CreateRoute.make({
              method: "GET" as Route.HttpMethod,
              path: "/typed-match/:id" as Route.RoutePath,
              handler: "h" as Route.HandlerName
            })
          })
          const answer = yield* api.routing.match({
            urlParams: { method: "HEAD" as Route.HttpMethod, path: "/typed-match/a%20b?x=y" }
          })
          assert.deepStrictEqual(answer, {
            outcome: "route",
            route: created,
            params: { id: "a b" },
            allow: ["GET", "HEAD"],
            candidates: []
          })
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
          const missing = yield* Effect.flip(api.routing.get({ path: { id: "nope" }, headers: {} }))
          assert.deepInclude(missing, { code: "route_not_found", status: 404 })
          const denied = yield* Effect.flip(
            Effect.flatMap(client(READER), (reader) => reader.routing.create({ payload }))
          )
          assert.deepInclude(denied, { code: "insufficient_scope", status: 403 })
          const unknown = yield* Effect.flip(
            Effect.flatMap(client("nope"), (other) => other.routing.get({ path: { id: first.id }, headers: {} }))
          )
          assert.deepInclude(unknown, { code: "invalid_token", status: 401 })
        }))
    })
  }
})
