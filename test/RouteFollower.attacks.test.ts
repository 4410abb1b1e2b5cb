/**
 * A follower's honesty and robustness (docs/scaling-out.md, "A fleet of followers" and "Readiness and staleness"):
 * an idle, connected follower counts as current; a relay cut off from its registry says so to its own followers;
 * reconnections are prompt, jittered, and back off from a stream that breaks right after `ready`; and streams built to
 * harm it (ids that cannot be sent back, endless snapshots, refused cursors, a registry that restarted empty) are each
 * dropped, logged and survived.
 */
import { assert, describe, it, onTestFinished } from "@effect/vitest"
import { Chunk, Clock, Duration, Effect, Either, Logger, Random, Redacted, Schedule, TestClock } from "effect"
import * as Http from "node:http"
import type * as Net from "node:net"
import * as AdminListener from "route-registry/AdminListener"
import * as Authenticator from "route-registry/Authenticator"
import * as Route from "route-registry/Route"
import * as RouteFollower from "route-registry/RouteFollower"
import * as RouteTable from "route-registry/RouteTable"
import * as Env from "../examples/env.js"
import * as Follower from "../src/internal/follow/follower.js"
import * as Health from "../src/internal/follow/health.js"
import * as FollowSettings from "../src/internal/follow/settings.js"
import * as Options from "../src/internal/options.js"
import { closeServer, listen } from "./utils/adapters.js"
import * as FakeRegistry from "./utils/fakeRegistry.js"
import { differences, endWait, follow, followUnderTestClock, pendingWaits, route } from "./utils/followers.js"
import { eventually } from "./utils/waiting.js"

const TOKEN = "reader"

const registry = async (options: FakeRegistry.Options = {}) => {
  const fake = await FakeRegistry.start({ heartbeatMillis: 60_000, ...options })
  onTestFinished(() => fake.close())
  return fake
}

const seed = (fake: FakeRegistry.FakeRegistry, count: number) => {
  for (let i = 0; i < count; i++) fake.put(route("GET", `/seed/${i}`))
}

/** What the follower logs, as `LEVEL message` lines, for the effect it is given to. */
const capturingLogs = () => {
  const lines: Array<string> = []
  const logger = Logger.make(({ logLevel, message }) => {
    lines.push(`${logLevel.label} ${Array.isArray(message) ? message.map(String).join(" ") : String(message)}`)
  })
  return { lines, layer: Logger.replace(Logger.defaultLogger, logger) }
}

/**
 * A registry written by hand: `script` answers each request for the change stream (its number from 0, and its
 * `Last-Event-ID`), writing what it likes; every request is recorded.
 */
const scripted = async (
  script: (res: Http.ServerResponse, n: number, cursor: string | undefined) => void
) => {
  const requests: Array<string | undefined> = []
  const sockets = new Set<Net.Socket>()
  const server = Http.createServer((req, res) => {
    const cursor = req.headers["last-event-id"] as string | undefined
    requests.push(cursor)
    script(res, requests.length - 1, cursor)
  })
  server.on("connection", (socket) => {
    sockets.add(socket)
    socket.on("close", () => sockets.delete(socket))
  })
  const origin = await listen(server)
  onTestFinished(() => {
    for (const socket of sockets) socket.destroy()
    return closeServer(server)
  })
  return { origin, requests }
}

const STREAM_HEADERS = { "content-type": "text/event-stream" }

const upsert = (r: Route.StoredRoute, id: string) => `event: upsert\nid: ${id}\ndata: ${Route.toJson(r)}\n\n`

const ROUTES = [route("GET", "/a"), route("GET", "/b"), route("GET", "/c")]

// The registry's cursors (docs/http-api.md): `<store>.<revision>`, a snapshot's routes `<store>.<revision>.<route's>`.
const STORE = "00000000000000ab"
const cursorAt = (revision: number, route?: number) =>
  route === undefined ? `${STORE}.${revision.toString(36)}` : `${STORE}.${revision.toString(36)}.${route.toString(36)}`

/** A snapshot of ROUTES at revision 1 and its `ready`. */
const SNAPSHOT = ROUTES.map((r) => upsert(r, cursorAt(1, 1))).join("") + `event: ready\nid: ${cursorAt(1)}\n\n`

