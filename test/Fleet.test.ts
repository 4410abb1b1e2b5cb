/**
 * The fleet over real connections (docs/scaling-out.md, "The fleet"): followers name themselves, report the revision
 * they applied, and the registry lists them; a wait completes when they apply a revision, or ends incomplete; a relay
 * passes its followers on (`via`); a follower that leaves is listed as gone. The bounds of one report and its rate are
 * checked on the fleet itself, on a clock the test moves.
 */
import { afterEach, assert, describe, it } from "@effect/vitest"
import type { Clock } from "effect"
import { Context, Effect, Layer, Logger, ManagedRuntime, Redacted } from "effect"
import * as Http from "node:http"
import * as AdminListener from "route-registry/AdminListener"
import * as Authenticator from "route-registry/Authenticator"
import * as RouteFollower from "route-registry/RouteFollower"
import * as RouteTable from "route-registry/RouteTable"
import * as Fleet from "../src/internal/follow/fleet.js"
import * as FleetPage from "../src/internal/follow/fleetPage.js"
import * as ReplayRing from "../src/internal/table/replayRing.js"
import { closeServer, listen, nodeListener, type Served } from "./utils/adapters.js"
import { follow, type Follower } from "./utils/followers.js"
import { ADMIN, READER, REPORTER, type Store, tokenList, tokens, WRITER } from "./utils/httpContract.js"
import { stores } from "./utils/stores.js"
import { eventually } from "./utils/waiting.js"

const auth = (token: string) => ({ authorization: `Bearer ${token}` })

const closing: Array<() => Promise<void>> = []
afterEach(async () => {
  for (const close of closing.splice(0).reverse()) await close()
})

const registry = async (store: Store): Promise<Served> => {
  const served = await nodeListener.start(Layer.merge(RouteTable.layer.pipe(Layer.provideMerge(store)), tokens))
  closing.push(served.close)
  return served
}

const follower = async (origin: string, name: string): Promise<Follower> => {
  const followed = await follow(origin, REPORTER, { name }, tokens)
  closing.push(followed.close)
  return followed
}

// A follower serving its own routing API: a relay others follow.
const relay = async (origin: string, name: string) => {
  const followed = await follower(origin, name)
  const listener = await followed.runtime.runPromise(AdminListener.make())
  const server = Http.createServer((req, res) => listener(req, res, () => res.writeHead(404).end()))
  const relayOrigin = await listen(server)
  closing.push(() => closeServer(server))
  return { ...followed, origin: relayOrigin }
}

const fleet = async (origin: string, query = "") => {
  const response = await fetch(`${origin}/v1/routing/followers${query}`, { headers: auth(READER) })
  assert.strictEqual(response.status, 200)
  return response.json() as Promise<{ revision: number; items: Array<Record<string, any>>; complete?: boolean }>
}

const create = async (origin: string, path: string) => {
  const response = await fetch(`${origin}/v1/routing`, {
    method: "POST",
    headers: { ...auth(WRITER), "content-type": "application/json" },
    body: JSON.stringify({ method: "GET", path, handler: "h" })
  })
  assert.strictEqual(response.status, 201, await response.text())
}

// Polls the list until `check` holds of it (the reports come on their own schedule).
const until = async (origin: string, check: (items: Array<Record<string, any>>) => boolean, what: string) => {
  let last: Awaited<ReturnType<typeof fleet>> | undefined
  await Effect.runPromise(eventually(() => `${what}; the fleet: ${JSON.stringify(last)}`, async () => {
    last = await fleet(origin)
    return check(last.items)
  }, 30_000))
  return last!
}

