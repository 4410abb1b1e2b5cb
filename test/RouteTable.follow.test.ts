/**
 * A follower (`RouteFollower.layer`, docs/scaling-out.md, "A fleet of followers") against a registry's change stream served by a fake registry
 * that can cut streams, cut an event in the middle of its frame, restart, fall silent and refuse: it routes only
 * after `ready`, applies changes in order, resumes without loss or duplicates, ends equal after a reset, keeps routing
 * through an outage, backs off with jitter, answers writes 405 and passes the changes on (a relay).
 */
import { assert, describe, it, onTestFinished } from "@effect/vitest"
import {
  Chunk,
  Clock,
  Duration,
  Effect,
  Exit,
  Fiber,
  Layer,
  Option,
  Random,
  Redacted,
  Schedule,
  TestClock
} from "effect"
import * as Http from "node:http"
import * as AdminListener from "route-registry/AdminListener"
import * as Authenticator from "route-registry/Authenticator"
import * as Route from "route-registry/Route"
import * as RouteFollower from "route-registry/RouteFollower"
import * as RouteTable from "route-registry/RouteTable"
import * as Follower from "../src/internal/follow/follower.js"
import * as Sse from "../src/internal/follow/sse.js"
import * as ReplayRing from "../src/internal/table/replayRing.js"
import { closeServer, listen } from "./utils/adapters.js"
import * as FakeRegistry from "./utils/fakeRegistry.js"
import { changed, differences, endWait, follow, followUnderTestClock, pendingWaits, route } from "./utils/followers.js"
import { eventually } from "./utils/waiting.js"

const TOKEN = "reader"

const registry = async (options: FakeRegistry.Options = {}) => {
  const fake = await FakeRegistry.start({ heartbeatMillis: 100, ...options })
  onTestFinished(() => fake.close())
  return fake
}

const follower = async (url: string, options: Partial<RouteFollower.Options> = {}) => {
  const followed = await follow(url, TOKEN, options)
  onTestFinished(() => followed.close())
  return followed
}

const converged = (fake: FakeRegistry.FakeRegistry, table: Iterable<RouteTable.Found["route"]>) =>
  Effect.runPromise(eventually(
    () => `the tables differ at ${differences(fake.routes.values(), table).join(", ")}`,
    () => differences(fake.routes.values(), table).length === 0
  ))

// The cursor of everything a replay ring holds.
const cursorOf = (ring: ReplayRing.ReplayRing) => ReplayRing.cursorOf(ring.store()!, ring.revision())

const seed = (fake: FakeRegistry.FakeRegistry, count: number) => {
  for (let i = 0; i < count; i++) fake.put(route("GET", `/seed/${i}`))
}

