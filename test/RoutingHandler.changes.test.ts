/**
 * The change stream, `GET /v1/routing/changes` (docs/http-api.md, "Following every change"), through every adapter and integration, and on Postgres
 * through one: snapshot, `ready` and live changes in order; resuming by `since` and by `Last-Event-ID`; `reset` when
 * the replay ring is gone; the refusals, before any byte of a stream; heartbeats; a follower that stops reading is
 * cut off without the registry holding more for it; every subscription ends with its client; another process's
 * changes arrive.
 */
import { afterEach, assert, describe, it } from "@effect/vitest"
import { getRequestListener } from "@hono/node-server"
import { Context, Effect, Layer, Schema } from "effect"
import express from "express"
import Fastify from "fastify"
import { Hono } from "hono"
import * as Http from "node:http"
import * as Net from "node:net"
import type { AddressInfo } from "node:net"
import * as AdminListener from "route-registry/AdminListener"
import * as Authenticator from "route-registry/Authenticator"
import * as Express from "route-registry/express"
import * as FastifyIntegration from "route-registry/fastify"
import * as HonoIntegration from "route-registry/hono"
import * as PgRouteRepository from "route-registry/PgRouteRepository"
import * as Route from "route-registry/Route"
import * as RouteRepository from "route-registry/RouteRepository"
import * as RouteTable from "route-registry/RouteTable"
import type * as RoutingHandler from "route-registry/RoutingHandler"
import {
  type Adapter,
  adapters,
  fetchFrom,
  nodeListener,
  type Served,
  serveNode,
  type Services
} from "./utils/adapters.js"
import * as EventStream from "./utils/eventStream.js"
import { ADMIN, assertProblem, READER, type Store, tokens, WRITER } from "./utils/httpContract.js"
import { memory, stores } from "./utils/stores.js"
import * as TestDatabase from "./utils/TestDatabase.js"
import { eventually } from "./utils/waiting.js"

const auth = (token: string) => ({ authorization: `Bearer ${token}` })
const admin = { ...auth(ADMIN), "content-type": "application/json" }

const route = (
  n: number,
  path = `/r${n}/:id`,
  middleware: ReadonlyArray<string | { readonly name: string; readonly config: object }> = []
) => ({
  method: "GET",
  path,
  handler: `h${n}`,
  middleware
})

// The most middleware a route may name, each name as long as a name may be: about 4 KB more on each change.
const BULK = Array.from({ length: 32 }, (_, i) => `m${i}`.padEnd(128, "x"))

// BULK, each with a config of 2.5 KB: about 85 KB on each change, within express.json()'s 100 KB.
const HUGE = BULK.map((name) => ({ name, config: { v: "c".repeat(2_500) } }))

/**
 * A server whose replay ring is watched: how many streams are subscribed to it now; and, for an integration (whose
 * table is its own, so its subscriptions are not counted), how many change streams' answers it holds open.
 */
interface Watched extends Served {
  readonly subscribed: () => number | undefined
  readonly answering?: () => number
}

interface Subject {
  readonly name: string
  /** Starts a server over `store` (the table and tokens are the subject's to add). */
  readonly start: (store: Store, options?: RoutingHandler.Options, capacity?: number) => Promise<Watched>
}

// The table over `store`, with its replay ring's subscriptions counted.
const watchedTable = (store: Store, capacity: number | undefined) => {
  let subscribed = 0
  const table = (capacity === undefined ? RouteTable.layer : RouteTable.layerWith({ replayCapacity: capacity })).pipe(
    Layer.provide(store),
    Layer.map((context) => {
      const ring = Context.get(context, RouteTable.ReplayRing)
      return Context.add(context, RouteTable.ReplayRing, {
        ...ring,
        subscribe: (listener) => {
          subscribed++
          const unsubscribe = ring.subscribe(listener)
          let once = false
          return () => {
            if (!once) subscribed--
            once = true
            return unsubscribe()
          }
        }
      })
    })
  )
  return { services: Layer.merge(table, tokens) as Services, subscribed: () => subscribed }
}

const ofAdapter = (adapter: Adapter): Subject => ({
  name: adapter.name,
  start: async (store, options, capacity) => {
    const watched = watchedTable(store, capacity)
    return { ...(await adapter.start(watched.services, options)), subscribed: watched.subscribed }
  }
})

// Counts the change streams' answers a host holds open: each from its request until its connection closes.
const openAnswers = () => {
  let open = 0
  const watch = (req: Http.IncomingMessage, res: Http.ServerResponse) => {
    if (!req.url?.startsWith("/v1/routing/changes")) return
    open++
    res.once("close", () => open--)
  }
  return { watch, answering: () => open }
}