for (const [name, store] of stores) {
  describe(name, () => {
    it("a named follower is listed with where it stands; a wait completes when it applies the revision", async () => {
      const served = await registry(store)
      await create(served.origin, "/before")
      await follower(served.origin, "edge-1")
      const listed = await until(served.origin, (items) => items[0]?.appliedRevision !== null, "edge-1 reports")
      assert.deepStrictEqual(Object.keys(listed), ["revision", "items"])
      const [edge] = listed.items
      assert.deepStrictEqual(Object.keys(edge!), [
        "name",
        "address",
        "via",
        "connectedAt",
        "appliedRevision",
        "reportedAt",
        "connected",
        "source"
      ])
      assert.strictEqual(edge!.name, "edge-1")
      // (v5) Its report says where its table came from.
      assert.strictEqual((edge as { source?: unknown }).source, "registry")
      assert.match(edge!.address, /^127\.0\.0\.1:\d+$/)
      assert.isNull(edge!.via)
      assert.isTrue(edge!.connected)
      assert.strictEqual(edge!.appliedRevision, listed.revision)
      assert.isAtLeast(Date.parse(edge!.reportedAt), Date.parse(edge!.connectedAt))
      // Asked before the change exists, the wait is answered once the follower applied it.
      const next = listed.revision + 1
      const waiting = fleet(served.origin, `?revision=${next}&wait=60`)
      await create(served.origin, "/after")
      const waited = await waiting
      assert.isTrue(waited.complete)
      assert.isAtLeast(waited.items[0]!.appliedRevision, next)
    })

    it("a wait for a revision no follower holds ends when the wait is over, complete: false, naming who is behind", async () => {
      const served = await registry(store)
      await follower(served.origin, "edge-2")
      const listed = await until(served.origin, (items) => items[0]?.appliedRevision !== null, "edge-2 reports")
      const waited = await fleet(served.origin, `?revision=${listed.revision + 1000}&wait=1`)
      assert.isFalse(waited.complete)
      assert.deepStrictEqual(waited.items.map((item) => [item.name, item.connected]), [["edge-2", true]])
      assert.isBelow(waited.items[0]!.appliedRevision, listed.revision + 1000)
    })
  })
}

describe("a relay tree: registry ← relay ← follower", () => {
  it("the registry lists the relay and, via it, the relay's follower; the relay lists its own", async () => {
    const served = await registry(stores[0]![1])
    const middle = await relay(served.origin, "relay-1")
    const leaf = await follower(middle.origin, "leaf-1")
    const tree = await until(
      served.origin,
      (items) => items.length === 2 && items.every((item) => item.appliedRevision !== null),
      "the registry sees both"
    )
    assert.deepStrictEqual(tree.items.map((item) => [item.name, item.via, item.connected]), [
      ["leaf-1", "relay-1", true],
      ["relay-1", null, true]
    ])
    const own = await fleet(middle.origin)
    assert.deepStrictEqual(own.items.map((item) => [item.name, item.via]), [["leaf-1", null]])
    // The leaf leaves: the relay says so upward, and both list it as gone.
    await leaf.close()
    await until(middle.origin, (items) => items[0]?.connected === false, "the relay sees leaf-1 leave")
    const gone = await until(
      served.origin,
      (items) => items.find((item) => item.name === "leaf-1")?.connected === false,
      "the registry sees leaf-1 leave"
    )
    assert.deepStrictEqual(gone.items.map((item) => [item.name, item.connected]), [["leaf-1", false], [
      "relay-1",
      true
    ]])
  })
})