describe("the SSE parser", () => {
  const parse = (chunks: ReadonlyArray<string | Buffer>, maxEventBytes = 1024) => {
    const events: Array<Sse.Event> = []
    let comments = 0
    const parser = new Sse.Parser(maxEventBytes, {
      event: (event) => void events.push(event),
      comment: () => void comments++
    })
    let failure: string | undefined
    for (const chunk of chunks) failure ??= parser.push(typeof chunk === "string" ? Buffer.from(chunk) : chunk)
    return { events, comments, failure }
  }

  it("reads fields, multi-line data, comments and ids kept across events, with LF, CRLF and CR line ends", () => {
    const { comments, events } = parse([
      "\uFEFFevent: upsert\nid: 1\ndata: a\ndata:b\n\n",
      ": heartbeat\r\n\r\n",
      "event: delete\r\ndata: {\"id\":\"x\"}\r\n\r\n",
      "event: ready\rid: 2\r\rretry: 10\nunknown: field\ndata\n\n"
    ])
    assert.strictEqual(comments, 1)
    assert.deepStrictEqual(events, [
      { type: "upsert", data: "a\nb", id: "1" },
      { type: "delete", data: "{\"id\":\"x\"}", id: "1" },
      { type: "ready", data: "", id: "2" },
      { type: "message", data: "", id: "2" }
    ])
  })

  it("reads an event split anywhere, a CR and its LF in two chunks included, and multi-byte characters split", () => {
    const text = "event: upsert\r\nid: é1\r\ndata: {\"path\":\"/ü\"}\r\n\r\n"
    const bytes = Buffer.from(text)
    for (let cut = 1; cut < bytes.length; cut++) {
      const { events } = parse([bytes.subarray(0, cut), bytes.subarray(cut)])
      assert.deepStrictEqual(events, [{ type: "upsert", data: "{\"path\":\"/ü\"}", id: "é1" }], `cut at ${cut}`)
    }
    const single = parse(Array.from(bytes, (byte) => Buffer.from([byte])))
    assert.strictEqual(single.events.length, 1)
  })

  it("skips a byte order mark split across chunks anywhere, and keeps a first byte that only looks like its start", () => {
    const bytes = Buffer.from("\uFEFFevent: ready\n\n")
    for (const cuts of [[1], [2], [1, 2], [3]]) {
      const ends = [...cuts, bytes.length]
      const { events, failure } = parse(ends.map((end, i) => bytes.subarray(i === 0 ? 0 : ends[i - 1], end)))
      assert.isUndefined(failure)
      assert.deepStrictEqual(events, [{ type: "ready", data: "", id: "" }], `cut at ${cuts.join(",")}`)
    }
    // Bytes that begin like a mark and then differ are the stream's own: an event type of "\xEF\xBBx" kept.
    const lookalike = parse([Buffer.from([0xef]), Buffer.from([0xbb]), Buffer.from("x\ndata: 1\n\n")])
    assert.deepStrictEqual(lookalike.events.map((event) => event.data), ["1"])
  })

  it("ignores an id holding NUL, and drops a block with neither data nor type", () => {
    const { events } = parse(["id: 1\n\nid: a\0b\nevent: x\n\n"])
    assert.deepStrictEqual(events, [{ type: "x", data: "", id: "1" }])
  })

  it("fails an event larger than the bound, whether its lines end or not, and takes nothing after", () => {
    const long = parse([`data: ${"x".repeat(600)}\n`, `data: ${"x".repeat(600)}\n\nevent: later\n\n`])
    assert.include(long.failure, "more than 1024 bytes")
    assert.deepStrictEqual(long.events, [])
    const endless = parse(Array.from({ length: 100 }, () => "x".repeat(100)))
    assert.include(endless.failure, "more than 1024 bytes")
    const fits = parse([`data: ${"x".repeat(1000)}\n\n`, `data: ${"y".repeat(1000)}\n\n`])
    assert.strictEqual(fits.failure, undefined)
    assert.strictEqual(fits.events.length, 2)
  })
})

