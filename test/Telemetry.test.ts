import { assert, describe, it } from "@effect/vitest"
import { Context, Duration, Effect, Exit, Layer, MetricLabel, Option, Supervisor, TestClock, Tracer } from "effect"
import * as AdminWebHandler from "route-registry/AdminWebHandler"
import * as PgRouteRepository from "route-registry/PgRouteRepository"
import * as Route from "route-registry/Route"
import * as RouteRepository from "route-registry/RouteRepository"
import * as RouteTable from "route-registry/RouteTable"
import * as RoutingHandler from "route-registry/RoutingHandler"
import * as Telemetry from "route-registry/Telemetry"
import * as Runner from "../src/internal/http/runner.js"
import { ADMIN, tokens } from "./utils/httpContract.js"
import * as TestDatabase from "./utils/TestDatabase.js"

// Every span the program starts, recorded as Effect's own tracer makes it, and the names of those not ended yet.
const recording = () => {
  const spans: Array<Tracer.Span> = []
  const open = new Set<string>()
  const layer = Layer.unwrapEffect(Effect.map(Effect.tracer, (native) =>
    Layer.setTracer(Tracer.make({
      span: (...args) => {
        const span = native.span(...args)
        const end = span.end.bind(span)
        spans.push(span)
        open.add(span.name)
        return Object.assign(span, {
          end: (endTime: bigint, exit: Exit.Exit<unknown, unknown>) => {
            open.delete(span.name)
            end(endTime, exit)
          }
        })
      },
      context: (f, fiber) => native.context(f, fiber)
    }))))
  return { spans, open, layer }
}

// Counts the fibers started under it.
class CountingFibers extends Supervisor.AbstractSupervisor<void> {
  started = 0
  value = Effect.void
  override onStart() {
    this.started++
  }
}

const headers = { authorization: `Bearer ${ADMIN}`, "content-type": "application/json" }
const request = (method: string, path: string, body?: unknown) =>
  new Request(`http://localhost${path}`, {
    method,
    headers,
    ...(body === undefined ? {} : { body: JSON.stringify(body) })
  })
const route = { method: "GET", path: "/users/:id", middleware: ["auth"], handler: "Users#show" }

const labels = (tags: Record<string, string>) =>
  Object.entries(tags).map(([key, value]) => MetricLabel.make(key, value))
const requestCount = (operation: string, status: number) =>
  Telemetry.requests.unsafeValue(labels({ operation, status: String(status) })).count
const requestTimings = (operation: string) => Telemetry.requestDuration.unsafeValue(labels({ operation })).count
const storeTimings = (operation: string, outcome: string) =>
  Telemetry.storeOperationDuration.unsafeValue(labels({ operation, outcome })).count

const named = (spans: ReadonlyArray<Tracer.Span>, name: string): Tracer.Span => {
  const found = spans.filter((span) => span.name === name)
  assert.strictEqual(found.length, 1, `one span named ${name} among ${spans.map((span) => span.name).join(", ")}`)
  return found[0]!
}

const parentId = (span: Tracer.Span) => Option.getOrUndefined(Option.map(span.parent, (parent) => parent.spanId))

// Creates a route, reads it, misses an unknown id and sends a method the collection does not serve.
const exchange = (handler: AdminWebHandler.Handler) =>
  Effect.promise(async () => {
    const created = await handler(request("POST", "/v1/routing", route))
    const id = ((await created.json()) as { id: string }).id
    const found = await handler(request("GET", `/v1/routing/${id}`))
    const missing = await handler(request("GET", "/v1/routing/r_00000000000000000000000000"))
    const refused = await handler(request("PUT", "/v1/routing"))
    return { id, statuses: [created.status, found.status, missing.status, refused.status] }
  })