describe("who may report, and how much (v5)", () => {
  // A second principal that may report: its reports never land on another's stream.
  const OTHER = "other-report-token"
  const withOther = Authenticator.layerStaticTokens([...tokenList, {
    token: Redacted.make(OTHER),
    scopes: ["routes:read", "fleet:report"],
    id: "other"
  }])
  const served = async () => {
    const started = await nodeListener.start(
      Layer.merge(RouteTable.layer.pipe(Layer.provideMerge(stores[0]![1])), withOther)
    )
    closing.push(started.close)
    return started
  }
  const open = async (origin: string, token: string, name: string) => {
    const controller = new AbortController()
    closing.push(async () => controller.abort())
    const response = await fetch(`${origin}/v1/routing/changes`, {
      headers: { ...auth(token), "follower-name": name },
      signal: controller.signal
    })
    return { response, stream: response.headers.get("follower-stream"), close: () => controller.abort() }
  }
  const send = (origin: string, token: string, body: unknown) =>
    fetch(`${origin}/v1/routing/followers`, {
      method: "POST",
      headers: { ...auth(token), "content-type": "application/json" },
      body: JSON.stringify(body)
    })

  it("a report is taken from the token that opened the stream with fleet:report, refused from another", async () => {
    const { origin } = await served()
    await create(origin, "/one")
    const opened = await open(origin, REPORTER, "hand-1")
    assert.match(opened.stream!, /^[0-9a-f]{32}$/)
    const body = { stream: opened.stream, appliedRevision: 1, followers: [] }
    assert.strictEqual((await send(origin, OTHER, body)).status, 404)
    const unscoped = await send(origin, ADMIN, body)
    assert.strictEqual(unscoped.status, 403)
    assert.include((await unscoped.json()).detail, "fleet:report")
    assert.strictEqual((await send(origin, REPORTER, body)).status, 204)
    const listed = await fleet(origin)
    assert.deepStrictEqual(listed.items.map((item) => [item.name, item.appliedRevision]), [["hand-1", 1]])
    opened.close()
    await until(origin, (items) => items[0]?.connected === false, "hand-1 leaves with its stream")
  })

  it("a token without fleet:report that names itself follows unlisted: no Follower-Stream, not in the fleet", async () => {
    const { origin } = await served()
    const opened = await open(origin, READER, "quiet-1")
    assert.strictEqual(opened.response.status, 200)
    assert.isNull(opened.stream)
    assert.deepStrictEqual((await fleet(origin)).items, [])
  })

  it("a name already connected is 409 follower_name_taken, whoever asks; free again once it left", async () => {
    const { origin } = await served()
    const first = await open(origin, REPORTER, "edge-9")
    assert.strictEqual(first.response.status, 200)
    for (const token of [REPORTER, OTHER]) {
      const again = await open(origin, token, "edge-9")
      assert.strictEqual(again.response.status, 409)
      assert.strictEqual((await again.response.json()).code, "follower_name_taken")
    }
    first.close()
    await until(origin, (items) => items[0]?.connected === false, "edge-9 leaves")
    assert.strictEqual((await open(origin, OTHER, "edge-9")).response.status, 200)
  })

  it("a revision above any this process issued is 400 invalid_report, relayed ones too, and changes nothing", async () => {
    const { origin } = await served()
    await create(origin, "/one")
    const { revision } = await fleet(origin)
    const opened = await open(origin, REPORTER, "liar-1")
    for (
      const [body, path] of [
        [{ appliedRevision: Number.MAX_SAFE_INTEGER, followers: [] }, "appliedRevision"],
        [
          { appliedRevision: revision, followers: [{ ...leafEntry, appliedRevision: revision + 1 }] },
          "followers[0].appliedRevision"
        ]
      ] as const
    ) {
      const refused = await send(origin, REPORTER, { stream: opened.stream, ...body })
      assert.strictEqual(refused.status, 400)
      const problem = await refused.json()
      assert.strictEqual(problem.code, "invalid_report")
      assert.deepStrictEqual(problem.errors.map((error: { path: string }) => error.path), [path])
    }
    assert.deepStrictEqual((await fleet(origin)).items.map((item) => item.appliedRevision), [null])
    // Held at complete: false by nobody: the liar's revision is not taken, so the wait waits for its real one.
    assert.strictEqual((await send(origin, REPORTER, { stream: opened.stream, appliedRevision: revision })).status, 204)
    assert.isTrue((await fleet(origin, `?revision=${revision}&wait=0`)).complete)
  })

  it("relayed entries count against the principal's bound: past it, 429 too_many_followers, nothing stored", async () => {
    const { origin } = await served()
    const many = (prefix: string) =>
      Array.from(
        { length: Fleet.MAX_ENTRIES },
        (_, i) => ({ ...leafEntry, name: `${prefix}-${i}`, appliedRevision: 0 })
      )
    const a = await open(origin, REPORTER, "relay-a")
    assert.strictEqual(
      (await send(origin, REPORTER, { stream: a.stream, appliedRevision: 0, followers: many("a") })).status,
      204
    )
    const b = await open(origin, REPORTER, "relay-b")
    const refused = await send(origin, REPORTER, { stream: b.stream, appliedRevision: 0, followers: many("b") })
    assert.strictEqual(refused.status, 429)
    assert.strictEqual((await refused.json()).code, "too_many_followers")
    assert.isNotNull(refused.headers.get("retry-after"))
    // Another principal is bounded on its own.
    const c = await open(origin, OTHER, "relay-c")
    assert.strictEqual(
      (await send(origin, OTHER, { stream: c.stream, appliedRevision: 0, followers: many("c") })).status,
      204
    )
    // The fleet answers a page at a time, whatever was reported: the first 1,000 by name, the counts of all.
    const listed = await fleet(origin) as any
    assert.strictEqual(listed.items.length, 1000)
    // relay-b never reported: the one behind.
    assert.deepStrictEqual(listed.counts, { followers: 20_003, connected: 20_003, behind: 1 })
    assert.strictEqual(listed.items[0].name, "a-0")
    const next = await fetch(`${origin}/v1/routing/followers?limit=1000&cursor=${listed.nextCursor}`, {
      headers: auth(READER)
    })
    const second = await next.json()
    assert.strictEqual(second.items.length, 1000)
    assert.isTrue(second.items[0].name > listed.items[999].name, "the next page begins after the first")
    assert.match(next.headers.get("link")!, /^<\/v1\/routing\/followers\?limit=1000&cursor=[\w-]+>; rel="next"$/)
  })
})

