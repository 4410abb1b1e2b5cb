/**
 * The change stream's cursors are revisions of the store's change log (docs/http-api.md, "Following every change";
 * docs/scaling-out.md): a client resumes at another registry process on the same Postgres database, and after a
 * restart of one process or of all of them, with exactly the changes it missed and no reset; a memory store's cursor
 * is another store's for the next run (a reset); a relay passes the registry's cursors on unchanged, so a client moves
 * between the relay and the registry without a reset, and the relay's ETags are the registry's.
 */
import { afterEach, assert, describe, it } from "@effect/vitest"
import { Context, Effect, Layer, Schema } from "effect"
import * as Http from "node:http"
import * as Net from "node:net"
import * as AdminListener from "route-registry/AdminListener"
import * as Authenticator from "route-registry/Authenticator"
import * as PgRouteRepository from "route-registry/PgRouteRepository"
import * as Route from "route-registry/Route"
import * as RouteRepository from "route-registry/RouteRepository"
import * as RouteTable from "route-registry/RouteTable"
import { closeServer, listen, type Served, serveNode } from "./utils/adapters.js"
import * as EventStream from "./utils/eventStream.js"
import { follow } from "./utils/followers.js"
import { ADMIN, READER, REPORTER, tokenList, tokens } from "./utils/httpContract.js"
import * as TestDatabase from "./utils/TestDatabase.js"
import { eventually } from "./utils/waiting.js"

const auth = (token: string) => ({ authorization: `Bearer ${token}` })
const admin = { ...auth(ADMIN), "content-type": "application/json" }

let opened: Array<Served> = []
let streams: Array<EventStream.Opened> = []
afterEach(async () => {
  for (const stream of streams) stream.close()
  await Promise.all(streams.map((stream) => stream.ended))
  streams = []
  await Promise.all(opened.map((served) => served.close()))
  opened = []
})

// A registry process over `store`: its own table, its own replay ring, its routing API on a port of its own.
const registry = async (store: Layer.Layer<RouteRepository.RouteRepository, unknown>, replayCapacity?: number) => {
  const table = replayCapacity === undefined ? RouteTable.layer : RouteTable.layerWith({ replayCapacity })
  const listener = await AdminListener.fromLayer(Layer.merge(table.pipe(Layer.provide(store)), tokens))
  const served = await serveNode(listener, listener.dispose)
  opened.push(served)
  return served
}

const open = async (served: { readonly origin: string }, since?: string) => {
  const query = since === undefined ? "" : `?since=${encodeURIComponent(since)}`
  const stream = await EventStream.open(fetch, `${served.origin}/v1/routing/changes${query}`, auth(READER))
  streams.push(stream)
  return stream
}

// Reads a stream up to its first `ready`, then leaves it: the events, and the cursor it holds then.
const untilReady = async (stream: EventStream.Opened) => {
  const events = await stream.waitFor((event) => event.event === "ready")
  stream.close()
  return { events, cursor: events.at(-1)!.id! }
}

const create = async (served: Served, path: string) => {
  const created = await served.send({
    method: "POST",
    path: "/v1/routing",
    headers: admin,
    body: JSON.stringify({ method: "GET", path, handler: "h", middleware: [] })
  })
  assert.strictEqual(created.status, 201, created.text)
  return created.json as { readonly id: string }
}

const update = async (served: Served, id: string, handler: string) => {
  const updated = await served.send({
    method: "PATCH",
    path: `/v1/routing/${id}`,
    headers: admin,
    body: JSON.stringify({ handler })
  })
  assert.strictEqual(updated.status, 200, updated.text)
}

const remove = async (served: Served, id: string) => {
  const removed = await served.send({ method: "DELETE", path: `/v1/routing/${id}`, headers: auth(ADMIN) })
  assert.strictEqual(removed.status, 204, removed.text)
}

const kinds = (events: ReadonlyArray<EventStream.Event>) => events.map((event) => event.event)

