/**
 * Followers converge on a real registry (docs/scaling-out.md, "A fleet of followers"): the registry's routing API (`RouteTable.layerWith` over the
 * memory store, `AdminListener`) takes a few hundred random creates, updates and deletes while it is restarted over the
 * same store (its cursors stay good: no reset), streams are cut in the middle of an event, followers are kept away past
 * the history's small capacity (the registry reads the store's log for them; a relay, which keeps no log, reads the
 * registry's through a catch-up stream), and a relay passes the changes on. At the end every follower's table
 * equals the registry's, compared path by path (method and path → the route's JSON).
 */
import { assert, describe, it, onTestFinished } from "@effect/vitest"
import { Context, Effect, Layer, ManagedRuntime, Redacted } from "effect"
import * as Http from "node:http"
import type { AddressInfo } from "node:net"
import * as AdminListener from "route-registry/AdminListener"
import * as Authenticator from "route-registry/Authenticator"
import type * as Route from "route-registry/Route"
import * as RouteRepository from "route-registry/RouteRepository"
import * as RouteTable from "route-registry/RouteTable"
import * as CuttingProxy from "./utils/cuttingProxy.js"
import { differences, follow, type Follower } from "./utils/followers.js"
import { eventually } from "./utils/waiting.js"

const TOKEN = "reader"
const CAPACITY = 16
const HEARTBEAT_MILLIS = 200

const tokens = Authenticator.layerStaticTokens([{ token: Redacted.make(TOKEN), scopes: ["routes:read"] }])

// The memory store with its change log (which a registry resumes its followers from) and the rest it offers.
type Store = Context.Context<RouteRepository.RouteRepository | RouteRepository.MemoryCapability>

// Serves `listener` on `port` (0: a free one).
const serve = async (listener: AdminListener.Listener, port = 0) => {
  const server = Http.createServer((req, res) => listener(req, res, () => res.writeHead(404).end()))
  await new Promise<void>((resolve) => server.listen(port, "127.0.0.1", resolve))
  return {
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      })
  }
}

/** A registry process over `stored` (which outlives it, as a database does): its table, history and routing API. */
const startRegistry = async (stored: Store, port = 0) => {
  const runtime = ManagedRuntime.make(
    RouteTable.layerWith({ replayCapacity: CAPACITY }).pipe(
      Layer.provideMerge(Layer.merge(Layer.succeedContext(stored), tokens))
    )
  )
  const [listener, store] = await runtime.runPromise(
    Effect.all([AdminListener.make({ changesHeartbeatMillis: HEARTBEAT_MILLIS }), RouteRepository.RouteRepository])
  )
  const server = await serve(listener, port)
  return { port: server.port, store, close: () => server.close().then(() => runtime.dispose()) }
}

/** A relay: a follower whose own routing API serves its change stream onward. */
const startRelay = async (url: string) => {
  const followed = await follow(url, TOKEN, { replayCapacity: CAPACITY, idleTimeout: 2_000 }, tokens)
  const listener = await followed.runtime.runPromise(AdminListener.make({ changesHeartbeatMillis: HEARTBEAT_MILLIS }))
  const server = await serve(listener)
  return { followed, origin: `http://127.0.0.1:${server.port}`, close: () => server.close().then(followed.close) }
}

// A small deterministic generator (mulberry32), so that a failing run can be repeated.
const random = (seed: number) => () => {
  seed = (seed + 0x6d2b79f5) | 0
  let t = Math.imul(seed ^ (seed >>> 15), 1 | seed)
  t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296
}

const METHODS = ["GET", "POST", "PUT"] as const

const pause = (millis: number) => new Promise((resolve) => setTimeout(resolve, millis))

