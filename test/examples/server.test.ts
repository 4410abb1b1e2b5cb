/**
 * `npm start` (examples/server.ts) as a user runs it: a separate process, configured by its environment.
 */
import { assert, describe, it } from "@effect/vitest"
import * as RoutingApi from "route-registry/RoutingApi"
import { run as runFile, start as startFile } from "../utils/spawned.js"
import * as TestDatabase from "../utils/TestDatabase.js"

const FILE = "examples/server.ts"
const start = (env: Record<string, string> = {}) => startFile(FILE, env)
const failsToStart = async (env: Record<string, string>) => {
  const spawned = runFile(FILE, env)
  return { code: await spawned.exited, output: spawned.output() }
}

const bearer = (token: string) => ({ authorization: `Bearer ${token}` })
const create = (origin: string, token: string, body: object) =>
  fetch(`${origin}/v1/routing`, {
    method: "POST",
    headers: { ...bearer(token), "content-type": "application/json" },
    body: JSON.stringify(body)
  })

describe("examples/server.ts (npm start)", () => {
  it("with no token configured, generates one, prints it once, and serves the API with it", async () => {
    const server = await start()
    try {
      const tokens = [...server.output().matchAll(/generated admin token (\S+)/g)].map((m) => m[1]!)
      assert.strictEqual(tokens.length, 1)
      const created = await create(server.origin, tokens[0]!, { method: "GET", path: "/users/:id", handler: "show" })
      assert.strictEqual(created.status, 201)
      const route = await created.json()
      const found = await fetch(`${server.origin}${created.headers.get("location")}`, { headers: bearer(tokens[0]!) })
      assert.deepStrictEqual(await found.json(), route)
      assert.strictEqual((await fetch(`${server.origin}/v1/routing/${route.id}`)).status, 401)
    } finally {
      assert.strictEqual(await server.stop(), 0)
    }
  })

  it("reads ROUTING_ADMIN_TOKENS and ROUTING_READ_TOKENS, ignoring empty entries", async () => {
    const server = await start({ ROUTING_ADMIN_TOKENS: " admin1, ,admin2,", ROUTING_READ_TOKENS: "reader1,," })
    try {
      assert.notInclude(server.output(), "generated")
      const first = await create(server.origin, "admin1", { method: "GET", path: "/a", handler: "h" })
      assert.strictEqual(first.status, 201)
      assert.strictEqual(
        (await create(server.origin, "admin2", { method: "GET", path: "/b", handler: "h" })).status,
        201
      )
      assert.strictEqual(
        (await create(server.origin, "reader1", { method: "GET", path: "/c", handler: "h" })).status,
        403
      )
      const id = (await first.json()).id
      assert.strictEqual((await fetch(`${server.origin}/v1/routing/${id}`, { headers: bearer("reader1") })).status, 200)
      assert.strictEqual((await create(server.origin, "", { method: "GET", path: "/d", handler: "h" })).status, 400)
    } finally {
      await server.stop()
    }
  })

  it("serves the OpenAPI document and a docs page; other paths are the host's 404", async () => {
    const server = await start({ ROUTING_ADMIN_TOKENS: "t" })
    try {
      assert.deepStrictEqual(await (await fetch(`${server.origin}/openapi.json`)).json(), RoutingApi.openApi)
      const docs = await fetch(`${server.origin}/docs`)
      assert.strictEqual(docs.headers.get("content-type"), "text/html; charset=utf-8")
      const page = await docs.text()
      assert.include(page, RoutingApi.openApi.info.title)
      assert.include(page, "/v1/routing")
      assert.strictEqual((await fetch(`${server.origin}/nowhere`)).status, 404)
    } finally {
      await server.stop()
    }
  })

  it("on SIGTERM finishes the request in flight, then exits 0", async () => {
    const server = await start({ ROUTING_ADMIN_TOKENS: "t" })
    const body = JSON.stringify({ method: "GET", path: "/in-flight", handler: "h" })
    let release: () => void = () => {}
    const stream = new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(new TextEncoder().encode(body.slice(0, 10)))
        release = () => {
          controller.enqueue(new TextEncoder().encode(body.slice(10)))
          controller.close()
        }
      }
    })
    const pending = fetch(`${server.origin}/v1/routing`, {
      method: "POST",
      headers: { ...bearer("t"), "content-type": "application/json" },
      body: stream,
      duplex: "half"
    } as RequestInit)
    await new Promise((resolve) => setTimeout(resolve, 300)) // the request has reached the server
    const stopping = Date.now()
    const stopped = server.stop("SIGTERM")
    await new Promise((resolve) => setTimeout(resolve, 300))
    release()
    assert.strictEqual((await pending).status, 201)
    assert.strictEqual(await stopped, 0)
    assert.isBelow(Date.now() - stopping, 10_000)
    assert.include(server.output(), "SIGTERM received")
  })

  it("SIGINT stops it too", async () => {
    const server = await start({ ROUTING_ADMIN_TOKENS: "t" })
    assert.strictEqual(await server.stop("SIGINT"), 0)
  })

  it("refuses a malformed token or port with a message naming it", async () => {
    const token = await failsToStart({ ROUTING_ADMIN_TOKENS: "good,has space" })
    assert.strictEqual(token.code, 1)
    assert.include(token.output, "ROUTING_ADMIN_TOKENS entry 2 is not a valid bearer token")
    const port = await failsToStart({ PORT: "http" })
    assert.strictEqual(port.code, 1)
    assert.include(port.output, "PORT must be")
  })

  it("with an unreachable DATABASE_URL, exits 1 saying why the store could not start", async () => {
    const result = await failsToStart({ ROUTING_ADMIN_TOKENS: "t", DATABASE_URL: "postgres://postgres@127.0.0.1:1/x" })
    assert.strictEqual(result.code, 1)
    assert.include(result.output, "could not start the route store")
    assert.include(result.output, "ECONNREFUSED 127.0.0.1:1")
  })

  it("refuses a DATABASE_URL that is not a postgres:// URL, without echoing it", async () => {
    const garbled = await failsToStart({ ROUTING_ADMIN_TOKENS: "t", DATABASE_URL: "postgres://u:secret@h:port/db" })
    assert.strictEqual(garbled.code, 1)
    assert.include(garbled.output, "DATABASE_URL is not a valid URL")
    assert.notInclude(garbled.output, "secret")
    const other = await failsToStart({ ROUTING_ADMIN_TOKENS: "t", DATABASE_URL: "mysql://u@127.0.0.1/db" })
    assert.strictEqual(other.code, 1)
    assert.include(other.output, "DATABASE_URL must be a postgres:// or postgresql:// URL")
  })

  it("with a DATABASE_URL naming a database that does not exist, exits 1 naming it", async (ctx) => {
    TestDatabase.requireServer(ctx, "it needs a PostgreSQL server to refuse the database")
    const url = new URL(process.env.DATABASE_URL!)
    url.pathname = `/rr_missing_${Date.now()}`
    const result = await failsToStart({ ROUTING_ADMIN_TOKENS: "t", DATABASE_URL: url.toString() })
    assert.strictEqual(result.code, 1)
    assert.include(result.output, `database "${url.pathname.slice(1)}" does not exist`)
  })

  it("with DATABASE_URL, stores in Postgres: a route survives a restart byte for byte", async (ctx) => {
    TestDatabase.requireServer(ctx, "the server process needs a PostgreSQL server it can reach by URL")
    const env = { ROUTING_ADMIN_TOKENS: "t", DATABASE_URL: process.env.DATABASE_URL! }
    const first = await start(env)
    const created = await create(first.origin, "t", { method: "GET", path: `/restart/${Date.now()}`, handler: "h" })
    const text = await created.text()
    assert.strictEqual(created.status, 201)
    assert.strictEqual(await first.stop(), 0)
    const second = await start(env)
    try {
      const found = await fetch(`${second.origin}${created.headers.get("location")}`, { headers: bearer("t") })
      assert.strictEqual(await found.text(), text)
    } finally {
      await second.stop()
    }
  })
})