describe("a cursor on the Postgres store", () => {
  it("resumes at another process, after a restart of one and of both, with the missed changes and no reset", async () => {
    const table = TestDatabase.freshTable()
    const store = () =>
      PgRouteRepository.layer({ table }).pipe(Layer.provide(TestDatabase.layer({ maxConnections: 2 })))
    const cleanup = PgRouteRepository.uninstall({ table }).pipe(Effect.provide(TestDatabase.layer()), Effect.orDie)
    try {
      const a = await registry(store())
      const b = await registry(store())
      const one = await create(a, "/one")
      const two = await create(a, "/two")
      const first = await untilReady(await open(a))
      assert.deepStrictEqual(kinds(first.events), ["upsert", "upsert", "ready"])

      // Changes through both processes; the client resumes at the other one.
      const three = await create(b, "/three")
      await update(a, one.id, "moved")
      await remove(b, two.id)
      const atB = await untilReady(await open(b, first.cursor))
      assert.deepStrictEqual(kinds(atB.events), ["upsert", "upsert", "delete", "ready"])
      assert.deepStrictEqual(atB.events.slice(0, 3).map((event) => event.data.id), [three.id, one.id, two.id])
      assert.strictEqual(atB.events[1]!.data.handler, "moved")

      // A restarted process holds none of those changes in memory: it reads them from the log.
      await a.close()
      opened = opened.filter((served) => served !== a)
      const restarted = await registry(store())
      const atRestarted = await untilReady(await open(restarted, first.cursor))
      assert.deepStrictEqual(kinds(atRestarted.events), ["upsert", "upsert", "delete", "ready"])
      assert.strictEqual(atRestarted.cursor, atB.cursor, "the same revision, whichever process says it")

      // Every process restarted: a change made meanwhile is the only one sent.
      const four = await create(b, "/four")
      await Promise.all(opened.map((served) => served.close()))
      opened = []
      const again = await registry(store())
      const resumed = await untilReady(await open(again, atB.cursor))
      assert.deepStrictEqual(kinds(resumed.events), ["upsert", "ready"])
      assert.strictEqual(resumed.events[0]!.data.id, four.id)

      // The routes' revisions are the log's: the ETag the API gives is the cursor's revision.
      const got = await again.send({ method: "GET", path: `/v1/routing/${four.id}`, headers: auth(READER) })
      assert.strictEqual(got.headers.get("etag"), `"${parseInt(resumed.events[0]!.id!.split(".")[1]!, 36)}"`)
    } finally {
      await Effect.runPromise(cleanup)
    }
  })
})

describe("a cursor on the memory store", () => {
  it("is another store's for the next run: answered with a reset, then the routes", async () => {
    const first = await registry(RouteRepository.layerMemory)
    await create(first, "/kept")
    const { cursor } = await untilReady(await open(first))
    const second = await registry(RouteRepository.layerMemory)
    await create(second, "/other")
    const stream = await open(second, cursor)
    const events = await stream.waitFor((event) => event.event === "ready")
    assert.deepStrictEqual(kinds(events), ["reset", "upsert", "ready"])
  })
})

describe("a relay", () => {
  it("passes the registry's cursors on: a client moves between them with no reset, and ETags are the registry's", async () => {
    const origin = await registry(RouteRepository.layerMemory)
    const one = await create(origin, "/one")
    const relayed = await follow(origin.origin, READER, {}, Authenticator.layerStaticTokens(tokenList))
    const listener = await relayed.runtime.runPromise(AdminListener.make())
    const server = Http.createServer((req, res) => listener(req, res, () => res.writeHead(404).end()))
    const relay = { origin: await listen(server) }
    try {
      const fromRelay = await untilReady(await open(relay))
      const fromRegistry = await untilReady(await open(origin))
      assert.strictEqual(fromRelay.cursor, fromRegistry.cursor)
      assert.strictEqual(fromRelay.events[0]!.id, fromRegistry.events[0]!.id)

      // Changes at the registry; the client left the relay and resumes at the registry, then back at the relay.
      const two = await create(origin, "/two")
      const atRegistry = await untilReady(await open(origin, fromRelay.cursor))
      assert.deepStrictEqual(kinds(atRegistry.events), ["upsert", "ready"])
      await update(origin, one.id, "moved")
      const moved = await open(origin, atRegistry.cursor)
      const atOrigin = await untilReady(moved)
      await Effect.runPromise(eventually(
        "the relay has the change",
        () => relayed.ring.revision() >= revisionOf(atOrigin.cursor)
      ))
      const atRelay = await untilReady(await open(relay, atRegistry.cursor))
      assert.deepStrictEqual(kinds(atRelay.events), ["upsert", "ready"])
      assert.strictEqual(atRelay.events[0]!.id, atOrigin.events[0]!.id)

      for (const id of [one.id, two.id]) {
        const etag = async (at: string) =>
          (await fetch(`${at}/v1/routing/${id}`, { headers: auth(READER) })).headers.get("etag")
        assert.strictEqual(await etag(relay.origin), await etag(origin.origin))
      }
    } finally {
      await closeServer(server)
      await relayed.close()
    }
  })
})

