/**
 * The fleet over real connections (docs/scaling-out.md, "The fleet"): followers name themselves, report the revision
 * they applied, and the registry lists them; a wait completes when they apply a revision, or ends incomplete; a relay
 * passes its followers on (`via`); a follower that leaves is listed as gone. The bounds of one report and its rate are
 * checked on the fleet itself, on a clock the test moves.
 */
import { afterEach, assert, describe, it } from "@effect/vitest"
import type { Clock } from "effect"
import { Layer } from "effect"
import * as Http from "node:http"
import * as AdminListener from "route-registry/AdminListener"
import * as RouteTable from "route-registry/RouteTable"
import * as Fleet from "../src/internal/follow/fleet.js"
import * as History from "../src/internal/table/history.js"
import { closeServer, listen, nodeListener, type Served } from "./utils/adapters.js"
import { follow, type Follower } from "./utils/followers.js"
import { ADMIN, READER, type Store, tokens, WRITER } from "./utils/httpContract.js"
import { stores } from "./utils/stores.js"

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
  const followed = await follow(origin, READER, { name }, tokens)
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
  let last: unknown
  const deadline = Date.now() + 30_000
  while (Date.now() < deadline) {
    const body = await fleet(origin)
    last = body
    if (check(body.items)) return body
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  return assert.fail(`${what}; the fleet: ${JSON.stringify(last)}`)
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

describe("reports on an open stream", () => {
  it("taken from the token that opened the stream, refused from another (404 stream_not_found)", async () => {
    const served = await registry(stores[0]![1])
    const controller = new AbortController()
    closing.push(async () => controller.abort())
    const stream = await fetch(`${served.origin}/v1/routing/changes`, {
      headers: { ...auth(READER), "follower-name": "hand-1" },
      signal: controller.signal
    })
    const id = stream.headers.get("follower-stream")
    assert.match(id!, /^[0-9a-f]{32}$/)
    const send = (token: string) =>
      fetch(`${served.origin}/v1/routing/followers`, {
        method: "POST",
        headers: { ...auth(token), "content-type": "application/json" },
        body: JSON.stringify({ stream: id, appliedRevision: 7, followers: [] })
      })
    assert.strictEqual((await send(ADMIN)).status, 404)
    assert.strictEqual((await send(READER)).status, 204)
    const listed = await fleet(served.origin)
    assert.deepStrictEqual(listed.items.map((item) => [item.name, item.appliedRevision]), [["hand-1", 7]])
    controller.abort()
    await until(served.origin, (items) => items[0]?.connected === false, "hand-1 leaves with its stream")
  })
})

describe("the fleet's bounds", () => {
  // A clock the test sets: the fleet reads nothing else.
  let now = 0
  const clock = { unsafeCurrentTimeMillis: () => now } as Clock.Clock
  const member = (stream: string, name: string) => ({ stream, principal: "p", name, address: "a" })

  it("a stream may report REPORTS_PER_SECOND times in a burst, then once per refill", () => {
    const fleet = Fleet.of(History.make(), clock)
    Fleet.join(fleet, member("s", "n"))
    const report = { stream: "s", appliedRevision: 1, followers: [] }
    for (let i = 0; i < Fleet.REPORTS_PER_SECOND; i++) assert.isUndefined(Fleet.report(fleet, "p", report))
    const refused = Fleet.report(fleet, "p", report)
    assert.strictEqual(refused?._tag, "TooFrequent")
    now += 1000 / Fleet.REPORTS_PER_SECOND
    assert.isUndefined(Fleet.report(fleet, "p", report))
  })

  it("followers that left stay listed for LEFT_MILLIS, at most MAX_LEFT of them", () => {
    const fleet = Fleet.of(History.make(), clock)
    for (let i = 0; i < Fleet.MAX_LEFT + 5; i++) {
      Fleet.join(fleet, member(`s${i}`, `n${i}`))
      Fleet.leave(fleet, `s${i}`)
    }
    assert.strictEqual(Fleet.entries(fleet).length, Fleet.MAX_LEFT)
    assert.isFalse(Fleet.entries(fleet).some((entry) => entry.name === "n0"))
    now += Fleet.LEFT_MILLIS
    assert.deepStrictEqual(Fleet.entries(fleet), [])
  })

  it("a follower is behind until it reports, and relayed followers count", () => {
    const fleet = Fleet.of(History.make(), clock)
    assert.isTrue(Fleet.holds(fleet, 5))
    Fleet.join(fleet, member("r", "relay"))
    assert.isFalse(Fleet.holds(fleet, 0))
    const leaf = { ...Fleet.entries(fleet)[0]!, name: "leaf", appliedRevision: 3 }
    Fleet.report(fleet, "p", { stream: "r", appliedRevision: 5, followers: [leaf] })
    assert.isFalse(Fleet.holds(fleet, 5))
    assert.isTrue(Fleet.holds(fleet, 3))
    assert.deepStrictEqual(Fleet.entries(fleet).map((entry) => [entry.name, entry.via]), [["leaf", "relay"], [
      "relay",
      null
    ]])
  })
})