const listening = async (app: ReturnType<typeof Fastify>) => {
  await app.listen({ port: 0, host: "127.0.0.1" })
  return `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`
}

// The integrations build their own table over the store: its subscriptions are not counted.
const integrations: ReadonlyArray<Subject> = [
  {
    name: "route-registry/fastify",
    start: async (store, options) => {
      // A client that leaves a stream may leave behind a connection that never sends a request, which Fastify's close
      // would wait for: the host closes every connection when it closes.
      const app = Fastify({ forceCloseConnections: true })
      const answers = openAnswers()
      app.server.on("request", answers.watch)
      await app.register(FastifyIntegration.routeRegistry, {
        ...options,
        authenticator: tokens,
        store,
        handlers: {}
      })
      const origin = await listening(app)
      return {
        send: fetchFrom(origin),
        fetch,
        origin,
        close: () => app.close(),
        subscribed: () => undefined,
        answering: answers.answering
      }
    }
  },
  {
    name: "route-registry/express",
    start: async (store, options) => {
      const app = express()
      app.use(express.json())
      const mounted = Express.routeRegistry({ ...options, authenticator: tokens, store, handlers: {} })
      await mounted.ready
      app.use(mounted)
      const answers = openAnswers()
      const served = await serveNode((req, res) => {
        answers.watch(req, res)
        app(req, res)
      }, mounted.close)
      return { ...served, subscribed: () => undefined, answering: answers.answering }
    }
  },
  {
    name: "route-registry/hono on @hono/node-server",
    start: async (store, options) => {
      const registry = HonoIntegration.routeRegistry({ ...options, authenticator: tokens, store, handlers: {} })
      await registry.ready
      const app = new Hono().route("/", registry)
      const listener = getRequestListener(app.fetch, { overrideGlobalObjects: false })
      const answers = openAnswers()
      const served = await serveNode((req, res) => {
        answers.watch(req, res)
        void listener(req, res)
      }, registry.close)
      return { ...served, subscribed: () => undefined, answering: answers.answering }
    }
  }
]

const subjects: ReadonlyArray<Subject> = [...adapters.map(ofAdapter), ...integrations]

let servers: Array<Watched> = []
let streams: Array<EventStream.Opened> = []
afterEach(async () => {
  for (const stream of streams) stream.close()
  await Promise.all(streams.map((stream) => stream.ended))
  streams = []
  await Promise.all(servers.map((server) => server.close()))
  servers = []
})

const serve = async (subject: Subject, store: Store, options?: RoutingHandler.Options, capacity?: number) => {
  const server = await subject.start(store, options, capacity)
  servers.push(server)
  const open = async (query = "", headers: Record<string, string> = auth(READER)) => {
    const stream = await EventStream.open(server.fetch, `${server.origin}/v1/routing/changes${query}`, headers)
    streams.push(stream)
    return stream
  }
  const create = async (
    n: number,
    path?: string,
    middleware?: ReadonlyArray<string | { readonly name: string; readonly config: object }>
  ) => {
    const created = await server.send({
      method: "POST",
      path: "/v1/routing",
      headers: admin,
      body: JSON.stringify(route(n, path, middleware))
    })
    assert.strictEqual(created.status, 201, created.text)
    return created.json as Route.Route
  }
  const update = async (id: string, handler: string) => {
    const updated = await server.send({
      method: "PATCH",
      path: `/v1/routing/${id}`,
      headers: admin,
      body: JSON.stringify({ handler })
    })
    assert.strictEqual(updated.status, 200, updated.text)
    return updated.json as Route.Route
  }
  const remove = async (id: string) => {
    const removed = await server.send({ method: "DELETE", path: `/v1/routing/${id}`, headers: auth(ADMIN) })
    assert.strictEqual(removed.status, 204, removed.text)
  }
  const fetchRoute = async (id: string) =>
    (await server.send({ method: "GET", path: `/v1/routing/${id}`, headers: auth(ADMIN) })).text
  return { server, open, create, update, remove, fetchRoute }
}

const kinds = (events: ReadonlyArray<EventStream.Event>) => events.map((event) => event.event)

// The changes come from the store's feed and go out through the core's stream, both shared by every subject: the
// Postgres store through the first subject, the memory store through each (docs/development.md#what-runs-over-what).
const storesOf = (subject: Subject) => subject === subjects[0] ? stores : [memory]