// A relay of `origin` keeping only `replayCapacity` changes, its routing API served on a port of its own.
const relayOf = async (origin: Served, replayCapacity: number) => {
  const relayed = await follow(origin.origin, REPORTER, { replayCapacity }, Authenticator.layerStaticTokens(tokenList))
  const listener = await relayed.runtime.runPromise(AdminListener.make())
  const server = Http.createServer((req, res) => listener(req, res, () => res.writeHead(404).end()))
  const relay = { origin: await listen(server), relayed }
  opened.push({ close: () => closeServer(server).then(() => relayed.close()) } as Served)
  return relay
}

// Waits until the relay holds the registry's latest change.
const caughtUp = async (
  relay: { readonly relayed: { readonly ring: { revision: () => number } } },
  origin: Served
) => {
  const latest = revisionOf((await untilReady(await open(origin))).cursor)
  await Effect.runPromise(eventually("the relay has every change", () => relay.relayed.ring.revision() >= latest))
}

const summary = (events: ReadonlyArray<EventStream.Event>) =>
  events.map((event) => `${event.event} ${event.id} ${event.event === "ready" ? "" : JSON.stringify(event.data)}`)

describe("a relay whose replay ring no longer holds a client's cursor", () => {
  it("catches the client up from the registry's log: exactly the missed changes, no reset, then live", async () => {
    const origin = await registry(RouteRepository.layerMemory)
    const kept = await create(origin, "/kept")
    const gone = await create(origin, "/gone")
    const relay = await relayOf(origin, 2)
    const { cursor } = await untilReady(await open(relay))

    // More changes than the relay keeps, one per route, while the client is away.
    const added = [await create(origin, "/a"), await create(origin, "/b"), await create(origin, "/c")]
    await update(origin, kept.id, "moved")
    await remove(origin, gone.id)
    await caughtUp(relay, origin)
    assert.isBelow(revisionOf(cursor), relay.relayed.ring.revision() - 2, "older than the relay's replay ring")

    const stream = await open(relay, cursor)
    const events = await stream.waitFor((event) => event.event === "ready")
    assert.deepStrictEqual(kinds(events), ["upsert", "upsert", "upsert", "upsert", "delete", "ready"])
    assert.deepStrictEqual(
      events.slice(0, 5).map((event) => event.data.id),
      [...added.map((route) => route.id), kept.id, gone.id]
    )
    // The same events, cursors and all, as the registry sends from that cursor.
    const atRegistry = await untilReady(await open(origin, cursor))
    assert.deepStrictEqual(summary(events.slice(0, 5)), summary(atRegistry.events.slice(0, 5)))
    assert.strictEqual(events.at(-1)!.id, atRegistry.cursor)

    // The catch-up stream the relay opened at the registry is no member of the fleet: only the relay is listed.
    const fleet = await origin.send({ method: "GET", path: "/v1/routing/followers", headers: auth(READER) })
    assert.deepStrictEqual((fleet.json as { items: ReadonlyArray<unknown> }).items.length, 1, fleet.text)

    // Live from there: the next change arrives, once.
    const caught = events.length
    const later = await create(origin, "/later")
    const next = await stream.waitFor((event) => event.event === "upsert" && event.data.id === later.id)
    assert.deepStrictEqual(next.slice(caught).map((event) => `${event.event} ${event.data.id}`), [`upsert ${later.id}`])
  })

  it("catches up page by page past a page of the log, then from the relay's own replay ring, with no gap and no duplicate", async () => {
    const origin = await registry(RouteRepository.layerMemory, 50)
    const relay = await relayOf(origin, 10)
    const { cursor } = await untilReady(await open(relay))
    // More than a page of the log (1,000 changes), so that the catch-up ends inside the relay's own replay ring.
    const ids: Array<string> = []
    for (let n = 0; n < 1005; n++) ids.push((await create(origin, `/page/${n}`)).id)
    await caughtUp(relay, origin)
    const events = await (await open(relay, cursor)).waitFor((event) => event.event === "ready", 20_000)
    assert.deepStrictEqual(kinds(events), [...ids.map(() => "upsert"), "ready"])
    assert.deepStrictEqual(events.slice(0, -1).map((event) => event.data.id), ids)
    const atRegistry = await untilReady(await open(origin, cursor))
    assert.deepStrictEqual(events.map((event) => event.id), atRegistry.events.map((event) => event.id))
  })

  it("closes the client's stream, with no reset, while the registry cannot be reached for the catch-up", async () => {
    const origin = await registry(RouteRepository.layerMemory)
    const relay = await relayOf(origin, 1)
    const { cursor } = await untilReady(await open(relay))
    for (const path of ["/a", "/b", "/c"]) await create(origin, path)
    await caughtUp(relay, origin)
    await origin.close()
    opened = opened.filter((served) => served !== origin)
    // Closed before anything was sent (its head included, as a registry that cannot read its log does): the client
    // resumes later from the same cursor.
    const sent = await open(relay, cursor).then(
      async (stream) => {
        await stream.ended
        return kinds(stream.events)
      },
      () => []
    )
    assert.deepStrictEqual(sent, [])
    // The relay itself routes on, and serves a stream that needs nothing from the registry.
    assert.deepStrictEqual(kinds((await untilReady(await open(relay))).events), ["upsert", "upsert", "upsert", "ready"])
  })

  it("refuses a cursor past the registry's newest revision, as the registry does: no process issued it", async () => {
    const origin = await registry(RouteRepository.layerMemory)
    await create(origin, "/one")
    const relay = await relayOf(origin, 2)
    const { cursor } = await untilReady(await open(relay))
    const [store] = cursor.split(".")
    const refused = await open(relay, `${store}.${(revisionOf(cursor) + 100).toString(36)}`)
    assert.strictEqual(refused.status, 400, refused.text)
    assert.strictEqual(JSON.parse(refused.text).code, "invalid_query")
  })

  it("resets a cursor of another store", async () => {
    const other = await registry(RouteRepository.layerMemory)
    await create(other, "/elsewhere")
    const foreign = (await untilReady(await open(other))).cursor
    const origin = await registry(RouteRepository.layerMemory)
    await create(origin, "/here")
    const relay = await relayOf(origin, 2)
    const events = await (await open(relay, foreign)).waitFor((event) => event.event === "ready")
    assert.deepStrictEqual(kinds(events), ["reset", "upsert", "ready"])
    assert.strictEqual(events[1]!.data.path, "/here")
  })

  it("resets the client when the registry's log was pruned past its cursor too", async () => {
    const origin = await registry(RouteRepository.layerMemoryWith({ historyCapacity: 2 }), 2)
    await create(origin, "/first")
    const relay = await relayOf(origin, 2)
    const { cursor } = await untilReady(await open(relay))
    for (const path of ["/a", "/b", "/c", "/d", "/e"]) await create(origin, path)
    await caughtUp(relay, origin)
    const atRegistry = await (await open(origin, cursor)).waitFor((event) => event.event === "ready")
    assert.strictEqual(atRegistry[0]!.event, "reset", "the registry no longer has the changes")
    const events = await (await open(relay, cursor)).waitFor((event) => event.event === "ready")
    assert.deepStrictEqual(kinds(events), ["reset", ...Array.from({ length: 6 }, () => "upsert"), "ready"])
  })
})