describe("Telemetry", () => {
  // A store read through its Effect (as the Postgres store is): its reads have spans of their own.
  const withoutMemoryReads = Layer.effect(RouteRepository.RouteRepository, RouteRepository.makeMemory)

  it.effect("a span per request, with the store's span inside it, and its metrics", () => {
    const { layer, spans } = recording()
    return Effect.gen(function*() {
      const before = {
        created: requestCount("create", 201),
        found: requestCount("get", 200),
        missing: requestCount("get", 404),
        refused: requestCount("method_not_allowed", 405),
        gets: requestTimings("get"),
        finds: storeTimings("findById", "success"),
        misses: storeTimings("findById", "RouteNotFound"),
        creates: storeTimings("create", "success")
      }
      const { id, statuses } = yield* exchange(yield* AdminWebHandler.make())
      assert.deepStrictEqual(statuses, [201, 200, 404, 405])

      const post = named(spans, "POST /v1/routing")
      assert.strictEqual(post.kind, "server")
      assert.deepStrictEqual(Object.fromEntries(post.attributes), {
        "http.request.method": "POST",
        "http.route": "/v1/routing",
        "route_registry.operation": "create",
        "http.response.status_code": 201
      })
      const create = named(spans, "RouteRepository.create")
      assert.strictEqual(parentId(create), post.spanId)
      assert.strictEqual(create.traceId, post.traceId)
      assert.deepStrictEqual(Object.fromEntries(create.attributes), {
        "route_registry.store.operation": "create",
        "route_registry.store.outcome": "success"
      })

      const gets = spans.filter((span) => span.name === "GET /v1/routing/{id}")
      assert.deepStrictEqual(gets.map((span) => span.attributes.get("http.response.status_code")), [200, 404])
      assert.isFalse(gets[0]!.attributes.has("route_registry.problem.code"))
      assert.strictEqual(gets[1]!.attributes.get("route_registry.problem.code"), "route_not_found")
      const finds = spans.filter((span) => span.name === "RouteRepository.findById")
      assert.deepStrictEqual(finds.map(parentId), gets.map((span) => span.spanId))
      assert.deepStrictEqual(finds.map((span) => span.attributes.get("route_registry.store.outcome")), [
        "success",
        "RouteNotFound"
      ])

      const put = named(spans, "PUT /v1/routing")
      assert.strictEqual(put.attributes.get("route_registry.operation"), "method_not_allowed")
      assert.strictEqual(put.attributes.get("route_registry.problem.code"), "method_not_allowed")
      assert.isTrue(spans.every((span) => span.status._tag === "Ended"))
      assert.isTrue(Route.isRouteId(id))

      assert.deepStrictEqual({
        created: requestCount("create", 201) - before.created,
        found: requestCount("get", 200) - before.found,
        missing: requestCount("get", 404) - before.missing,
        refused: requestCount("method_not_allowed", 405) - before.refused,
        gets: requestTimings("get") - before.gets,
        finds: storeTimings("findById", "success") - before.finds,
        misses: storeTimings("findById", "RouteNotFound") - before.misses,
        creates: storeTimings("create", "success") - before.creates
      }, { created: 1, found: 1, missing: 1, refused: 1, gets: 2, finds: 1, misses: 1, creates: 1 })
    }).pipe(Effect.provide(Layer.mergeAll(withoutMemoryReads, tokens, Telemetry.layer(), layer)))
  })

  it.effect("a read from a store's memory is seen in the request's span and metrics, with no store span", () => {
    const { layer, spans } = recording()
    return Effect.gen(function*() {
      const before = { found: requestCount("get", 200), finds: storeTimings("findById", "success") }
      const handler = yield* AdminWebHandler.make()
      const { id, statuses } = yield* exchange(handler)
      assert.deepStrictEqual(statuses, [201, 200, 404, 405])
      const again = yield* Effect.promise(() => handler(request("GET", `/v1/routing/${id}`)))
      assert.strictEqual(again.status, 200)
      const gets = spans.filter((span) => span.name === "GET /v1/routing/{id}")
      assert.deepStrictEqual(gets.map((span) => span.attributes.get("http.response.status_code")), [200, 404, 200])
      // Answered at once, each span is still a whole server span: named, attributed and ended.
      assert.deepStrictEqual(Object.fromEntries(gets[2]!.attributes), {
        "http.request.method": "GET",
        "http.route": "/v1/routing/{id}",
        "route_registry.operation": "get",
        "http.response.status_code": 200
      })
      assert.strictEqual(gets[1]!.attributes.get("route_registry.problem.code"), "route_not_found")
      assert.isTrue(gets.every((span) => span.kind === "server" && span.status._tag === "Ended"))
      assert.deepStrictEqual(spans.filter((span) => span.name === "RouteRepository.findById"), [])
      assert.deepStrictEqual({
        found: requestCount("get", 200) - before.found,
        finds: storeTimings("findById", "success") - before.finds
      }, { found: 2, finds: 0 })
    }).pipe(Effect.provide(Layer.mergeAll(RouteRepository.layerMemory, tokens, Telemetry.layer(), layer)))
  })

  it.effect("the store is called inside its operation's span, inside the request's", () => {
    const { layer, open } = recording()
    const openAtCall: Array<Array<string>> = []
    // A store that records which spans are open when it is called.
    const watched = Layer.effect(
      RouteRepository.RouteRepository,
      Effect.map(RouteRepository.makeMemory, (store) => ({
        ...store,
        create: (input: Route.CreateRoute) => {
          openAtCall.push(Array.from(open).sort())
          return store.create(input)
        }
      }))
    )
    return Effect.gen(function*() {
      const handler = yield* AdminWebHandler.make()
      const created = yield* Effect.promise(() => handler(request("POST", "/v1/routing", route)))
      assert.strictEqual(created.status, 201)
      assert.deepStrictEqual(openAtCall, [["POST /v1/routing", "RouteRepository.create"]])
    }).pipe(Effect.provide(Layer.mergeAll(watched, tokens, Telemetry.layer(), layer)))
  })

  it.effect("off, no span is started and a read from memory is answered without a fiber", () => {
    const { layer, spans } = recording()
    return Effect.gen(function*() {
      const { id, statuses } = yield* exchange(yield* AdminWebHandler.make())
      assert.deepStrictEqual(statuses, [201, 200, 404, 405])
      assert.deepStrictEqual(spans.map((span) => span.name), [])
      const handler = yield* RoutingHandler.make()
      const read = (path: string) =>
        handler.handle({
          method: "GET",
          path,
          query: "",
          header: (name) => name === "authorization" ? headers.authorization : undefined,
          body: () => Effect.succeed(new Uint8Array())
        })
      // The handler starts nothing, and a read from memory has ended when it returns: its answer needs no fiber.
      const answers = [read(`/v1/routing/${id}`), read("/v1/routing/r_00000000000000000000000000")]
      assert.deepStrictEqual(answers.map((answer) => Exit.isExit(answer) && Exit.isSuccess(answer)), [true, true])
      assert.deepStrictEqual(
        answers.map((answer) => (answer as Exit.Success<RoutingHandler.Response, never>).value.status),
        [
          200,
          404
        ]
      )
    }).pipe(Effect.provide(Layer.mergeAll(RouteRepository.layerMemory, tokens, layer)))
  })

  it.effect("inside a host's span, the request's span is an internal child of it", () => {
    const { layer, spans } = recording()
    return Effect.gen(function*() {
      const handler = yield* RoutingHandler.make()
      const answer = handler.handle({
        method: "GET",
        path: "/v1/routing",
        query: "",
        header: (name) => name === "authorization" ? headers.authorization : undefined,
        body: () => Effect.succeed(new Uint8Array())
      })
      assert.isDefined(answer)
      assert.isFalse(Exit.isExit(answer))
      const response = yield* Effect.withSpan(answer!, "host request")
      assert.strictEqual(response.status, 200)
      const list = named(spans, "GET /v1/routing")
      assert.strictEqual(list.kind, "internal")
      assert.strictEqual(parentId(list), named(spans, "host request").spanId)
      assert.strictEqual(parentId(named(spans, "RouteRepository.list")), list.spanId)

      // A read from memory, answered at once, is an internal child of the host's span too.
      const created = yield* RouteRepository.RouteRepository.pipe(
        Effect.flatMap((store) => Effect.flatMap(Route.decodeCreate(route), store.create))
      )
      const read = handler.handle({
        method: "GET",
        path: `/v1/routing/${created.id}`,
        query: "",
        header: (name) => name === "authorization" ? headers.authorization : undefined,
        body: () => Effect.succeed(new Uint8Array())
      })
      const found = yield* Effect.withSpan(read!, "host read")
      assert.strictEqual(found.status, 200)
      const get = named(spans, "GET /v1/routing/{id}")
      assert.strictEqual(get.kind, "internal")
      assert.strictEqual(parentId(get), named(spans, "host read").spanId)
      assert.strictEqual(get.traceId, named(spans, "host read").traceId)
    }).pipe(Effect.provide(Layer.mergeAll(RouteRepository.layerMemory, tokens, Telemetry.layer(), layer)))
  })

  it.effect("an adapter records an answer given at once from its runtime, with no fiber, as a fiber records it", () => {
    const { layer, spans } = recording()
    return Effect.gen(function*() {
      const handler = yield* RoutingHandler.make()
      const created = yield* RouteRepository.RouteRepository.pipe(
        Effect.flatMap((store) => Effect.flatMap(Route.decodeCreate(route), store.create))
      )
      const read = () =>
        handler.handle({
          method: "GET",
          path: `/v1/routing/${created.id}`,
          query: "",
          header: (name) => name === "authorization" ? headers.authorization : undefined,
          body: () => Effect.succeed(new Uint8Array())
        })!
      const linked = yield* Effect.makeSpan("earlier work")
      const fibers = new CountingFibers()
      // The same runtime twice: its span annotations and links reach both spans.
      const [started, onFiber] = yield* Effect.gen(function*() {
        const started = Runner.make(yield* Effect.runtime<never>())(read())
        return [started, yield* read()] as const
      }).pipe(Effect.annotateSpans("deployment", "blue"), Effect.linkSpans(linked), Effect.supervised(fibers))
      assert.isTrue(Exit.isExit(started))
      assert.strictEqual(fibers.started, 0)
      assert.strictEqual((started as Exit.Success<RoutingHandler.Response, never>).value.status, 200)
      assert.strictEqual(onFiber.status, 200)
      const gets = spans.filter((span) => span.name === "GET /v1/routing/{id}")
      assert.strictEqual(gets.length, 2)
      assert.deepStrictEqual(Object.fromEntries(gets[0]!.attributes), {
        deployment: "blue",
        "http.request.method": "GET",
        "http.route": "/v1/routing/{id}",
        "route_registry.operation": "get",
        "http.response.status_code": 200
      })
      assert.deepStrictEqual(Object.fromEntries(gets[1]!.attributes), Object.fromEntries(gets[0]!.attributes))
      assert.deepStrictEqual(
        gets.map((span) => [span.kind, span.status._tag, span.links.map((link) => link.span.spanId)]),
        [["server", "Ended", [linked.spanId]], ["server", "Ended", [linked.spanId]]]
      )
    }).pipe(Effect.provide(Layer.mergeAll(RouteRepository.layerMemory, tokens, Telemetry.layer(), layer)))
  })

  it.effect("the route table's gauges, and the lag of a route another process created", () =>
    Effect.gen(function*() {
      const memory = yield* RouteRepository.makeMemory
      // A store shared with another process: its change feed calls back with what that process wrote.
      let listener: RouteRepository.ChangeListener | undefined
      const feed: RouteRepository.ChangeFeed = {
        cursor: Effect.succeed("0"),
        since: (cursor) => Effect.succeed({ cursor, upserted: [], removed: [], complete: true }),
        pollInterval: Duration.hours(1),
        listen: (heard) =>
          Effect.suspend(() => {
            listener = heard
            return Effect.never
          })
      }
      const table = RouteTable.layer.pipe(
        Layer.provide(
          Layer.mergeAll(
            Layer.succeed(RouteRepository.RouteRepository, memory),
            Layer.succeed(RouteRepository.Feed, feed),
            Telemetry.layer()
          )
        )
      )
      yield* Effect.gen(function*() {
        const store = yield* RouteRepository.RouteRepository
        yield* store.create(yield* Route.decodeCreate(route))
        yield* TestClock.adjust("1 second")
        const lags = Telemetry.propagationLag.unsafeValue([]).count
        const other = yield* RouteRepository.makeMemory
        const elsewhere = yield* other.create(yield* Route.decodeCreate({ ...route, path: "/teams/:id" }))
        listener!.apply([elsewhere], [])
        // Heard again (a poll after the notification): already in the table, not a second arrival.
        listener!.apply([elsewhere], [])
        assert.strictEqual(Telemetry.propagationLag.unsafeValue([]).count - lags, 1)
        assert.strictEqual(RouteTable.get(yield* RouteTable.RouteTable, elsewhere.id)?.id, elsewhere.id)

        yield* TestClock.adjust("1 second")
        assert.strictEqual(Telemetry.tableRoutes.unsafeValue([]).value, 2)
        const staleness = Telemetry.tableStaleness.unsafeValue([]).value
        assert.isAtLeast(staleness, 0)
        assert.isAtMost(staleness, (yield* RouteTable.status).stalenessMillis)
      }).pipe(Effect.provide(table))
    }))

  it.live("over Postgres, a route created by another process is counted when it reaches this process's table", () => {
    const table = TestDatabase.freshTable()
    // The other process only writes; this one follows the store's changes with telemetry on.
    const writer = TestDatabase.storeLayer({ table }).pipe(Layer.provide(TestDatabase.layer()))
    const follower = RouteTable.layer.pipe(
      Layer.provide(Layer.merge(
        // Polling, which the embedded database also offers: each read of the feed applies what it finds.
        PgRouteRepository.layer({ table, notifications: false, pollInterval: "10 millis" }).pipe(
          Layer.provide(TestDatabase.layer())
        ),
        Telemetry.layer({ tableSampleInterval: "10 millis" })
      ))
    )
    return Effect.scoped(Effect.gen(function*() {
      const store = Context.get(yield* Layer.build(writer), RouteRepository.RouteRepository)
      const followed = yield* Layer.build(follower)
      const lags = Telemetry.propagationLag.unsafeValue([]).count
      const created = yield* store.create(yield* Route.decodeCreate(route))
      const routes = Context.get(followed, RouteTable.RouteTable)
      while (RouteTable.get(routes, created.id) === undefined) yield* Effect.sleep(5)
      assert.strictEqual(Telemetry.propagationLag.unsafeValue([]).count - lags, 1)
      while (Telemetry.tableRoutes.unsafeValue([]).value !== 1) yield* Effect.sleep(5)
    }))
  })
})