describe.each(subjects)("GET /v1/routing/changes through $name", (subject) => {
  describe.each(storesOf(subject))("on the %s", (_name, store) => {
    it("a snapshot of the table, ready, then every change in order; upserts are the routes as GET answers them", async () => {
      const { create, fetchRoute, open, remove, update } = await serve(subject, store)
      const a = await create(1)
      const b = await create(2)
      const stream = await open()
      assert.strictEqual(stream.status, 200)
      assert.strictEqual(stream.headers.get("content-type"), "text/event-stream")
      assert.strictEqual(stream.headers.get("cache-control"), "no-cache")
      assert.strictEqual(stream.headers.get("x-accel-buffering"), "no")
      const first = await stream.until(3)
      assert.deepStrictEqual(kinds(first), ["upsert", "upsert", "ready"])
      assert.deepStrictEqual(first.slice(0, 2).map((event) => event.data.id).sort(), [a.id, b.id].sort())
      for (const event of first.slice(0, 2)) {
        assert.strictEqual(JSON.stringify(event.data), await fetchRoute(event.data.id))
      }
      // The cursors name the store and a revision of its log; ready says which revision the follower now holds.
      assert.deepStrictEqual(Object.keys(first[2]!.data), ["routes", "revision"])
      assert.strictEqual(first[2]!.data.routes, 2)
      assert.isTrue(Number.isSafeInteger(first[2]!.data.revision) && first[2]!.data.revision >= 2)
      assert.strictEqual(first[2]!.id, `${first[2]!.id!.split(".")[0]}.${first[2]!.data.revision.toString(36)}`)
      for (const event of first) assert.match(event.id!, /^[0-9a-f]{16}\.[0-9a-z]+(\.[0-9a-z]+)?$/)

      const c = await create(3)
      const a2 = await update(a.id, "moved")
      await remove(b.id)
      const all = await stream.until(6)
      assert.deepStrictEqual(kinds(all.slice(3)), ["upsert", "upsert", "delete"])
      assert.strictEqual(JSON.stringify(all[3]!.data), JSON.stringify(c))
      assert.strictEqual(JSON.stringify(all[4]!.data), JSON.stringify(a2))
      assert.deepStrictEqual(all[5]!.data, { id: b.id })
      // Each change has a cursor of its own, after the one before.
      assert.strictEqual(new Set(all.map((event) => event.id)).size, all.length)
    })

    it("sends a change set as one batch event, and the rest of one to a cursor inside it (docs/batches.md)", async () => {
      const { create, open, server } = await serve(subject, store)
      const a = await create(1)
      const b = await create(2)
      const stream = await open()
      const ready = (await stream.waitFor((event) => event.event === "ready")).at(-1)!
      const batch = (operations: ReadonlyArray<unknown>, query = "") =>
        server.send({
          method: "POST",
          path: `/v1/routing/batch${query}`,
          headers: admin,
          body: JSON.stringify({ operations })
        })
      const swap = [
        { op: "update", id: a.id, patch: { path: "/r2/:id" } },
        { op: "update", id: b.id, patch: { path: "/r1/:id" } },
        { op: "create", route: route(3) }
      ]
      const dry = await batch(swap, "?dryRun=true")
      assert.strictEqual(dry.status, 200, dry.text)
      assert.strictEqual((dry.json as { batch: unknown }).batch, null)
      assert.isNull(dry.headers.get("registry-revision"))
      const applied = await batch(swap)
      assert.strictEqual(applied.status, 200, applied.text)
      const answer = applied.json as {
        batch: string
        revision: number
        results: Array<{ status: number; revision: number }>
      }
      assert.deepStrictEqual(answer.results.map((r) => r.status), [200, 200, 201])
      assert.strictEqual(applied.headers.get("registry-revision"), String(answer.revision))
      const event = (await stream.until(4))[3] // after the snapshot's two routes and ready
      assert.strictEqual(event!.event, "batch")
      assert.strictEqual(event!.id, `${ready.id!.split(".")[0]}.${answer.revision.toString(36)}`)
      assert.deepStrictEqual(event!.data.batch, answer.batch)
      assert.deepStrictEqual(
        event!.data.events.map((
          e: { event: string; revision: number; data: { path: string } }
        ) => [e.event, e.revision, e.data.path]),
        [["upsert", answer.revision - 2, "/r2/:id"], ["upsert", answer.revision - 1, "/r1/:id"], [
          "upsert",
          answer.revision,
          "/r3/:id"
        ]]
      )
      // A conflict with a route the batch leaves in place refuses it whole, naming the operation.
      const refused = await batch([{ op: "create", route: route(4) }, { op: "create", route: route(5, "/r3/:x") }])
      assertProblem(refused, "route_conflict", ["code", "conflictingRouteId", "errors"].slice(1))
      assert.deepStrictEqual((refused.json as { errors: Array<{ path: string }> }).errors.map((e) => e.path), [
        "operations[1]"
      ])
      const shape = await batch([{ op: "create", route: route(4) }, { op: "erase", id: a.id }])
      assertProblem(shape, "invalid_batch", ["errors"])
      // Every refused operation is named, in order; the first gives the status and problem.
      const stale = await batch([
        { op: "delete", id: a.id, ifMatch: "\"1\"" },
        { op: "create", route: route(6) },
        { op: "update", id: b.id, patch: { handler: "x" }, ifMatch: "\"1\"" },
        { op: "delete", id: "019a0000-0000-7000-8000-000000000001" }
      ])
      assertProblem(stale, "precondition_failed", ["errors"])
      assert.deepStrictEqual((stale.json as { errors: Array<{ path: string }> }).errors.map((e) => e.path), [
        "operations[0]",
        "operations[2]",
        "operations[3]"
      ])
      // With an Idempotency-Key, applied once: the same body again gets the first answer, marked, and writes nothing;
      // another body with the key is refused. The description goes with the batch's event and log entries.
      const keyed = (body: unknown, key = "\"k1\"") =>
        server.send({
          method: "POST",
          path: "/v1/routing/batch",
          headers: { ...admin, "idempotency-key": key },
          body: JSON.stringify(body)
        })
      const described = { description: "add r4", operations: [{ op: "create", route: route(4) }] }
      const first = await keyed(described)
      assert.strictEqual(first.status, 200, first.text)
      assert.isNull(first.headers.get("idempotency-replayed"))
      const again = await keyed({ operations: [{ route: route(4), op: "create" }], description: "add r4" })
      assert.deepStrictEqual(
        [again.status, again.text, again.headers.get("registry-revision"), again.headers.get("idempotency-replayed")],
        [200, first.text, first.headers.get("registry-revision"), "true"]
      )
      assertProblem(await keyed({ operations: [{ op: "create", route: route(5) }] }), "idempotency_key_reused")
      assertProblem(await keyed(described, "\"\""), "invalid_idempotency_key")
      const firstBatch = (first.json as { batch: string }).batch
      const logged = await server.send({
        method: "GET",
        path: `/v1/routing/history?batch=${firstBatch}`,
        headers: auth(ADMIN)
      })
      assert.deepStrictEqual(
        (logged.json as { items: Array<{ batchDescription?: string }> }).items.map((e) => e.batchDescription),
        ["add r4"]
      )
      const newest = await server.send({ method: "GET", path: "/v1/routing/history?limit=1", headers: auth(ADMIN) })
      assert.strictEqual(
        String((newest.json as { items: Array<{ revision: number }> }).items[0]!.revision),
        first.headers.get("registry-revision")
      )
      // One event for the keyed batch, with its description; none for its replay. The swap's event has none.
      const keyedEvent = (await stream.until(5))[4]!
      assert.deepStrictEqual([keyedEvent.event, keyedEvent.data.batch, keyedEvent.data.description], [
        "batch",
        firstBatch,
        "add r4"
      ])
      assert.isFalse("description" in event!.data)
      // A cursor inside the batch resumes with the rest of it, in one event, then the keyed batch.
      const inside = await open(`?since=${ready.id!.split(".")[0]}.${(answer.revision - 2).toString(36)}`)
      const rest = await inside.waitFor((event) => event.event === "ready")
      assert.deepStrictEqual(kinds(rest), ["batch", "batch", "ready"])
      assert.deepStrictEqual([rest[1]!.data.batch, rest[1]!.data.description], [firstBatch, "add r4"])
      assert.deepStrictEqual(rest[0]!.data.events.map((e: { revision: number }) => e.revision), [
        answer.revision - 1,
        answer.revision
      ])
      // A refusal the store decided is kept as a create's 409 is: replayed byte for byte, marked. A 400 decided before
      // the store leaves the key free.
      const invalid = await keyed({ operations: [{ op: "create", route: { ...route(7), path: "nope" } }] }, "\"k2\"")
      assertProblem(invalid, "invalid_route", ["errors"])
      const conflicting = { operations: [{ op: "create", route: route(7, "/r3/:y") }] }
      const conflict = await keyed(conflicting, "\"k2\"")
      assertProblem(conflict, "route_conflict", ["conflictingRouteId", "errors"])
      assert.isNull(conflict.headers.get("idempotency-replayed"))
      const replayed = await keyed(conflicting, "\"k2\"")
      assert.deepStrictEqual(
        [replayed.status, replayed.text, replayed.headers.get("idempotency-replayed")],
        [409, conflict.text, "true"]
      )
    })

    it("resumes by since and by Last-Event-ID with exactly the missed changes, Last-Event-ID winning", async () => {
      const { create, open, remove } = await serve(subject, store)
      const a = await create(1)
      const first = await open()
      const ready = (await first.waitFor((event) => event.event === "ready")).at(-1)!
      const b = await create(2)
      await first.until(3)
      const afterB = first.events[2]!.id!
      await remove(a.id)
      const c = await create(3)
      await first.until(5)
      first.close()

      const bySince = await open(`?since=${encodeURIComponent(ready.id!)}`)
      const resumed = await bySince.until(4)
      assert.deepStrictEqual(kinds(resumed), ["upsert", "delete", "upsert", "ready"])
      assert.deepStrictEqual([resumed[0]!.data.id, resumed[1]!.data.id, resumed[2]!.data.id], [b.id, a.id, c.id])
      assert.deepStrictEqual(resumed.slice(0, 3).map((event) => event.id), first.events.slice(2, 5).map((e) => e.id))
      assert.strictEqual(resumed[3]!.id, first.events[4]!.id)

      // An EventSource reconnects to the same URL, since and all: the header says how far it got.
      const byHeader = await open(`?since=${encodeURIComponent(ready.id!)}`, {
        ...auth(READER),
        "last-event-id": afterB
      })
      assert.deepStrictEqual(kinds(await byHeader.until(3)), ["delete", "upsert", "ready"])

      // Current: nothing to replay, ready at once with the same cursor.
      const current = await open(`?since=${encodeURIComponent(first.events[4]!.id!)}`)
      const nothing = await current.until(1)
      assert.deepStrictEqual(kinds(nothing), ["ready"])
      assert.strictEqual(nothing[0]!.id, first.events[4]!.id)
    })

    it("a cursor of another store, of an earlier release or a snapshot's is answered with a reset, then the table again", async () => {
      const { create, open } = await serve(subject, store)
      await create(1)
      const snapshotted = await open()
      const events = await snapshotted.until(2)
      for (const since of ["0123456789abcdef.5", "abcdefghijkl.5", events[0]!.id!]) {
        const stream = await open(`?since=${encodeURIComponent(since)}`)
        const again = await stream.until(3)
        assert.deepStrictEqual(kinds(again), ["reset", "upsert", "ready"], since)
        assert.strictEqual(again[1]!.data.id, events[0]!.data.id)
      }
    })

    it("refuses before any byte of a stream: 401, 403, 400 invalid_query naming the parameter, 405", async () => {
      const { open, server } = await serve(subject, store)
      const none = await open("", {})
      assertProblem({ ...none, json: JSON.parse(none.text) }, "unauthenticated")
      const writer = await open("", auth(WRITER))
      assertProblem({ ...writer, json: JSON.parse(writer.text) }, "insufficient_scope")
      // Authentication first: an unauthenticated caller learns nothing of its query.
      const unknown = await open("?since=nope", {})
      assert.strictEqual(unknown.status, 401)
      const storeId = (await (await open()).until(1))[0]!.id!.split(".")[0]!
      for (
        const [query, headers, path] of [
          ["?since=nope", auth(READER), "since"],
          ["?since=", auth(READER), "since"],
          [`?since=${storeId}.zzzz`, auth(READER), "since"], // ahead of the store itself: never issued
          ["?limit=2", auth(READER), "limit"],
          ["?access_token=x", auth(READER), "access_token"],
          ["", { ...auth(READER), "last-event-id": "garbage" }, "Last-Event-ID"]
        ] as const
      ) {
        const refused = await open(query, headers)
        assert.strictEqual(refused.status, 400, query)
        const json = JSON.parse(refused.text)
        assertProblem({ ...refused, json }, "invalid_query", ["errors"])
        assert.deepStrictEqual(json.errors.map((error: { path: string }) => error.path), [path], query)
      }
      const both = await open("?since=a&since=b&x=1")
      assert.deepStrictEqual(JSON.parse(both.text).errors.map((e: { path: string }) => e.path), ["since", "x"])
      for (const method of ["POST", "PATCH", "DELETE"]) {
        const refused = await server.send({ method, path: "/v1/routing/changes", headers: admin, body: "{}" })
        assertProblem(refused, "method_not_allowed")
        assert.strictEqual(refused.headers.get("allow"), "GET")
      }
    })

    it("sends a heartbeat comment every interval while idle", async () => {
      const { open } = await serve(subject, store, { changesHeartbeatMillis: 40 })
      const stream = await open()
      await stream.until(1)
      await Effect.runPromise(eventually("three heartbeats", () => stream.comments() >= 3, 3_000))
      assert.deepStrictEqual(kinds(stream.events), ["ready"])
    })
  })

  it("every subscription ends with its client", async () => {
    const { create, open, server } = await serve(subject, RouteRepository.layerMemory)
    const opened = await Promise.all([open(), open(), open()])
    await Promise.all(opened.map((stream) => stream.until(1)))
    if (server.subscribed() !== undefined) assert.strictEqual(server.subscribed(), 3)
    for (const stream of opened) stream.close()
    await Promise.all(opened.map((stream) => stream.ended))
    // The server sees the client leave when it next writes at the latest.
    await create(1)
    if (server.subscribed() !== undefined) {
      await Effect.runPromise(eventually("no subscription left", () => server.subscribed() === 0))
    }
  })
})