const revisionOf = (cursor: string) => parseInt(cursor.split(".")[1]!, 36)

// A memory store holding `count` routes of about 2 KB each: a snapshot far larger than a connection's buffers.
const seeded = (count: number) =>
  Layer.effect(
    RouteRepository.RouteRepository,
    Effect.tap(RouteRepository.makeMemory, (store) =>
      Effect.forEach(
        Array.from({ length: count }, (_, n) => n),
        (n) =>
          store.create(
            Schema.decodeUnknownSync(Route.CreateRoute)({
              method: "GET",
              path: `/${n}` + `/${"x".repeat(200)}`.repeat(9),
              handler: "h",
              middleware: []
            })
          ),
        { discard: true }
      ))
  )

describe("the bounds of the change stream", () => {
  it("a client that stops reading in the middle of its snapshot is cut at the stall deadline", async () => {
    const listener = await AdminListener.fromLayer(
      Layer.merge(RouteTable.layer.pipe(Layer.provide(seeded(15_000))), tokens),
      { changesStallMillis: 300 }
    )
    const served = await serveNode(listener, listener.dispose)
    opened.push(served)
    const url = new URL(served.origin)
    const socket = Net.connect(Number(url.port), url.hostname)
    let closed = false
    let received = ""
    socket.on("data", (chunk) => {
      received += chunk
    })
    socket.on("close", () => {
      closed = true
    })
    socket.on("error", () => {})
    socket.pause() // reads nothing: the snapshot stalls once the buffers are full
    socket.write(`GET /v1/routing/changes HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${READER}\r\n\r\n`)
    // Well past the deadline, the client reads again: what the connection held, then its end, which comes behind it.
    await new Promise((resolve) => setTimeout(resolve, 3_000))
    socket.resume()
    await Effect.runPromise(eventually("the stalled stream is closed", () => closed, 20_000))
    assert.notInclude(received, "event: ready", "cut in the middle of its snapshot")
  })

  it("one principal holds at most changesStreamsPerPrincipal streams: one more is 429 too_many_streams", async () => {
    const listener = await AdminListener.fromLayer(
      Layer.merge(RouteTable.layer.pipe(Layer.provide(RouteRepository.layerMemory)), tokens),
      { changesStreamsPerPrincipal: 2 }
    )
    const served = await serveNode(listener, listener.dispose)
    opened.push(served)
    const held = [await open(served), await open(served)]
    await Promise.all(held.map((stream) => stream.until(1)))
    const refused = await open(served)
    assert.strictEqual(refused.status, 429)
    assert.strictEqual(JSON.parse(refused.text).code, "too_many_streams")
    assert.isNotNull(refused.headers.get("retry-after"))
    // Another principal is not refused, and a stream closed frees its place.
    const other = await EventStream.open(fetch, `${served.origin}/v1/routing/changes`, auth(ADMIN))
    streams.push(other)
    assert.strictEqual(other.status, 200)
    held[0]!.close()
    await held[0]!.ended
    // The server hears of the close a moment after the client: it is asked again until then.
    let again = await open(served)
    for (let tries = 0; again.status === 429 && tries < 100; tries++) {
      await new Promise((resolve) => setTimeout(resolve, 50))
      again = await open(served)
    }
    assert.strictEqual(again.status, 200)
  })
})