describe("honest health", () => {
  // On the TestClock: the staleness is the clock's, and so is the registry's silence (idleTimeout), which cuts the
  // connection; the registry's heartbeats (every 60 s of real time) never come.
  it.scoped("an idle, connected follower stays current between heartbeats, and not once they are overdue", () =>
    Effect.gen(function*() {
      const fake = yield* Effect.promise(() => registry())
      seed(fake, 3)
      const { status } = yield* followUnderTestClock(fake.origin, TOKEN, { idleTimeout: 20_000 })
      for (let i = 0; i < 4; i++) {
        yield* TestClock.adjust(Duration.seconds(4))
        assert.strictEqual(status().stalenessMillis, 0, `after ${4 * (i + 1)} s without a heartbeat`)
        assert.isTrue(status().reachable)
      }
      yield* TestClock.adjust(Duration.seconds(4))
      yield* eventually("the silent connection is cut at idleTimeout", () => !status().reachable)
      assert.strictEqual(status().stalenessMillis, 20_000, "past idleTimeout: the time since the last byte")
    }))

  it.scoped("a heartbeat saying the process followed is stale makes the follower as stale, until one says it is not", () =>
    Effect.gen(function*() {
      const fake = yield* Effect.promise(() => registry())
      seed(fake, 3)
      const { status } = yield* followUnderTestClock(fake.origin, TOKEN)
      fake.inject(": stale 30000\n\n")
      yield* eventually(() => JSON.stringify(status()), () => status().stalenessMillis > 0)
      assert.strictEqual(status().stalenessMillis, 30_000)
      assert.isFalse(status().reachable)
      yield* TestClock.adjust(Duration.seconds(2))
      assert.strictEqual(status().stalenessMillis, 32_000, "it grows while the process followed is stale")
      fake.inject(":\n\n")
      yield* eventually(() => JSON.stringify(status()), () => status().stalenessMillis === 0)
    }))

  it("a follower of a relay cut off from its registry is not current: the relay's heartbeats carry its staleness", async () => {
    const fake = await registry()
    seed(fake, 5)
    const relay = await follow(
      fake.origin,
      TOKEN,
      {},
      Authenticator.layerStaticTokens([{ token: Redacted.make(TOKEN), scopes: ["routes:read"] }])
    )
    onTestFinished(() => relay.close())
    const listener = await relay.runtime.runPromise(AdminListener.make({ changesHeartbeatMillis: 50 }))
    const server = Http.createServer((req, res) => listener(req, res, () => res.writeHead(404).end()))
    const origin = await listen(server)
    onTestFinished(() => closeServer(server))
    const leaf = await follow(origin, TOKEN)
    onTestFinished(() => leaf.close())
    await Effect.runPromise(eventually(() => JSON.stringify(leaf.status()), () => leaf.status().reachable))
    assert.strictEqual(leaf.status().stalenessMillis, 0)
    fake.refuse(503)
    fake.cutAll()
    await Effect.runPromise(eventually("the relay never saw its stream lost", () => !relay.status().reachable))
    await Effect.runPromise(
      eventually(
        () => `the follower of the relay reports ${JSON.stringify(leaf.status())}`,
        () => !leaf.status().reachable && leaf.status().stalenessMillis >= 200
      )
    )
    fake.refuse(undefined)
    await Effect.runPromise(
      eventually(
        () => `not current again: ${JSON.stringify(leaf.status())}`,
        () => relay.status().reachable && leaf.status().reachable
      )
    )
  })
})

describe("heartbeats", () => {
  it("come at least every 15 s: a host may not set them further apart, since followers count on it", () => {
    const refused = Options.resolve({ changesHeartbeatMillis: 20_000 })
    assert.isTrue(Either.isLeft(refused))
    assert.include(Either.isLeft(refused) ? refused.left.message : "", "changesHeartbeatMillis")
    assert.isTrue(Either.isRight(Options.resolve({ changesHeartbeatMillis: 15_000 })))
  })
})