// The integrations keep the default capacity: this runs where the host builds the table.
describe.each(adapters.map(ofAdapter))("a client past the replay ring's capacity, through $name", (subject) => {
  it("resumes from the store's log, each route's last change once, when the log still holds the changes", async () => {
    const { create, open, remove, update } = await serve(subject, RouteRepository.layerMemory, {}, 2)
    const first = await open()
    const ready = (await first.until(1))[0]!
    const a = await create(1)
    const b = await create(2)
    await update(a.id, "again")
    await remove(b.id)
    await create(3)
    await first.until(6)
    const stream = await open(`?since=${encodeURIComponent(ready.id!)}`)
    const resumed = await stream.until(4)
    assert.deepStrictEqual(kinds(resumed), ["upsert", "delete", "upsert", "ready"])
    assert.deepStrictEqual(
      resumed.map((event) => event.id),
      first.events.slice(3, 6).concat(first.events[5]!).map((event) => event.id)
    )
    assert.strictEqual(resumed[0]!.data.handler, "again")
  })

  it("is answered with a reset when the store's log no longer holds them", async () => {
    const { create, open } = await serve(subject, RouteRepository.layerMemoryWith({ historyCapacity: 2 }), {}, 2)
    const first = await open()
    const ready = (await first.until(1))[0]!
    for (let n = 1; n <= 3; n++) await create(n)
    await first.until(4)
    const stream = await open(`?since=${encodeURIComponent(ready.id!)}`)
    assert.deepStrictEqual(kinds(await stream.until(5)), ["reset", "upsert", "upsert", "upsert", "ready"])
  })
})