describe("a crowd resuming from the store's log", () => {
  it("is served in turn, at most 4 reads of the log at once, every client with its changes and no reset", async () => {
    let running = 0
    let most = 0
    const counted = Layer.effectContext(
      Effect.map(RouteRepository.makeMemoryContext(), (context) => {
        const log = Context.get(context, RouteRepository.ChangeLog)
        return Context.add(context, RouteRepository.ChangeLog, {
          history: log.history,
          logAfter: (revision, limit) =>
            Effect.acquireUseRelease(
              Effect.sync(() => {
                running++
                most = Math.max(most, running)
              }),
              () => Effect.zipRight(Effect.sleep("20 millis"), log.logAfter(revision, limit)),
              () =>
                Effect.sync(() => {
                  running--
                })
            )
        })
      })
    )
    const listener = await AdminListener.fromLayer(
      Layer.merge(RouteTable.layerWith({ replayCapacity: 1 }).pipe(Layer.provide(counted)), tokens)
    )
    const served = await serveNode(listener, listener.dispose)
    opened.push(served)
    const { cursor } = await untilReady(await open(served))
    for (let n = 0; n < 3; n++) await create(served, `/crowd/${n}`)
    most = 0
    const crowd = await Promise.all(Array.from({ length: 12 }, () => open(served, cursor)))
    const events = await Promise.all(crowd.map((stream) => untilReady(stream)))
    for (const { events: received } of events) {
      assert.deepStrictEqual(kinds(received), ["upsert", "upsert", "upsert", "ready"])
    }
    assert.isAtMost(most, 4)
    assert.isAtLeast(most, 1)
  })
})