describe("RouteFollower.layer", () => {
  it("routes only once ready has arrived, with every route of the snapshot", async () => {
    const fake = await registry({ lineEnd: "\r\n" })
    seed(fake, 50)
    fake.holdReady()
    let built = false
    const pending = follower(fake.origin).then((followed) => {
      built = true
      return followed
    })
    await new Promise((resolve) => setTimeout(resolve, 300))
    assert.isFalse(built, "the layer was built before ready")
    fake.speak()
    const { status, table } = await pending
    assert.strictEqual(RouteTable.size(table), 50)
    assert.deepStrictEqual(differences(fake.routes.values(), table), [])
    assert.strictEqual(RouteTable.lookup(table, "GET", "/seed/7")._tag, "Found")
    assert.include(status(), { following: "stream", reachable: true, error: undefined })
  })

  it("applies creates, updates and deletes in order, and records each in its own replay ring", async () => {
    const fake = await registry()
    const { ring, table } = await follower(fake.origin)
    const start = cursorOf(ring)
    const a = route("GET", "/a")
    const b = route("GET", "/b")
    fake.put(a)
    fake.put(b)
    const a2 = changed(a, { path: "/a2" as never, middleware: ["auth" as never] })
    fake.put(a2)
    fake.remove(b.id)
    const c = route("GET", "/a") // the shape /a is free again
    fake.put(c)
    await converged(fake, table)
    assert.strictEqual(RouteTable.lookup(table, "GET", "/a2")._tag, "Found")
    assert.strictEqual(RouteTable.lookup(table, "GET", "/b")._tag, "NotFound")
    const resumed = ring.since(start)
    assert.strictEqual(resumed._tag, "Changes")
    if (resumed._tag !== "Changes") return
    assert.deepStrictEqual(resumed.changes.map((change) => change._tag === "Upsert" ? change.route.path : change.id), [
      "/a",
      "/b",
      "/a2",
      b.id,
      "/a"
    ])
  })

  it("resumes after a stream cut in the middle of an event, from the last event applied, losing and repeating nothing", async () => {
    const fake = await registry()
    seed(fake, 3)
    const { ring, table } = await follower(fake.origin)
    const start = cursorOf(ring)
    for (let i = 0; i < 20; i++) {
      if (i % 4 === 0) fake.cutNextEventMidway()
      fake.put(route("POST", `/cut/${i}`))
      await new Promise((resolve) => setTimeout(resolve, 20))
    }
    await converged(fake, table)
    const resumed = ring.since(start)
    assert.strictEqual(resumed._tag, "Changes")
    if (resumed._tag !== "Changes") return
    assert.strictEqual(resumed.changes.length, 20, "each change applied exactly once")
    assert.isAtLeast(fake.resumedFrom.length, 6)
    assert.isTrue(fake.resumedFrom.slice(1).every((cursor) => cursor !== undefined), "every reconnection resumed")
  })

  it("after a reset (the registry restarted with other routes), keeps routing with its table, then ends equal", async () => {
    const fake = await registry()
    const kept = route("GET", "/kept")
    const gone = route("GET", "/gone")
    const altered = route("GET", "/altered")
    fake.put(kept)
    fake.put(gone)
    fake.put(altered)
    const { ring, table } = await follower(fake.origin)
    const keptRoute = RouteTable.get(table, kept.id)
    const start = cursorOf(ring)
    // What the registry holds after its restart: no history of how it got there.
    fake.routes.delete(gone.id)
    fake.routes.set(altered.id, changed(altered, { handler: "other" as never }))
    const added = route("GET", "/added")
    fake.routes.set(added.id, added)
    fake.holdReady()
    fake.restart()
    await Effect.runPromise(eventually("the follower did not reconnect", () => fake.open() === 1))
    await new Promise((resolve) => setTimeout(resolve, 100))
    // The snapshot is in, its ready held back: the table still routes as before.
    assert.strictEqual(RouteTable.lookup(table, "GET", "/gone")._tag, "Found")
    assert.strictEqual(RouteTable.lookup(table, "GET", "/added")._tag, "NotFound")
    fake.speak()
    await converged(fake, table)
    assert.strictEqual(RouteTable.get(table, kept.id), keptRoute, "an unchanged route is left as it is")
    // Another store's snapshot: the relay's ring begins again with it, so its own followers are sent a reset.
    assert.strictEqual(ring.since(start)._tag, "Reset")
  })

  // On the TestClock: the staleness is the clock's, so it is exact, and the follower's retries wait for the test.
  it.scoped("through an outage keeps routing while its staleness grows, then recovers by itself", () =>
    Effect.gen(function*() {
      const fake = yield* Effect.promise(() => registry())
      seed(fake, 5)
      const { status, table } = yield* followUnderTestClock(fake.origin, TOKEN, { retryMax: 50 })
      fake.refuse(503)
      fake.cutAll()
      yield* eventually("still reachable", () => !status().reachable)
      yield* TestClock.adjust(Duration.millis(300))
      yield* eventually("no retry", Effect.map(pendingWaits, (waits) => waits.some((wait) => wait <= 50)))
      const away = status()
      assert.isAtLeast(away.stalenessMillis, 250)
      assert.strictEqual(away.stalenessMillis, 300, "the staleness is the time since the last event")
      assert.include(away.error, "503")
      assert.strictEqual(RouteTable.lookup(table, "GET", "/seed/3")._tag, "Found")
      fake.put(route("GET", "/while-away"))
      // Between two tries (none in flight: the one woken last was refused), the registry comes back; the next try
      // waits for the clock.
      fake.refuse(undefined)
      yield* endWait(50)
      yield* Effect.promise(() => converged(fake, table))
      yield* eventually(() => JSON.stringify(status()), () => status().reachable && status().stalenessMillis < 200)
      assert.strictEqual(status().stalenessMillis, 0, "confirmed current at the clock's instant")
    }))

  it("takes a stream that falls silent (no heartbeat) for dead and connects again", async () => {
    const fake = await registry({ heartbeatMillis: 50 })
    const { table } = await follower(fake.origin, { idleTimeout: 300 })
    fake.silence()
    await new Promise((resolve) => setTimeout(resolve, 150))
    assert.strictEqual(fake.resumedFrom.length, 1, "heartbeats kept the stream")
    fake.put(route("GET", "/after-silence"))
    await Effect.runPromise(eventually("no new connection", () => fake.resumedFrom.length >= 2, 2_000))
    fake.speak()
    await converged(fake, table)
  })

  // "At once": on the TestClock, which never moves here, the build ends without waiting for any retry.
  it.effect("fails at start when the registry refuses the token, at once, naming the refusal and never the token", () =>
    Effect.gen(function*() {
      const fake = yield* Effect.promise(() => registry())
      const build = (token: string) =>
        Effect.gen(function*() {
          // The registry's silence is waited for on the same clock: longer than startTimeout's 30 s here.
          const building = yield* Effect.fork(
            Layer.build(RouteFollower.layer({ url: fake.origin, token: Redacted.make(token), idleTimeout: 40_000 }))
              .pipe(Effect.scoped)
          )
          // Until it ends, or waits for a retry (any wait shorter than startTimeout's 30 s).
          yield* eventually(
            "neither failed nor retried",
            Effect.zipWith(
              Fiber.poll(building),
              pendingWaits,
              (done, waits) => done._tag === "Some" || waits.some((wait) => wait < 30_000)
            )
          )
          const done = yield* Fiber.poll(building)
          assert.isTrue(Option.isSome(done), `it waits to retry: ${(yield* pendingWaits).join(", ")} ms`)
          assert.strictEqual(yield* Clock.currentTimeMillis, 0, "no time passed")
          return Option.getOrThrow(done)
        })
      const exit = yield* build("wrong-token")
      assert.isTrue(Exit.isFailure(exit))
      const error = Exit.isFailure(exit) ? String(exit.cause) : ""
      assert.include(error, "FollowFailed")
      assert.include(error, "401 invalid_token")
      assert.notInclude(error, "wrong-token")
      fake.refuse(403)
      const forbidden = yield* build(TOKEN)
      assert.include(Exit.isFailure(forbidden) ? String(forbidden.cause) : "", "403 insufficient_scope")
    }))

  it("at start retries a registry that is down, until it answers", async () => {
    const fake = await registry()
    fake.refuse(503)
    setTimeout(() => fake.refuse(undefined), 300)
    const { table } = await follower(fake.origin)
    assert.strictEqual(RouteTable.size(table), 0)
  })

  // On the TestClock, moved from one wait to the next: every retry is a real connection refused.
  it.effect("at start retries a registry that is down until startTimeout passes, then fails naming the last error", () =>
    Effect.gen(function*() {
      const closed = yield* Effect.promise(() => registry())
      yield* Effect.promise(() => closed.close())
      const building = yield* Effect.fork(
        Layer.build(
          RouteFollower.layer({
            url: closed.origin,
            token: Redacted.make(TOKEN),
            startTimeout: 500,
            retryInitial: 10,
            retryMax: 50
          })
        ).pipe(Effect.scoped)
      )
      // Each step waits until the build ended, or waits for a retry (at most retryMax) or for startTimeout's end.
      let tries = 0
      for (;;) {
        yield* eventually(
          "neither failed nor waits",
          Effect.zipWith(
            Fiber.poll(building),
            pendingWaits,
            (done, waits) => Option.isSome(done) || waits.some((wait) => wait <= 50)
          )
        )
        if (Option.isSome(yield* Fiber.poll(building))) break
        tries++
        yield* endWait(50)
      }
      const exit = yield* Fiber.join(building).pipe(Effect.exit)
      assert.isAtLeast(yield* Clock.currentTimeMillis, 450)
      assert.closeTo(yield* Clock.currentTimeMillis, 500, 0.001, "it failed at startTimeout")
      assert.isAtLeast(tries, 10, "retried meanwhile (waits of at most 50 ms)")
      assert.include(Exit.isFailure(exit) ? String(exit.cause) : "", "no routes within 500ms")
      assert.include(Exit.isFailure(exit) ? String(exit.cause) : "", "ECONNREFUSED")
    }))

  it("refuses options out of range, and a URL that names /v1/routing", async () => {
    const invalid = async (options: Partial<RouteFollower.Options>) => {
      const exit = await Effect.runPromiseExit(
        Layer.build(RouteFollower.layer({ url: "http://127.0.0.1:1", token: Redacted.make(TOKEN), ...options }))
          .pipe(Effect.scoped)
      )
      return Exit.isFailure(exit) ? String(exit.cause) : "built"
    }
    assert.include(await invalid({ url: "ftp://host" }), "url must be an http:// or https:// URL")
    assert.include(await invalid({ url: "http://host/v1/routing" }), "without /v1/routing")
    assert.include(await invalid({ retryInitial: 0 }), "retryInitial must be a whole number of milliseconds")
    assert.include(await invalid({ retryInitial: 500, retryMax: 100 }), "retryMax must be")
    assert.include(await invalid({ maxEventBytes: 0 }), "maxEventBytes")
  })
})