// A follower that stops reading: the registry keeps writing into its connection until it holds the bound, then cuts.
describe.each(subjects.filter((subject) => subject.name !== "AdminWebHandler (fetch Request/Response)"))(
  "a follower that stops reading, through $name",
  (subject) => {
    it("is cut off, its connection never holding much more than the bound", async () => {
      // A few changes' worth (HUGE), as a request body may hold.
      const bound = 512 * 1024
      const { create, server } = await serve(subject, RouteRepository.layerMemory, {
        changesBufferBytes: bound,
        maxBodyBytes: 1024 * 1024
      })
      const url = new URL(server.origin)
      const socket = Net.connect(Number(url.port), url.hostname)
      let received = ""
      let closed = false
      let paused = false
      socket.on("data", (chunk) => {
        if (paused) return
        received += chunk
        // Reads until the stream is live, then not until it is cut.
        if (received.includes("event: ready")) {
          paused = true
          socket.pause()
        }
      })
      socket.on("close", () => {
        closed = true
      })
      socket.on("error", () => {})
      socket.write(`GET /v1/routing/changes HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${READER}\r\n\r\n`)
      await Effect.runPromise(eventually("the stream is live", () => received.includes("event: ready")))
      // Long paths and HUGE: each change is about 85 KB; far more than the bound and the sockets' buffers together.
      // The cut ends the subscription; an integration's is seen as its answer's connection closing.
      const segment = "x".repeat(200)
      const path = (n: number) => `/${n}` + `/${segment}`.repeat(9)
      const live = () => server.subscribed() ?? server.answering!()
      let n = 0
      while (live() !== 0 && n < 2_000) {
        await create(n, path(n), HUGE)
        n++
      }
      assert.strictEqual(live(), 0, `cut after ${n} changes`)
      socket.resume()
      await Effect.runPromise(eventually("the connection is closed", () => closed, 10_000))
      socket.destroy()
    })
  }
)

