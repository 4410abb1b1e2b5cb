/**
 * `RoutingHandler.makeWith` over explicit services (docs/mounting.md, "Explicit services"): given the store's context,
 * the core answers as over the store's layer; given the store alone, as over a store that offers nothing more.
 */
import { assert, describe, it, layer } from "@effect/vitest"
import { Context, Effect, Layer, Logger, LogLevel } from "effect"
import * as Route from "route-registry/Route"
import * as RouteRepository from "route-registry/RouteRepository"
import * as RoutingHandler from "route-registry/RoutingHandler"
import { ADMIN } from "./utils/httpContract.js"
import { sample, staticTokens } from "./utils/security.js"
import * as TestDatabase from "./utils/TestDatabase.js"

interface Call {
  readonly method?: string
  readonly path?: string
  /** `null`: no `Authorization` header. */
  readonly token?: string | null
  readonly key?: string
}

const call = (
  handler: RoutingHandler.RoutingHandler,
  { key, method = "POST", path = "/v1/routing", token = ADMIN }: Call
) =>
  Logger.withMinimumLogLevel(
    handler.handle({
      method,
      path,
      query: "",
      header: (name) =>
        name === "authorization"
          ? (token === null ? undefined : `Bearer ${token}`)
          : name === "content-type"
          ? "application/json"
          : name === "idempotency-key"
          ? key
          : undefined,
      body: () => Effect.succeed(new TextEncoder().encode(JSON.stringify(sample)))
    })!,
    LogLevel.None
  )

const memoryContext = RouteRepository.makeMemoryContext()

describe("RoutingHandler.makeWith", () => {
  it.effect("over the memory store's context, a keyed create is answered again, as over its layer", () =>
    Effect.gen(function*() {
      const handler = RoutingHandler.makeWith(yield* memoryContext, staticTokens)
      const first = yield* call(handler, { key: "k-1" })
      const again = yield* call(handler, { key: "k-1" })
      assert.strictEqual(first.status, 201)
      assert.strictEqual(again.status, 201)
      assert.strictEqual(again.headers["idempotency-replayed"], "true")
      assert.strictEqual(again.body, first.body)
    }))

  it.effect("over the store alone, a keyed create runs as a plain one: the retry conflicts", () =>
    Effect.gen(function*() {
      const handler = RoutingHandler.makeWith(
        Context.get(yield* memoryContext, RouteRepository.RouteRepository),
        staticTokens
      )
      assert.strictEqual((yield* call(handler, { key: "k-1" })).status, 201)
      const again = yield* call(handler, { key: "k-1" })
      assert.strictEqual(again.status, 409)
      assert.strictEqual(again.problem, "route_conflict")
    }))

  it.effect("over the store's context, the change log and restores are served; over the store alone, not", () =>
    Effect.gen(function*() {
      const context = yield* memoryContext
      const withLog = RoutingHandler.makeWith(context, staticTokens)
      const created = yield* call(withLog, {})
      const id = (JSON.parse(created.body) as { id: string }).id
      const history = yield* call(withLog, { method: "GET", path: `/v1/routing/${id}/history` })
      assert.strictEqual(history.status, 200)
      assert.deepStrictEqual(
        (JSON.parse(history.body) as { items: ReadonlyArray<{ action: string }> }).items.map((entry) => entry.action),
        ["create"]
      )
      const alone = RoutingHandler.makeWith(Context.get(context, RouteRepository.RouteRepository), staticTokens)
      const refused = yield* call(alone, { method: "GET", path: `/v1/routing/${id}/history` })
      assert.strictEqual(refused.status, 404)
      assert.strictEqual(refused.problem, "not_found")
    }))

  it.effect("a read-only store's context answers a write 405 before its token is read", () =>
    Effect.gen(function*() {
      const store = Context.get(yield* memoryContext, RouteRepository.RouteRepository)
      const readOnly = RoutingHandler.makeWith(
        Context.make(RouteRepository.RouteRepository, store).pipe(Context.add(RouteRepository.ReadOnly, true)),
        staticTokens
      )
      const refused = yield* call(readOnly, { token: null })
      assert.strictEqual(refused.status, 405)
      assert.strictEqual(refused.problem, "method_not_allowed")
      assert.strictEqual((yield* call(RoutingHandler.makeWith(store, staticTokens), { token: null })).status, 401)
    }))

  it.effect("a store read at once (MemoryRead) answers a GET without findById", () =>
    Effect.gen(function*() {
      const route = yield* Effect.map(Route.decodeCreate(sample), (input) =>
        ({
          ...input,
          id: Route.makeRouteId(1),
          createdAt: new Date(0),
          revision: 1
        }) as Route.StoredRoute)
      const unreachable = () => Effect.fail(new RouteRepository.StoreUnavailable({ reason: "not to be called" }))
      const context = Context.make(RouteRepository.RouteRepository, {
        create: unreachable,
        findById: unreachable,
        list: unreachable,
        update: unreachable,
        remove: unreachable
      }).pipe(
        Context.add(RouteRepository.MemoryRead, { unsafeFindById: (id) => id === route.id ? route : undefined })
      )
      const found = yield* call(RoutingHandler.makeWith(context, staticTokens), {
        method: "GET",
        path: `/v1/routing/${route.id}`
      })
      assert.strictEqual(found.status, 200)
      assert.strictEqual((JSON.parse(found.body) as { id: string }).id, route.id)
    }))
})

layer(TestDatabase.layer(), { excludeTestServices: true })("RoutingHandler.makeWith over the Postgres store", (it) => {
  it.scoped("its context (what makeContext gives, as its layer provides it) keeps a keyed create's answer", () =>
    Effect.gen(function*() {
      const handler = RoutingHandler.makeWith(yield* Layer.build(TestDatabase.storeLayer()), staticTokens)
      const first = yield* call(handler, { key: "k-pg" })
      const again = yield* call(handler, { key: "k-pg" })
      assert.strictEqual(first.status, 201)
      assert.strictEqual(again.headers["idempotency-replayed"], "true")
      assert.strictEqual(again.body, first.body)
      const id = (JSON.parse(first.body) as { id: string }).id
      assert.strictEqual((yield* call(handler, { method: "GET", path: `/v1/routing/${id}/history` })).status, 200)
    }))
})
