/**
 * A follower serves the change log of the registry it follows (docs/history.md, "Followers"): `GET
 * /v1/routing/history` and `/{id}/history` answer, at the follower, what the registry's log holds, with the
 * follower's own authentication, query checks and base path in `Link`; restore stays 405; a registry that cannot be
 * reached is 503 `store_unavailable` with `Retry-After`. Against a real registry: the routing API over the memory
 * store, in this process.
 */
import { assert, describe, it, onTestFinished } from "@effect/vitest"
import { Layer, ManagedRuntime, Redacted } from "effect"
import * as Http from "node:http"
import type { AddressInfo } from "node:net"
import * as AdminListener from "route-registry/AdminListener"
import * as Authenticator from "route-registry/Authenticator"
import * as RouteRepository from "route-registry/RouteRepository"
import * as RouteTable from "route-registry/RouteTable"
import { follow } from "./utils/followers.js"

const ADMIN = "admin"
const READER = "reader"
const LOCAL = "local-reader"
const MOUNT = "/admin"

const serve = async (listener: AdminListener.Listener) => {
  // Mounted at MOUNT as Express would mount it: the path cut from `url`, the target kept in `originalUrl`.
  const server = Http.createServer((req, res) => {
    if (req.url?.startsWith(`${MOUNT}/`)) {
      Object.assign(req, { originalUrl: req.url })
      req.url = req.url.slice(MOUNT.length)
    }
    listener(req, res, () => res.writeHead(404).end())
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  onTestFinished(() =>
    new Promise<void>((resolve) => {
      server.closeAllConnections()
      server.close(() => resolve())
    })
  )
  return { origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server }
}

const startRegistry = async () => {
  const tokens = Authenticator.layerStaticTokens([
    { token: Redacted.make(ADMIN), scopes: ["routes:read", "routes:write"], id: "alice" },
    { token: Redacted.make(READER), scopes: ["routes:read"], id: "follower" }
  ])
  const runtime = ManagedRuntime.make(
    RouteTable.layerWith({}).pipe(Layer.provideMerge(Layer.merge(RouteRepository.layerMemory, tokens)))
  )
  onTestFinished(() => runtime.dispose())
  return serve(await runtime.runPromise(AdminListener.make()))
}

const startFollower = async (registry: string) => {
  const local = Authenticator.layerStaticTokens([{ token: Redacted.make(LOCAL), scopes: ["routes:read"] }])
  const followed = await follow(registry, READER, {}, local)
  onTestFinished(() => followed.close())
  return serve(await followed.runtime.runPromise(AdminListener.make()))
}

const call = (origin: string, path: string, token: string, init: RequestInit = {}) =>
  fetch(`${origin}${path}`, {
    ...init,
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json", ...init.headers }
  })

const write = async (origin: string, method: string, path: string, body?: object) => {
  const response = await call(origin, `/v1/routing${path}`, ADMIN, {
    method,
    ...(body === undefined ? {} : { body: JSON.stringify(body) })
  })
  assert.isBelow(response.status, 300, await response.clone().text())
  return response.status === 204 ? undefined : response.json()
}

describe("a follower's change log", () => {
  it("is the registry's: the same pages, filters and cursors, with the follower's own auth and Link", async () => {
    const registry = await startRegistry()
    const kept = await write(registry.origin, "POST", "", { method: "GET", path: "/kept/:id", handler: "v1" })
    await write(registry.origin, "PATCH", `/${kept.id}`, { handler: "v2" })
    const gone = await write(registry.origin, "POST", "", { method: "POST", path: "/gone", handler: "h" })
    await write(registry.origin, "DELETE", `/${gone.id}`)
    const follower = await startFollower(registry.origin)

    for (const query of ["", "?limit=2", "?action=update", "?actor=alice&limit=1", `?routeId=${gone.id}`]) {
      const expected = await call(registry.origin, `/v1/routing/history${query}`, ADMIN)
      const answered = await call(follower.origin, `/v1/routing/history${query}`, LOCAL)
      assert.strictEqual(answered.status, 200, query)
      assert.deepStrictEqual(await answered.json(), await expected.json(), query)
    }

    // The next page's Link names the follower's own path, under its mount; its cursor is the registry's.
    const first = await call(follower.origin, `${MOUNT}/v1/routing/history?limit=3`, LOCAL)
    const firstPage = await first.json()
    assert.lengthOf(firstPage.items, 3)
    const link = first.headers.get("link")!
    assert.match(link, /^<\/admin\/v1\/routing\/history\?limit=3&cursor=[A-Za-z0-9_-]+>; rel="next"$/)
    const next = await call(follower.origin, link.slice(1, link.indexOf(">")), LOCAL)
    const nextPage = await next.json()
    const all = await (await call(registry.origin, "/v1/routing/history", ADMIN)).json()
    assert.deepStrictEqual([...firstPage.items, ...nextPage.items], all.items)
    assert.isNull(nextPage.nextCursor)

    // One route's history, a deleted route's too; 404 only for an id the log never held.
    const ownHistory = await call(follower.origin, `/v1/routing/${gone.id}/history`, LOCAL)
    assert.strictEqual(ownHistory.status, 200)
    assert.deepStrictEqual((await ownHistory.json()).items.map((entry: { action: string }) => entry.action), [
      "delete",
      "create"
    ])
    const unknown = await call(follower.origin, "/v1/routing/019a0000-0000-7000-8000-000000000000/history", LOCAL)
    assert.strictEqual(unknown.status, 404)
    assert.strictEqual((await unknown.json()).code, "route_not_found")
  }, 60_000)

  it("checks the caller and the query itself, and answers restore 405", async () => {
    const registry = await startRegistry()
    const route = await write(registry.origin, "POST", "", { method: "GET", path: "/r", handler: "h" })
    const follower = await startFollower(registry.origin)
    // The follower's read token at the registry is no token at the follower.
    assert.strictEqual((await call(follower.origin, "/v1/routing/history", READER)).status, 401)
    assert.strictEqual((await fetch(`${follower.origin}/v1/routing/history`)).status, 401)
    const bad = await call(follower.origin, "/v1/routing/history?limit=0&colour=red", LOCAL)
    assert.strictEqual(bad.status, 400)
    const problem = await bad.json()
    assert.strictEqual(problem.code, "invalid_query")
    assert.deepStrictEqual(problem.errors.map((error: { path: string }) => error.path), ["limit", "colour"])
    const restore = await call(follower.origin, `/v1/routing/${route.id}/restore`, LOCAL, {
      method: "POST",
      body: JSON.stringify({ revision: 1 })
    })
    assert.strictEqual(restore.status, 405)
  }, 60_000)

  it("is 503 store_unavailable with Retry-After while the registry cannot be reached", async () => {
    const registry = await startRegistry()
    await write(registry.origin, "POST", "", { method: "GET", path: "/r", handler: "h" })
    const follower = await startFollower(registry.origin)
    assert.strictEqual((await call(follower.origin, "/v1/routing/history", LOCAL)).status, 200)
    await new Promise<void>((resolve) => {
      registry.server.closeAllConnections()
      registry.server.close(() => resolve())
    })
    const answer = await call(follower.origin, "/v1/routing/history", LOCAL)
    assert.strictEqual(answer.status, 503)
    assert.strictEqual((await answer.json()).code, "store_unavailable")
    assert.isNotNull(answer.headers.get("retry-after"))
    // The table keeps serving meanwhile.
    assert.strictEqual((await call(follower.origin, "/v1/routing", LOCAL)).status, 200)
  }, 60_000)
})