describe("the AdminWebHandler's stream of a follower that stops reading", () => {
  it("is errored once its queue holds the bound, and unsubscribed", async () => {
    const bound = 64 * 1024
    const { create, server } = await serve(ofAdapter(adapters[1]!), RouteRepository.layerMemory, {
      changesBufferBytes: bound
    })
    const response = await server.fetch(`${server.origin}/v1/routing/changes`, { headers: auth(READER) })
    const reader = response.body!.getReader()
    assert.include(new TextDecoder().decode((await reader.read()).value), "event: ready")
    assert.strictEqual(server.subscribed(), 1)
    let n = 0
    // About 2 KB per change: the bound is passed within about 33 of them.
    while (server.subscribed() !== 0 && n < 100) await create(n, `/${n++}` + `/${"z".repeat(200)}`.repeat(9))
    assert.strictEqual(server.subscribed(), 0)
    assert.isAtMost(n, 40)
    const failed = await reader.read().then(() => reader.read()).then(() => "read", (error) => String(error))
    assert.include(failed, "fell too far behind")
  })
})

describe("the AdminListener's connection of a follower that stops reading", () => {
  it("holds at most the bound and one event before it is destroyed", async () => {
    const bound = 64 * 1024
    const watched = watchedTable(RouteRepository.layerMemory, undefined)
    const listener = await AdminListener.fromLayer(watched.services, { changesBufferBytes: bound })
    let most = 0
    let response: Http.ServerResponse | undefined
    const served = await serveNode((req, res) => {
      response = res
      const write = res.write.bind(res) as (chunk: string) => boolean
      res.write = ((chunk: string) => {
        const written = write(chunk)
        most = Math.max(most, res.writableLength)
        return written
      }) as typeof res.write
      listener(req, res)
    }, listener.dispose)
    servers.push({ ...served, subscribed: watched.subscribed })
    const url = new URL(served.origin)
    const socket = Net.connect(Number(url.port), url.hostname)
    let received = ""
    socket.on("data", (chunk) => {
      received += chunk
      if (received.includes("event: ready")) socket.pause()
    })
    socket.on("error", () => {})
    socket.write(`GET /v1/routing/changes HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${READER}\r\n\r\n`)
    await Effect.runPromise(eventually("the stream is live", () => received.includes("event: ready")))
    let n = 0
    const segment = "y".repeat(200)
    while (watched.subscribed() !== 0 && n < 20_000) {
      const created = await served.send({
        method: "POST",
        path: "/v1/routing",
        headers: admin,
        body: JSON.stringify(route(n, `/${n}` + `/${segment}`.repeat(9), BULK))
      })
      assert.strictEqual(created.status, 201)
      n++
    }
    assert.strictEqual(watched.subscribed(), 0)
    assert.isTrue(response!.destroyed)
    assert.isAtMost(most, bound + 4096, `most held: ${most}`)
    socket.destroy()
  })
})