describe("prompt reconnects", () => {
  const settings = Either.getOrThrow(FollowSettings.resolve({ url: "http://127.0.0.1:1", token: Redacted.make("t") }))

  it.effect("by default no wait between two tries exceeds 4 s, and each is drawn anew", () =>
    Effect.gen(function*() {
      const waits = yield* Schedule.run(
        Schedule.delays(Follower.backoff(settings)),
        0,
        Array.from({ length: 60 }, () => undefined)
      ).pipe(Effect.map((delays) => Chunk.toReadonlyArray(delays).map(Duration.toMillis)))
      assert.isAtMost(Math.max(...waits), 4_000)
      assert.isAbove(new Set(waits.slice(20)).size, 30, "jittered")
      const top = yield* Schedule.run(
        Schedule.delays(Follower.backoff(settings)),
        0,
        Array.from({ length: 60 }, () => undefined)
      ).pipe(
        Effect.map((delays) => Chunk.toReadonlyArray(delays).map(Duration.toMillis)),
        Effect.withRandom(Random.fixed([1]))
      )
      assert.strictEqual(top[59], 4_000)
    }))

  // On the TestClock, with the defaults: a 10 s outage, then the time from the registry accepting to the follower back.
  it.scoped("after a 10 s outage a follower is back within 4 s of the registry accepting connections", () =>
    Effect.gen(function*() {
      const fake = yield* Effect.promise(() => registry())
      seed(fake, 3)
      yield* followUnderTestClock(fake.origin, TOKEN, { retryInitial: undefined, retryMax: undefined })
      fake.refuse(503)
      fake.cutAll()
      yield* driveClock(10_000, 100, 4_000)
      // The follower is in a wait (its last try refused) when the registry accepts again.
      yield* eventually("no wait", Effect.map(pendingWaits, (waits) => waits.some((wait) => wait > 0)))
      fake.refuse(undefined)
      const accepting = yield* Clock.currentTimeMillis
      const streams = fake.resumedFrom.length
      yield* endWait(4_000)
      yield* eventually("not back", () => fake.resumedFrom.length > streams)
      assert.isAtMost((yield* Clock.currentTimeMillis) - accepting, 4_000)
    }))

  it("the cap is RouteFollower's retryMax and npm start's FOLLOW_RETRY_MAX_MS", () => {
    assert.strictEqual(Duration.toMillis(RouteFollower.DEFAULTS.retryMax), 4_000)
    const custom = Either.getOrThrow(
      FollowSettings.resolve({ url: "http://127.0.0.1:1", token: Redacted.make("t"), retryMax: "1 second" })
    )
    assert.strictEqual(custom.retryMaxMillis, 1_000)
    const saved = process.env.FOLLOW_RETRY_MAX_MS
    onTestFinished(() => {
      if (saved === undefined) delete process.env.FOLLOW_RETRY_MAX_MS
      else process.env.FOLLOW_RETRY_MAX_MS = saved
    })
    process.env.FOLLOW_RETRY_MAX_MS = "1500"
    assert.strictEqual(Env.followRetryMaxMillis(), 1_500)
    process.env.FOLLOW_RETRY_MAX_MS = ""
    assert.isUndefined(Env.followRetryMaxMillis())
  })
})

// Drives the follower's backoff on the TestClock for `millis` of the clock (or `rounds` waits), each wait ended as it
// begins.
const driveClock = (millis: number, rounds: number, within: number): Effect.Effect<void> =>
  Effect.gen(function*() {
    for (let i = 0; i < rounds && (yield* Clock.currentTimeMillis) < millis; i++) yield* endWait(within)
  })