describe("a follower the registry does not list", () => {
  // A follower whose warnings the test reads.
  const logging = async (origin: string, token: string, name: string) => {
    const logged: Array<string> = []
    const capture = Logger.replace(Logger.defaultLogger, Logger.make(({ message }) => logged.push(String(message))))
    const runtime = ManagedRuntime.make(
      RouteFollower.layer({ url: origin, token: Redacted.make(token), name, retryInitial: 10, retryMax: 200 }).pipe(
        Layer.provide(capture)
      )
    )
    closing.push(() => runtime.dispose())
    const { context } = await runtime.runtime()
    return { logged, table: Context.get(context, RouteTable.RouteTable) }
  }

  it("without fleet:report, or under a name taken, it follows unlisted and says why once", async () => {
    const served = await registry(stores[0]![1])
    await create(served.origin, "/seen")
    await follower(served.origin, "twin")
    const twin = await logging(served.origin, REPORTER, "twin")
    const plain = await logging(served.origin, READER, "plain")
    for (const { table } of [twin, plain]) assert.strictEqual(RouteTable.lookup(table, "GET", "/seen")._tag, "Found")
    await create(served.origin, "/later")
    await until(served.origin, (items) => items[0]?.appliedRevision !== null, "twin reports")
    assert.deepStrictEqual((await fleet(served.origin)).items.map((item) => item.name), ["twin"])
    assert.deepStrictEqual(twin.logged.filter((line) => line.includes("follower_name_taken")).length, 1)
    assert.deepStrictEqual(plain.logged.filter((line) => line.includes("fleet:report")).length, 1)
  })
})

const leafEntry = {
  name: "leaf-1",
  address: "10.0.0.7:51234",
  via: null,
  connectedAt: "2026-11-26T09:30:12.345Z",
  appliedRevision: 0,
  reportedAt: "2026-11-26T09:30:13.000Z",
  connected: true
}

const page = (fleet: Fleet.Fleet, query: Partial<FleetPage.Query> = {}) =>
  FleetPage.page(fleet, { after: undefined, limit: FleetPage.MAX_LIMIT, behindOnly: false, revision: 0, ...query })