describe("the AdminListener's snapshot", () => {
  it("is written many events at a time, not one write per route", async () => {
    const routes = 500
    const watched = watchedTable(RouteRepository.layerMemory, undefined)
    const listener = await AdminListener.fromLayer(watched.services)
    let writes = 0
    const served = await serveNode((req, res) => {
      const write = res.write.bind(res) as (chunk: string) => boolean
      res.write = ((chunk: string) => {
        writes++
        return write(chunk)
      }) as typeof res.write
      listener(req, res)
    }, listener.dispose)
    servers.push({ ...served, subscribed: watched.subscribed })
    // The routes in one change set: the snapshot is of the table, however its routes came.
    const created = await served.send({
      method: "POST",
      path: "/v1/routing/batch",
      headers: admin,
      body: JSON.stringify({
        operations: Array.from({ length: routes }, (_, n) => ({ op: "create", route: route(n) }))
      })
    })
    assert.strictEqual(created.status, 200, created.text)
    writes = 0
    const url = new URL(served.origin)
    const socket = Net.connect(Number(url.port), url.hostname)
    let received = ""
    socket.on("data", (chunk) => (received += chunk))
    socket.on("error", () => {})
    socket.write(`GET /v1/routing/changes HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${READER}\r\n\r\n`)
    await Effect.runPromise(eventually("the stream is live", () => received.includes("event: ready")))
    socket.destroy()
    assert.strictEqual(received.split("event: upsert\n").length - 1, routes)
    // About 100 KB of events: two writes of them, and the ready event's.
    assert.isAtMost(writes, 5, `writes: ${writes}`)
  })
})

describe("changes made by another process on the Postgres store", () => {
  it.effect("arrive on the stream", () =>
    Effect.gen(function*() {
      const table = TestDatabase.freshTable()
      const processStore = () =>
        PgRouteRepository.layer({ table }).pipe(Layer.provide(TestDatabase.layer({ maxConnections: 2 })))
      const cleanup = PgRouteRepository.uninstall({ table }).pipe(Effect.provide(TestDatabase.layer()), Effect.orDie)
      yield* Effect.addFinalizer(() => cleanup)
      const served = yield* Effect.promise(() => ofAdapter(adapters[0]!).start(processStore()))
      servers.push(served)
      const other = yield* Layer.build(RouteTable.layer.pipe(Layer.provide(processStore())))
      const otherStore = Context.get(other, RouteRepository.RouteRepository)
      const stream = yield* Effect.promise(() =>
        EventStream.open(fetch, `${served.origin}/v1/routing/changes`, auth(READER))
      )
      streams.push(stream)
      yield* Effect.promise(() => stream.until(1))
      const created = yield* otherStore.create(
        Schema.decodeUnknownSync(Route.CreateRoute)({ method: "GET", path: "/elsewhere", handler: "h", middleware: [] })
      )
      // Each change is awaited before the next: changes that land together may reach the table as their net effect.
      yield* Effect.promise(() => stream.until(2))
      yield* otherStore.update(created.id, Schema.decodeUnknownSync(Route.PatchRoute)({ handler: "h2" }))
      yield* Effect.promise(() => stream.until(3))
      yield* otherStore.remove(created.id)
      const events = yield* Effect.promise(() => stream.until(4))
      assert.deepStrictEqual(kinds(events), ["ready", "upsert", "upsert", "delete"])
      assert.strictEqual(events[1]!.data.id, created.id)
      assert.strictEqual(events[2]!.data.handler, "h2")
      assert.deepStrictEqual(events[3]!.data, { id: created.id })
    }).pipe(Effect.scoped), 30_000)
})