describe("followers converge on a registry that restarts, prunes its history and has its streams cut", () => {
  it("registry → (direct, through a relay) followers: every table equal to the registry's, path by path", async () => {
    const stored = await Effect.runPromise(RouteRepository.makeMemoryContext())
    let registry = await startRegistry(stored)
    onTestFinished(() => registry.close())
    const toRegistry = await CuttingProxy.start(registry.port)
    onTestFinished(() => toRegistry.close())
    const direct = await follow(toRegistry.origin, TOKEN, { idleTimeout: 2_000 })
    onTestFinished(() => direct.close())
    const relay = await startRelay(toRegistry.origin)
    onTestFinished(() => relay.close())
    const toRelay = await CuttingProxy.start(Number(new URL(relay.origin).port))
    onTestFinished(() => toRelay.close())
    const behindRelay = await follow(toRelay.origin, TOKEN, { idleTimeout: 2_000 })
    onTestFinished(() => behindRelay.close())
    const followers: ReadonlyArray<[string, Follower]> = [
      ["direct", direct],
      ["relay", relay.followed],
      ["behind the relay", behindRelay]
    ]

    const next = random(20)
    const ids: Array<string> = []
    const figures = { changes: 0, refused: 0, restarts: 0, cuts: 0, prunedAway: 0 }
    const change = async () => {
      const store = registry.store
      const roll = next()
      const method = METHODS[Math.floor(next() * METHODS.length)]!
      const path = `/r/${Math.floor(next() * 60)}/${next() < 0.5 ? ":id" : "x"}`
      const handler = `h${Math.floor(next() * 5)}`
      const id = ids[Math.floor(next() * ids.length)]
      const attempt = roll < 0.5 || id === undefined
        ? Effect.map(
          store.create({ method, path, middleware: [], handler } as unknown as Route.CreateRoute),
          (route) => void ids.push(route.id)
        )
        : roll < 0.8
        ? Effect.asVoid(store.update(id, { handler, ...(next() < 0.3 ? { path } : {}) } as Route.RoutePatch))
        : Effect.map(store.remove(id), () => void ids.splice(ids.indexOf(id), 1))
      const exit = await Effect.runPromiseExit(attempt)
      if (exit._tag === "Success") figures.changes++
      else figures.refused++
    }

    for (let i = 0; i < 400; i++) {
      await change()
      if (i % 50 === 25) {
        toRegistry.cutNextEventMidway()
        toRelay.cutNextEventMidway()
        figures.cuts += 2
      }
      if (i === 120 || i === 300) {
        // A restart: a new process on the same port and the same stored routes, with a history of its own.
        await registry.close()
        registry = await startRegistry(stored, registry.port)
        figures.restarts++
      }
      if (i === 180) toRegistry.down() // away for more changes than the history keeps
      if (i === 180 + CAPACITY * 3) toRegistry.up()
      if (i === 240) toRelay.down()
      if (i === 240 + CAPACITY * 3) toRelay.up()
      if (i === 180 || i === 240) figures.prunedAway++
      if (i % 10 === 0) await pause(5)
    }

    const expected = async () => (await Effect.runPromise(registry.store.list({ limit: 1000 }))).items
    for (const [name, followed] of followers) {
      const routes = await expected()
      await Effect.runPromise(
        eventually(
          () => `${name}: ${differences(routes, followed.table).length} differences`,
          () => differences(routes, followed.table).length === 0,
          15_000
        )
      )
    }
    const routes = await expected()
    const report = {
      ...figures,
      followers: followers.length,
      routesAtEnd: routes.length,
      resets: toRegistry.resets() + toRelay.resets(),
      registryResets: toRegistry.resets(),
      differences: followers.map(([, followed]) => differences(routes, followed.table).length)
    }
    console.log(`convergence: ${JSON.stringify(report)}`)
    assert.deepStrictEqual(report.differences, [0, 0, 0])
    assert.isAtLeast(figures.changes, 200)
    // Restarts over the same store, and a follower away past the registry's history, cost no reset (the store's log
    // has the changes); nor does the follower kept away from the relay past the relay's history: the relay catches it
    // up from the registry's log.
    assert.strictEqual(report.registryResets, 0)
    assert.strictEqual(toRelay.resets(), 0)
    // Current again once each stream stayed healthy (a follower that saw a cut counts as current only then, and one
    // behind the relay once the relay's heartbeats say it is current).
    for (const [name, followed] of followers) {
      await Effect.runPromise(
        eventually(
          () => `${name}: not current (${JSON.stringify(followed.status())})`,
          () => followed.status().reachable,
          30_000
        )
      )
    }
  })
})