describe("reconnecting: exponential backoff with full jitter", () => {
  // The waits of the follower's schedule after 0, 1, 2, ... failures in a row, each drawn with `random`.
  const waits = (count: number, random: number, initialMillis = 100, maxMillis = 30_000) =>
    Schedule.run(
      Schedule.delays(
        Follower.backoff({ retryInitialMillis: initialMillis, retryMaxMillis: maxMillis })
      ),
      0,
      Array.from({ length: count }, () => undefined)
    ).pipe(
      Effect.map((delays) => Chunk.toReadonlyArray(delays).map(Duration.toMillis)),
      Effect.withRandom(Random.fixed([random]))
    )

  it.effect("draws each wait uniformly below a bound that doubles from retryInitial up to retryMax", () =>
    Effect.gen(function*() {
      const top = yield* waits(1_001, 1)
      assert.strictEqual(top[0], 100)
      assert.strictEqual(top[3], 800)
      assert.strictEqual((yield* waits(4, 0.5))[3], 400)
      assert.strictEqual(top[20], 30_000)
      assert.strictEqual((yield* waits(1_001, 0.25))[1_000], 7_500)
      assert.strictEqual((yield* waits(6, 0))[5], 0)
    }))

  // On the TestClock: each wait is read as the follower begins it, then the clock is moved past it, for 2 s of the
  // clock; every try is a real request the registry refuses.
  it.scoped("against a registry that keeps failing, waits longer and longer, each wait drawn anew", () =>
    Effect.gen(function*() {
      const fake = yield* Effect.promise(() => registry())
      yield* followUnderTestClock(fake.origin, TOKEN, { retryInitial: 5, retryMax: 160 })
      fake.refuse(503)
      fake.cutAll()
      const from = fake.requests.length
      // The clock's time of each try after the cut.
      const times: Array<number> = []
      const record = Effect.map(Clock.currentTimeMillis, (now) => {
        while (from + times.length < fake.requests.length) times.push(now)
      })
      while ((yield* Clock.currentTimeMillis) < 2_000) {
        yield* eventually(
          "a wait of at most 160 ms",
          Effect.map(pendingWaits, (waits) => waits.some((wait) => wait <= 160))
        )
        yield* record
        yield* endWait(160)
      }
      const gaps = times.slice(1).map((time, i) => time - times[i]!)
      // Mean waits 2.5, 5, 10, 20, 40, then 80 ms: about 25 tries in 2 s; a tight loop would make hundreds.
      assert.isAtLeast(times.length, 8, `${times.length} tries`)
      assert.isAtMost(times.length, 80, `${times.length} tries`)
      assert.isTrue(gaps.every((gap) => gap <= 160), `a wait past retryMax: ${gaps.join(", ")}`)
      assert.isTrue(
        // The gap after the i-th try is the (i + 1)-th wait: drawn below 5 ms × 2^(i + 1), or retryMax.
        gaps.every((gap, i) => gap <= Math.min(160, 5 * 2 ** (i + 1))),
        `a wait past its doubling bound: ${gaps.join(", ")}`
      )
      const late = gaps.slice(6)
      const mean = late.reduce((sum, gap) => sum + gap, 0) / late.length
      const spread = Math.sqrt(late.reduce((sum, gap) => sum + (gap - mean) ** 2, 0) / late.length)
      assert.isAbove(spread, 10, `the waits do not vary: ${late.join(", ")}`)
    }))
})