describe("the fleet's bounds", () => {
  // A clock the test sets: the fleet reads nothing else.
  let now = 0
  const clock = { unsafeCurrentTimeMillis: () => now } as Clock.Clock
  const member = (stream: string, name: string) => ({ stream, principal: "p", name, address: "a" })

  it("a stream may report REPORTS_PER_SECOND times in a burst, then once per refill", () => {
    const fleet = Fleet.of(ReplayRing.make(), clock)
    Fleet.join(fleet, member("s", "n"))
    const report = { stream: "s", appliedRevision: 1, followers: [] }
    for (let i = 0; i < Fleet.REPORTS_PER_SECOND; i++) assert.isUndefined(Fleet.report(fleet, "p", report, 1))
    const refused = Fleet.report(fleet, "p", report, 1)
    assert.strictEqual(refused?._tag, "TooFrequent")
    now += 1000 / Fleet.REPORTS_PER_SECOND
    assert.isUndefined(Fleet.report(fleet, "p", report, 1))
  })

  it("followers that left stay listed for LEFT_MILLIS, at most MAX_LEFT of them", () => {
    const fleet = Fleet.of(ReplayRing.make(), clock)
    for (let i = 0; i < Fleet.MAX_LEFT + 5; i++) {
      Fleet.join(fleet, member(`s${i}`, `n${i}`))
      Fleet.leave(fleet, `s${i}`)
    }
    assert.strictEqual(Fleet.entries(fleet).length, Fleet.MAX_LEFT)
    assert.isFalse(Fleet.entries(fleet).some((entry) => entry.name === "n0"))
    now += Fleet.LEFT_MILLIS
    assert.deepStrictEqual(Fleet.entries(fleet), [])
  })

  it("joins and reports past the bounds per principal and per process are refused and change nothing", () => {
    const fleet = Fleet.of(ReplayRing.make(), clock, { perProcess: 4, perPrincipal: 3 })
    const join = (principal: string, name: string) => Fleet.join(fleet, { stream: name, principal, name, address: "a" })
    assert.isTrue(join("p", "a"))
    const leaf = (name: string) => ({ ...Fleet.entries(fleet)[0]!, name, appliedRevision: 0 })
    const relayed = (names: Array<string>) => ({ stream: "a", appliedRevision: 0, followers: names.map(leaf) })
    assert.deepStrictEqual(Fleet.report(fleet, "p", relayed(["x", "y", "z"]), 0), {
      _tag: "TooMany",
      bound: "perPrincipal",
      limit: 3
    })
    assert.strictEqual(Fleet.entries(fleet).length, 1)
    assert.isUndefined(Fleet.report(fleet, "p", relayed(["x", "y"]), 0))
    assert.strictEqual(Fleet.refusesJoin(fleet, "p", "b")?._tag, "TooMany")
    assert.strictEqual(Fleet.refusesJoin(fleet, "q", "a")?._tag, "NameTaken")
    assert.isTrue(join("q", "b"))
    assert.deepStrictEqual(Fleet.refusesJoin(fleet, "r", "c"), { _tag: "TooMany", bound: "perProcess", limit: 4 })
    // A relay that leaves takes its subtree's count with it.
    Fleet.leave(fleet, "a")
    assert.isTrue(join("r", "c"))
    assert.isTrue(join("p", "a"))
  })

  it("a follower is behind until it reports, and relayed followers count", () => {
    const fleet = Fleet.of(ReplayRing.make(), clock)
    assert.isTrue(Fleet.holds(fleet, 5))
    Fleet.join(fleet, member("r", "relay"))
    assert.isFalse(Fleet.holds(fleet, 0))
    const leaf = { ...Fleet.entries(fleet)[0]!, name: "leaf", appliedRevision: 3 }
    Fleet.report(fleet, "p", { stream: "r", appliedRevision: 5, followers: [leaf] }, 5)
    assert.isFalse(Fleet.holds(fleet, 5))
    assert.isTrue(Fleet.holds(fleet, 3))
    assert.deepStrictEqual(page(fleet).items.map((entry) => [entry.name, entry.via]), [["leaf", "relay"], [
      "relay",
      null
    ]])
  })
})