describe("attacks", () => {
  it.scoped("an event id that cannot be sent back is a protocol error: the follower resumes from the last good cursor", () => {
    const logs = capturingLogs()
    return Effect.gen(function*() {
      const fake = yield* Effect.promise(() => registry())
      seed(fake, 3)
      const { status, table } = yield* followUnderTestClock(fake.origin, TOKEN)
      const good = fake.resumedFrom.length
      for (const bad of ["bad\u0001id", "cursor€1"]) {
        const before = fake.resumedFrom.length
        const extra = route("GET", `/bad/${before}`)
        fake.inject(upsert(extra, bad))
        yield* endWait(200)
        yield* eventually(
          () => `never connected again after the id ${JSON.stringify(bad)}`,
          () => fake.resumedFrom.length > before
        )
        assert.notStrictEqual(fake.resumedFrom.at(-1), bad, "it resumed from the bad id")
        assert.strictEqual(RouteTable.lookup(table, "GET", `/bad/${before}`)._tag, "NotFound", "the event was applied")
      }
      assert.isAbove(fake.resumedFrom.length, good)
      fake.put(route("GET", "/after-the-attack"))
      yield* eventually(
        "the follower stopped following",
        () => RouteTable.lookup(table, "GET", "/after-the-attack")._tag === "Found"
      )
      assert.isTrue(logs.lines.some((line) => line.includes("an event id that is not a cursor")), logs.lines.join("\n"))
      // Not confirmed by the streams that broke, until one stays healthy for a while.
      assert.isFalse(status().reachable)
      yield* TestClock.adjust(Duration.millis(Health.HEALTHY_MILLIS))
      assert.isTrue(status().reachable)
    }).pipe(Effect.provide(logs.layer))
  })

  // A registry that sends a reset and then `events(n)` on every stream after the first: the follower drops each
  // stream past its bound, logs `logged`, and keeps the 3 routes it had.
  const droppedPast = (
    options: Partial<RouteFollower.Options>,
    events: (n: number) => ReadonlyArray<string>,
    logged: string
  ) => {
    const logs = capturingLogs()
    return Effect.gen(function*() {
      const { origin, requests } = yield* Effect.promise(() =>
        scripted((res, n) => {
          res.writeHead(200, STREAM_HEADERS)
          if (n === 0) return void res.end(SNAPSHOT)
          res.write("event: reset\ndata: {}\n\n")
          for (const event of events(n)) res.write(event)
        })
      )
      const { table } = yield* followUnderTestClock(origin, TOKEN, options)
      yield* driveClock(10_000, 3, 1_000)
      yield* eventually(() => `${requests.length} requests`, () => requests.length >= 3)
      assert.strictEqual(RouteTable.size(table), 3, "the table kept its routes")
      assert.isTrue(logs.lines.some((line) => line.includes(logged)), logs.lines.join("\n"))
    }).pipe(Effect.provide(logs.layer))
  }

  it.scoped("a reset followed by endless upserts is dropped past maxSnapshotRoutes, and logged", () =>
    droppedPast(
      { maxSnapshotRoutes: 100 },
      (n) => Array.from({ length: 200 }, (_, i) => upsert(route("GET", `/flood/${n}/${i}`), cursorAt(1, 1))),
      "more than 100 routes (maxSnapshotRoutes)"
    ))

  it.scoped("a reset of few, large routes is dropped past maxSnapshotBytes, and logged", () => {
    // The most middleware a route may name, each as long as a name may be: about 4 KB of JSON a route.
    const bulk = Array.from({ length: 32 }, (_, i) => `m${i}`.padEnd(128, "x"))
    return droppedPast(
      { maxSnapshotBytes: 64 * 1024 },
      (n) =>
        Array.from(
          { length: 50 },
          (_, i) => upsert({ ...route("GET", `/big/${n}/${i}`), middleware: bulk } as any, cursorAt(1, 1))
        ),
      "more than 65536 bytes of routes (maxSnapshotBytes)"
    )
  })

  it.scoped("a snapshot that never ends is dropped past snapshotTimeout, and logged", () => {
    const logs = capturingLogs()
    const open: Array<Http.ServerResponse> = []
    return Effect.gen(function*() {
      const { origin, requests } = yield* Effect.promise(() =>
        scripted((res, n) => {
          res.writeHead(200, STREAM_HEADERS)
          if (n === 0) return void res.end(SNAPSHOT)
          open.push(res)
          res.write("event: reset\ndata: {}\n\n" + upsert(route("GET", `/slow/${n}`), cursorAt(1, 1)))
        })
      )
      // The registry's silence (idleTimeout) is waited for on the same clock: longer than the snapshot's deadline here.
      const { table } = yield* followUnderTestClock(origin, TOKEN, { snapshotTimeout: 60_000, idleTimeout: 120_000 })
      yield* endWait(1_000)
      yield* eventually("no second stream", () => open.length === 1)
      yield* TestClock.adjust(Duration.seconds(61))
      open[0]!.write(":\n\n")
      yield* eventually("the stream was kept", () => requests.length >= 2 && open[0]!.destroyed)
      assert.strictEqual(RouteTable.size(table), 3)
      assert.isTrue(logs.lines.some((line) => line.includes("(snapshotTimeout)")), logs.lines.join("\n"))
    }).pipe(Effect.provide(logs.layer))
  })

  it.scoped("a stream that breaks the protocol right after ready: backoff grows, one log line, staleness grows", () => {
    const logs = capturingLogs()
    return Effect.gen(function*() {
      const { origin, requests } = yield* Effect.promise(() =>
        scripted((res) => {
          res.writeHead(200, STREAM_HEADERS)
          res.write(SNAPSHOT + `event: upsert\nid: ${cursorAt(2)}\ndata: nonsense\n\n`)
        })
      )
      const { status } = yield* followUnderTestClock(origin, TOKEN, { retryInitial: 10, retryMax: 1_000 })
      yield* driveClock(8_000, 200, 1_000)
      // Mean waits 5, 10, 20 … 500 ms: a few dozen tries in 8 s of the clock; a backoff reset at every ready would make
      // one every 5 ms, 1,600.
      assert.isAtMost(requests.length, 60, `${requests.length} tries in 8 s`)
      assert.isAtLeast(yield* Clock.currentTimeMillis, 8_000, `${requests.length} tries`)
      const lost = logs.lines.filter((line) => line.includes("lost the registry's change stream"))
      assert.strictEqual(lost.length, 1, logs.lines.join("\n"))
      assert.isAtMost(logs.lines.filter((line) => line.includes("following the registry again")).length, 1)
      assert.isAtLeast(status().stalenessMillis, 7_000, "the table is not confirmed by a stream that breaks at once")
      assert.isFalse(status().reachable)
    }).pipe(Effect.provide(logs.layer))
  })

  it.scoped("a cursor the registry refuses (400 naming Last-Event-ID) is dropped: the follower starts from a snapshot", () =>
    Effect.gen(function*() {
      const { origin, requests } = yield* Effect.promise(() =>
        scripted((res, n, cursor) => {
          if (cursor !== undefined) {
            return void res.writeHead(400, { "content-type": "application/problem+json" }).end(JSON.stringify({
              status: 400,
              code: "invalid_query",
              detail: "The query is not valid.",
              errors: [{ path: "Last-Event-ID", message: "is not a cursor this API issued" }]
            }))
          }
          res.writeHead(200, STREAM_HEADERS)
          if (n === 0) return void res.end(SNAPSHOT)
          res.write(upsert(ROUTES[0]!, cursorAt(2, 1)) + `event: ready\nid: ${cursorAt(2)}\n\n`)
        })
      )
      const { table } = yield* followUnderTestClock(origin, TOKEN)
      yield* driveClock(10_000, 2, 200)
      yield* eventually(() => `${requests.length} requests`, () => requests.length >= 3)
      assert.deepStrictEqual(requests.slice(0, 3), [undefined, cursorAt(1), undefined])
      yield* eventually("the snapshot was not taken", () => RouteTable.size(table) === 1)
    }))

  it.scoped("a reset that shrinks the table is a warning with the counts", () => {
    const logs = capturingLogs()
    return Effect.gen(function*() {
      const fake = yield* Effect.promise(() => registry())
      seed(fake, 5)
      const { table } = yield* followUnderTestClock(fake.origin, TOKEN)
      for (const id of Array.from(fake.routes.keys()).slice(0, 3)) fake.routes.delete(id)
      fake.restart()
      yield* endWait(200)
      yield* eventually("no reset taken", () => RouteTable.size(table) === 2)
      assert.deepStrictEqual(differences(fake.routes.values(), table), [])
      const warning = logs.lines.find((line) => line.includes("a reset"))
      assert.isDefined(warning, logs.lines.join("\n"))
      assert.match(warning!, /^WARN .*5 routes before, 2 after, 3 removed/)
    }).pipe(Effect.provide(logs.layer))
  })
})