describe("a follower's routing API", () => {
  it("serves GET, the list and its filters, and match from the table, and answers writes 405 before authenticating", async () => {
    const fake = await registry()
    const routes = [route("GET", "/users/:id", "show", ["auth"]), route("POST", "/users", "create"), route("GET", "/x")]
    for (const r of routes) fake.put(r)
    const followed = await follow(
      fake.origin,
      TOKEN,
      {},
      Authenticator.layerStaticTokens([{ token: Redacted.make("t"), scopes: ["routes:read", "routes:write"] }])
    )
    onTestFinished(() => followed.close())
    const listener = await followed.runtime.runPromise(AdminListener.make())
    const server = Http.createServer((req, res) => listener(req, res, () => res.writeHead(404).end()))
    const origin = await listen(server)
    onTestFinished(() => closeServer(server))
    const auth = { authorization: "Bearer t" }
    const one = await fetch(`${origin}/v1/routing/${routes[0]!.id}`, { headers: auth })
    assert.strictEqual(one.status, 200)
    assert.strictEqual(await one.text(), Route.toJson(routes[0]!))
    assert.isNotNull(one.headers.get("etag"))
    const page = await fetch(`${origin}/v1/routing?limit=2`, { headers: auth })
    const body = await page.json()
    assert.deepStrictEqual(body.items.map((r: { id: string }) => r.id), routes.slice(0, 2).map((r) => r.id))
    assert.isString(body.nextCursor)
    const filtered = await (await fetch(`${origin}/v1/routing?middleware=auth`, { headers: auth })).json()
    assert.deepStrictEqual(filtered.items.map((r: { id: string }) => r.id), [routes[0]!.id])
    const searched = await (await fetch(`${origin}/v1/routing?q=sers`, { headers: auth })).json()
    assert.deepStrictEqual(searched.items.map((r: { id: string }) => r.id), routes.slice(0, 2).map((r) => r.id))
    // Which route serves a request, as the follower's own table decides it.
    const matched = await (await fetch(`${origin}/v1/routing/match?method=HEAD&path=/users/42`, { headers: auth }))
      .json()
    assert.deepStrictEqual(matched, {
      outcome: "route",
      route: JSON.parse(Route.toJson(routes[0]!)),
      params: { id: "42" },
      allow: ["GET", "HEAD"],
      candidates: []
    })
    const refusedMatch = await fetch(`${origin}/v1/routing/match?method=GET&path=/x`, { method: "POST", headers: auth })
    assert.strictEqual(refusedMatch.status, 405)
    assert.strictEqual(refusedMatch.headers.get("allow"), "GET")
    for (
      const [method, path] of [
        ["POST", "/v1/routing"],
        ["PATCH", `/v1/routing/${routes[0]!.id}`],
        ["DELETE", `/v1/routing/${routes[0]!.id}`],
        ["PUT", "/v1/routing"]
      ] as const
    ) {
      for (const headers of [auth, {}]) {
        const refused = await fetch(`${origin}${path}`, {
          method,
          headers: { ...headers, "content-type": "application/json" },
          ...(method === "DELETE" ? {} : { body: "{}" })
        })
        assert.strictEqual(refused.status, 405, `${method} ${path}`)
        assert.strictEqual(refused.headers.get("allow"), "GET")
        const problem = await refused.json()
        assert.strictEqual(problem.code, "method_not_allowed")
        assert.include(problem.detail, "follows another registry")
      }
    }
    assert.strictEqual((await fetch(`${origin}/v1/routing/${routes[0]!.id}`)).status, 401)
  })

  it("the store itself refuses writes with ReadOnlyStore", async () => {
    const fake = await registry()
    const { store } = await follower(fake.origin)
    const exit = await Effect.runPromiseExit(
      store.create({ method: "GET", path: "/a", middleware: [], handler: "h" } as never)
    )
    assert.isTrue(Exit.isFailure(exit))
    assert.include(String(Exit.isFailure(exit) ? exit.cause : ""), "ReadOnlyStore")
  })
})

describe("a relay", () => {
  it("passes on what it applies: registry → follower → follower of the follower converge", async () => {
    const fake = await registry()
    seed(fake, 20)
    const first = await follower(fake.origin)
    const relay = await registry({ source: { ring: first.ring, routes: first.table } })
    const second = await follower(relay.origin)
    assert.deepStrictEqual(differences(fake.routes.values(), second.table), [])
    const live = [...fake.routes.values()]
    for (let i = 0; i < 30; i++) {
      const pick = live[i % live.length]!
      if (i % 3 === 0) fake.put(route("GET", `/relay/${i}`))
      else if (i % 3 === 1) fake.put(changed(pick, { handler: `h${i}` as never }))
      else fake.remove(pick.id)
      if (i === 15) relay.cutNextEventMidway()
    }
    await converged(fake, first.table)
    await converged(fake, second.table)
  })
})