describe("a routing API without a route table", () => {
  it("answers the change stream and match 404 not_found, saying what the host must provide", async () => {
    const listener = await AdminListener.fromLayer(Layer.merge(RouteRepository.layerMemory, tokens))
    const served = await serveNode(listener, listener.dispose)
    servers.push({ ...served, subscribed: () => undefined })
    for (const path of ["/v1/routing/changes", "/v1/routing/match?method=GET&path=/"]) {
      const response = await served.send({ method: "GET", path, headers: auth(READER) })
      assertProblem(response, "not_found")
      assert.include(response.json.detail, "RouteTable.layer")
      // Authentication first, as everywhere.
      assertProblem(await served.send({ method: "GET", path }), "unauthenticated")
    }
  })
})

describe("RouteTable.layerWith", () => {
  it.effect("refuses a replay ring capacity that is not a whole number from 1, naming it", () =>
    Effect.gen(function*() {
      for (const replayCapacity of [0, -1, 1.5, Number.NaN]) {
        const error = yield* Effect.flip(
          Layer.build(RouteTable.layerWith({ replayCapacity }).pipe(Layer.provide(RouteRepository.layerMemory)))
        )
        assert.strictEqual(error._tag, "InvalidOption")
        assert.strictEqual((error as { option?: string }).option, "replayCapacity")
      }
    }).pipe(Effect.scoped))
})

describe("closing a host with followers connected", () => {
  it("Fastify's close ends the open streams instead of waiting for them", async () => {
    const app = Fastify()
    await app.register(FastifyIntegration.routeRegistry, {
      authenticator: tokens,
      store: RouteRepository.layerMemory,
      handlers: {}
    })
    const origin = await listening(app)
    const stream = await EventStream.open(fetch, `${origin}/v1/routing/changes`, auth(READER))
    await stream.until(1)
    const closed = await Promise.race([
      app.close().then(() => "closed"),
      new Promise((resolve) => setTimeout(() => resolve("still waiting"), 5_000))
    ])
    assert.strictEqual(closed, "closed")
    await stream.ended
  })

  it("the integrations' close ends the open streams", async () => {
    const mounted = Express.routeRegistry({ authenticator: tokens, store: RouteRepository.layerMemory, handlers: {} })
    await mounted.ready
    const app = express().use(mounted)
    const served = await serveNode(app, mounted.close)
    const stream = await EventStream.open(fetch, `${served.origin}/v1/routing/changes`, auth(READER))
    await stream.until(1)
    await mounted.close()
    await stream.ended
    await served.close()
  })
})

describe("a stream never outlives its credential (v5)", () => {
  // A token accepted for `millis` after it is presented, as a JWT's `exp` makes it.
  const expiring = (millis: number) =>
    Layer.succeed(Authenticator.Authenticator, {
      authenticate: () =>
        Effect.sync(() => ({ id: "short-lived", scopes: ["routes:read"], expiresAt: new Date(Date.now() + millis) }))
    })

  for (const [name, store] of stores) {
    it(`${name}: at its credential's expiry the stream sends expired, then ends`, async () => {
      const served = await nodeListener.start(
        Layer.merge(RouteTable.layer.pipe(Layer.provideMerge(store)), expiring(500))
      )
      try {
        const stream = await EventStream.open(fetch, `${served.origin}/v1/routing/changes`, auth("any"))
        await stream.waitFor((event) => event.event === "ready")
        await Promise.race([
          stream.ended,
          new Promise((_, reject) => setTimeout(() => reject(new Error("the stream outlived its token")), 10_000))
        ])
        assert.deepStrictEqual(stream.events.at(-1), { event: "expired", id: undefined, data: {} })
      } finally {
        await served.close()
      }
    })
  }
})
