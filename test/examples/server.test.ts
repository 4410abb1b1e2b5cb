/**
 * `npm start` (examples/server.ts) as a user runs it: a separate process, configured by its environment.
 */
import { afterAll, assert, beforeAll, describe, it, onTestFinished, vi } from "@effect/vitest"
import { Effect, Layer } from "effect"
import type * as Http from "node:http"
import * as RouteRepository from "route-registry/RouteRepository"
import type * as RouterListener from "route-registry/RouterListener"
import * as RoutingApi from "route-registry/RoutingApi"
import * as Demo from "../../examples/catalog.js"
import * as Env from "../../examples/env.js"
import { makeHost, tables, withTable } from "../../examples/server.js"
import { closeServer, listen } from "../utils/adapters.js"
import { ADMIN, tokens } from "../utils/httpContract.js"
import { answersIn, converse, head } from "../utils/routerContract.js"
import { createRoute } from "../utils/routerHost.js"
import { run as runFile, type Running, start as startFile } from "../utils/spawned.js"
import * as TestDatabase from "../utils/TestDatabase.js"
import { eventually } from "../utils/waiting.js"

const FILE = "examples/server.ts"
const start = (env: Record<string, string> = {}) => startFile(FILE, env)
const failsToStart = async (env: Record<string, string>) => {
  const spawned = runFile(FILE, env)
  return { code: await spawned.exited, output: spawned.output() }
}

class Exited {
  constructor(readonly code: number) {}
}

/**
 * What `npm start` makes of its settings, checked in this process: `check` is the function the process calls at start
 * for them, run with exactly `env` as the environment (a started process has only that). What it returns, prints, and
 * the code it exits with: the refusals started as processes here show that the process does exit with them. A process
 * start loads the package, a second or more of CPU apiece.
 */
const atStart = <A>(
  env: Record<string, string>,
  check: () => A
): { readonly value?: A; readonly code?: number; readonly output: string } => {
  const printed: Array<string> = []
  const print = (...args: Array<unknown>) => void printed.push(args.join(" "))
  const spies = [
    vi.spyOn(console, "error").mockImplementation(print),
    vi.spyOn(console, "log").mockImplementation(print),
    vi.spyOn(process, "exit").mockImplementation((code) => {
      throw new Exited(Number(code ?? 0))
    })
  ]
  const environment = process.env
  process.env = { ...env }
  try {
    const value = check()
    return { value, output: printed.join("\n") }
  } catch (error) {
    if (error instanceof Exited) return { code: error.code, output: printed.join("\n") }
    throw error
  } finally {
    process.env = environment
    spies.forEach((spy) => spy.mockRestore())
  }
}

/**
 * `npm start`'s host built in this process from `env` as the process builds it (`tables`, `Env.timeouts`), on a free
 * port: for what the settings configure (tokens, JWT keys) rather than what the process does.
 */
const startInProcess = async (env: Record<string, string>) => {
  const settled = atStart(env, () => ({ services: tables(), timeouts: Env.timeouts() }))
  if (settled.value === undefined) return assert.fail(`refused at start: ${settled.output}`)
  const { closeStreams, dispose, listener } = await makeHost({
    services: settled.value.services,
    functions: Demo.functions
  })
  const server = Env.createServer(listener, settled.value.timeouts)
  const origin = await listen(server)
  onTestFinished(async () => {
    closeStreams()
    await closeServer(server)
    await dispose()
  })
  return { origin, output: () => settled.output }
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
    onTestFinished(async () => assert.strictEqual(await server.stop(), 0))
    const tokens = [...server.output().matchAll(/generated admin token (\S+)/g)].map((m) => m[1]!)
    assert.strictEqual(tokens.length, 1)
    const created = await create(server.origin, tokens[0]!, { method: "GET", path: "/users/:id", handler: "show" })
    assert.strictEqual(created.status, 201)
    const route = await created.json()
    const found = await fetch(`${server.origin}${created.headers.get("location")}`, { headers: bearer(tokens[0]!) })
    assert.deepStrictEqual(await found.json(), route)
    assert.strictEqual((await fetch(`${server.origin}/v1/routing/${route.id}`)).status, 401)
  })

  it("reads ROUTING_ADMIN_TOKENS and ROUTING_READ_TOKENS, ignoring empty entries", async () => {
    const server = await startInProcess({ ROUTING_ADMIN_TOKENS: " admin1, ,admin2,", ROUTING_READ_TOKENS: "reader1,," })
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
  })

  // Tests that only read from a host, or write routes no other of them reads, share one: a start is a process that
  // loads the package, seconds apiece on a loaded machine. The last of them stops it.
  describe("one host", () => {
    let server: Running
    beforeAll(async () => {
      server = await start({ ROUTING_ADMIN_TOKENS: "t" })
    })
    afterAll(async () => {
      if (server.child.exitCode === null && server.child.signalCode === null) await server.stop()
    })

    it("serves the OpenAPI document and a docs page; other paths are the host's 404", async () => {
      assert.deepStrictEqual(await (await fetch(`${server.origin}/openapi.json`)).json(), RoutingApi.openApi)
      const docs = await fetch(`${server.origin}/docs`)
      assert.strictEqual(docs.headers.get("content-type"), "text/html; charset=utf-8")
      const page = await docs.text()
      assert.include(page, RoutingApi.openApi.info.title)
      assert.include(page, "/v1/routing")
      assert.strictEqual((await fetch(`${server.origin}/nowhere`)).status, 404)
    })

    it("declares /docs, /openapi.json, /readyz and /healthz as its own: no route takes them, match says the host serves them", async () => {
      const healthz = await fetch(`${server.origin}/healthz`)
      assert.strictEqual(healthz.status, 200)
      assert.deepStrictEqual(await healthz.json(), { live: true })
      for (const path of ["/docs", "/openapi.json", "/readyz", "/healthz"]) {
        const refused = await create(server.origin, "t", { method: "GET", path, handler: "echo" })
        assert.strictEqual(refused.status, 400, path)
        const body = await refused.json()
        assert.strictEqual(body.code, "invalid_route")
        assert.include(body.errors[0].message, `${JSON.stringify(path)} is a path this host serves itself`)
        const query = new URLSearchParams({ method: "GET", path })
        const match = await (await fetch(`${server.origin}/v1/routing/match?${query}`, { headers: bearer("t") })).json()
        assert.strictEqual(match.servedByHost, path)
        assert.strictEqual(match.outcome, "not_found")
      }
      assert.strictEqual(
        (await create(server.origin, "t", { method: "GET", path: "/docs/:page", handler: "echo" })).status,
        201
      )
    })

    it("a method the stored routes do not serve on a path: 405 with Allow, not the host's 404", async () => {
      assert.strictEqual(
        (await create(server.origin, "t", { method: "GET", path: "/things/:id", handler: "h" })).status,
        201
      )
      const refused = await fetch(`${server.origin}/things/1`, { method: "POST" })
      assert.strictEqual(refused.status, 405)
      assert.strictEqual(refused.headers.get("allow"), "GET, HEAD")
    })

    it("SIGINT stops it too", async () => {
      assert.strictEqual(await server.stop("SIGINT"), 0)
    })
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

  it("on SIGTERM ends the open change streams at once and exits 0, well before the grace period", async () => {
    const server = await start({ ROUTING_ADMIN_TOKENS: "t" })
    const stream = await fetch(`${server.origin}/v1/routing/changes`, { headers: bearer("t") })
    assert.strictEqual(stream.status, 200)
    const reader = stream.body!.getReader()
    assert.include(new TextDecoder().decode((await reader.read()).value), "event: ready")
    const stopping = Date.now()
    const stopped = server.stop("SIGTERM")
    // The stream ends (done, or cut) rather than staying open until the server's grace period.
    await reader.read().then((read) => assert.isTrue(read.done), () => undefined)
    assert.strictEqual(await stopped, 0)
    assert.isBelow(Date.now() - stopping, 5_000)
  })

  it("refuses a malformed token or port with a message naming it", async () => {
    const token = await failsToStart({ ROUTING_ADMIN_TOKENS: "good,has space" })
    assert.strictEqual(token.code, 1)
    assert.include(token.output, "ROUTING_ADMIN_TOKENS entry 2 is not a valid bearer token")
    const port = atStart({ PORT: "http" }, () => Env.port(3000))
    assert.strictEqual(port.code, 1)
    assert.include(port.output, "PORT must be")
  })

  it("with an unreachable DATABASE_URL, exits 1 saying why the store could not start", async () => {
    const result = await failsToStart({ ROUTING_ADMIN_TOKENS: "t", DATABASE_URL: "postgres://postgres@127.0.0.1:1/x" })
    assert.strictEqual(result.code, 1)
    assert.include(result.output, "could not start the route store")
    assert.include(result.output, "ECONNREFUSED 127.0.0.1:1")
  })

  it("refuses a DATABASE_URL that is not a postgres:// URL, without echoing it", () => {
    const garbled = atStart({ ROUTING_ADMIN_TOKENS: "t", DATABASE_URL: "postgres://u:secret@h:port/db" }, tables)
    assert.strictEqual(garbled.code, 1)
    assert.include(garbled.output, "DATABASE_URL is not a valid URL")
    assert.notInclude(garbled.output, "secret")
    const other = atStart({ ROUTING_ADMIN_TOKENS: "t", DATABASE_URL: "mysql://u@127.0.0.1/db" }, tables)
    assert.strictEqual(other.code, 1)
    assert.include(other.output, "DATABASE_URL must be a postgres:// or postgresql:// URL")
  })

  it("refuses a DATABASE_IDLE_TIMEOUT_MS that is not a whole number of milliseconds from 1", () => {
    const env = { ROUTING_ADMIN_TOKENS: "t", DATABASE_URL: "postgres://u@127.0.0.1/db" }
    for (const value of ["10s", "0"]) {
      const refused = atStart({ ...env, DATABASE_IDLE_TIMEOUT_MS: value }, tables)
      assert.strictEqual(refused.code, 1)
      assert.include(refused.output, "DATABASE_IDLE_TIMEOUT_MS must be a whole number of milliseconds")
    }
    assert.isUndefined(atStart({ ...env, DATABASE_IDLE_TIMEOUT_MS: "3000" }, tables).code)
  })

  it("with a DATABASE_URL naming a database that does not exist, exits 1 naming it", async () => {
    const url = new URL(TestDatabase.url)
    url.pathname = `/rr_missing_${Date.now()}`
    const result = await failsToStart({ ROUTING_ADMIN_TOKENS: "t", DATABASE_URL: url.toString() })
    assert.strictEqual(result.code, 1)
    assert.include(result.output, `database "${url.pathname.slice(1)}" does not exist`)
  })

  it("with DATABASE_URL, stores in Postgres: a route survives a restart byte for byte", async () => {
    const env = { ROUTING_ADMIN_TOKENS: "t", DATABASE_URL: TestDatabase.url }
    const first = await start(env)
    const created = await create(first.origin, "t", { method: "GET", path: `/restart/${Date.now()}`, handler: "h" })
    const text = await created.text()
    assert.strictEqual(created.status, 201)
    assert.strictEqual(await first.stop(), 0)
    const second = await start(env)
    onTestFinished(async () => {
      await second.stop()
    })
    const found = await fetch(`${second.origin}${created.headers.get("location")}`, { headers: bearer("t") })
    assert.strictEqual(await found.text(), text)
  })

  // docs/scaling-out.md, "Database connections": idle, a registry process holds at most 2 connections (one pool connection for its polls, its
  // listening connection), whatever burst it served before and however many followers it streams to.
  it("with DATABASE_URL, holds at most 2 database connections while idle, followers connected", async () => {
    const name = `rr-idle-${process.pid}-${Date.now().toString(36)}`
    const url = new URL(TestDatabase.url)
    url.searchParams.set("application_name", name)
    // Idle pool connections close after 3 s instead of node-postgres's 10 s: the bound is the same, reached sooner,
    // and the burst's connections are still open when they are first counted, on a loaded machine too.
    const server = await start({
      ROUTING_ADMIN_TOKENS: "t",
      DATABASE_URL: url.toString(),
      DATABASE_IDLE_TIMEOUT_MS: "3000"
    })
    onTestFinished(async () => {
      await server.stop()
    })
    const held = () =>
      TestDatabase.admin(
        TestDatabase.url,
        (client) =>
          client.query("SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = $1", [name])
            .then((result) => result.rows[0].n as number)
      )
    // A burst of concurrent creates grows the pool.
    const created = await Promise.all(
      Array.from(
        { length: 30 },
        (_, n) => create(server.origin, "t", { method: "GET", path: `/idle/${Date.now()}/${n}`, handler: "h" })
      )
    )
    assert.deepStrictEqual(created.map((response) => response.status), Array(30).fill(201))
    assert.isAbove(await held(), 2)
    const followers = await Promise.all(
      Array.from({ length: 20 }, () => fetch(`${server.origin}/v1/routing/changes`, { headers: bearer("t") }))
    )
    onTestFinished(() => followers.forEach((follower) => follower.body?.cancel()))
    assert.deepStrictEqual(followers.map((follower) => follower.status), Array(20).fill(200))
    // The pool closes a connection idle for 3 s (DATABASE_IDLE_TIMEOUT_MS); a loaded machine runs late.
    const deadline = Date.now() + 60_000
    while ((await held()) > 2 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 500))
    for (let sample = 0; sample < 6; sample++) {
      assert.isAtMost(await held(), 2)
      await new Promise((resolve) => setTimeout(resolve, 500))
    }
  })
})

describe("examples/server.ts (npm start) following a registry (FOLLOW_URL)", () => {
  // A bound on a loaded machine: the test's timeout is above it.
  const waitFor = (check: () => Promise<boolean>, what: string) => Effect.runPromise(eventually(what, check, 60_000))

  it("registry → follower → follower of the follower: routes what the registry stores, read-only, with no database", async () => {
    // Followers are listed in the fleet with a token that holds fleet:report (docs/scaling-out.md).
    const reporters = JSON.stringify([{ name: "edge", token: "edge-token", scopes: ["routes:read", "fleet:report"] }])
    const registry = await start({
      ROUTING_ADMIN_TOKENS: "admin",
      ROUTING_READ_TOKENS: "reader",
      ROUTING_TOKENS: reporters
    })
    onTestFinished(async () => {
      await registry.stop()
    })
    const hello = await create(registry.origin, "admin", { method: "GET", path: "/hello/:name", handler: "echo" })
    assert.strictEqual(hello.status, 201)
    const route = await hello.json()
    // DATABASE_URL names a port nothing listens on: a follower that connected would not start.
    const followerEnv = {
      ROUTING_READ_TOKENS: "reader",
      ROUTING_TOKENS: reporters,
      DATABASE_URL: "postgres://postgres@127.0.0.1:1/none"
    }
    const follower = await start({
      ...followerEnv,
      FOLLOW_URL: registry.origin,
      FOLLOW_TOKEN: "edge-token",
      FOLLOW_NAME: "edge-relay"
    })
    onTestFinished(async () => {
      await follower.stop()
    })
    assert.include(follower.output(), "DATABASE_URL is not used")
    const relayed = await start({ ...followerEnv, FOLLOW_URL: follower.origin, FOLLOW_TOKEN: "edge-token" })
    onTestFinished(async () => {
      await relayed.stop()
    })
    for (const server of [follower, relayed]) {
      const served = await fetch(`${server.origin}/hello/world`)
      assert.strictEqual(served.status, 200)
      assert.deepStrictEqual((await served.json()).params, { name: "world" })
      const found = await fetch(`${server.origin}/v1/routing/${route.id}`, { headers: bearer("reader") })
      assert.deepStrictEqual(await found.json(), route)
      const readiness = await (await fetch(`${server.origin}/readyz`)).json()
      assert.include(readiness, { ready: true, following: "stream", reachable: true })
      const write = await create(server.origin, "reader", { method: "GET", path: "/other", handler: "echo" })
      assert.strictEqual(write.status, 405)
      assert.strictEqual(write.headers.get("allow"), "GET")
      assert.include((await write.json()).detail, "follows another registry")
    }
    const later = await create(registry.origin, "admin", { method: "GET", path: "/later", handler: "echo" })
    assert.strictEqual(later.status, 201)
    await waitFor(async () => (await fetch(`${relayed.origin}/later`)).status === 200, "/later through the relay")
    const removed = await fetch(`${registry.origin}/v1/routing/${route.id}`, {
      method: "DELETE",
      headers: bearer("admin")
    })
    assert.strictEqual(removed.status, 204)
    await waitFor(
      async () => (await fetch(`${relayed.origin}/hello/world`)).status === 404,
      "the delete through the relay"
    )
    // The registry's fleet: the relay by its FOLLOW_NAME, and through it the other, by its default name.
    await waitFor(async () => {
      const fleet = await (await fetch(`${registry.origin}/v1/routing/followers`, { headers: bearer("reader") })).json()
      return fleet.items.length === 2 &&
        fleet.items.some((item: any) => item.name === "edge-relay" && item.via === null) &&
        fleet.items.some((item: any) => item.via === "edge-relay" && item.connected)
    }, "the registry listing both followers")
  })

  // The registry these followers follow, or are refused by: one for them all, as they only read from it.
  describe("one registry", () => {
    let registry: Running
    beforeAll(async () => {
      registry = await start({ ROUTING_ADMIN_TOKENS: "admin", ROUTING_READ_TOKENS: "reader" })
    })
    afterAll(() => registry?.stop())

    it("with no token configured, a follower generates a read token and says its API is read-only; no line shows FOLLOW_URL's password", async () => {
      const withPassword = registry.origin.replace("http://", "http://user:s3cret-pw@")
      const follower = await start({ FOLLOW_URL: withPassword, FOLLOW_TOKEN: "reader" })
      onTestFinished(async () => {
        await follower.stop()
      })
      const output = follower.output()
      assert.notInclude(output, "admin token")
      assert.include(output, "read-only")
      const token = /generated read token (\S+)/.exec(output)?.[1]
      assert.isDefined(token, output)
      assert.strictEqual((await fetch(`${follower.origin}/v1/routing`, { headers: bearer(token!) })).status, 200)
      const write = await create(follower.origin, token!, { method: "GET", path: "/x", handler: "echo" })
      assert.strictEqual(write.status, 405)
      assert.include(output, `following the registry at ${registry.origin}`)
      await follower.stop()
      assert.notInclude(follower.output(), "s3cret-pw")
    })

    it("warns when FOLLOW_TOKEN would cross the network in clear text (plain http:// to another host), not for this machine", async () => {
      const remote = runFile(FILE, { PORT: "0", FOLLOW_URL: "http://registry.invalid:3000", FOLLOW_TOKEN: "reader" })
      onTestFinished(() => void remote.child.kill("SIGKILL"))
      await waitFor(async () => remote.output().includes("plain http://"), "the warning")
      assert.include(remote.output(), "http://registry.invalid:3000 is plain http:// to another host")
      assert.notInclude(remote.output(), "reader")
      const local = await start({ FOLLOW_URL: registry.origin, FOLLOW_TOKEN: "reader" })
      onTestFinished(async () => {
        await local.stop()
      })
      assert.notInclude(local.output(), "plain http://")
    })

    // One refused start for both: it says so, exits 1, and echoes neither FOLLOW_URL's password nor the token.
    it("exits 1 when the registry refuses FOLLOW_TOKEN, saying so without FOLLOW_URL's password; or FOLLOW_TOKEN is missing", async () => {
      const withPassword = registry.origin.replace("http://", "http://user:s3cret-pw@")
      const refused = await failsToStart({ ROUTING_READ_TOKENS: "r", FOLLOW_URL: withPassword, FOLLOW_TOKEN: "wrong" })
      assert.strictEqual(refused.code, 1)
      assert.include(refused.output, "401 invalid_token")
      assert.notInclude(refused.output, "s3cret-pw")
      assert.notInclude(refused.output, "wrong")
      const missing = atStart({ ROUTING_READ_TOKENS: "r", FOLLOW_URL: registry.origin }, tables)
      assert.strictEqual(missing.code, 1)
      assert.include(missing.output, "FOLLOW_TOKEN must be set with FOLLOW_URL")
    })
  })
})

// Functions a host could register by mistake: the demo catalog stays as README's quick start shows it, so the host is built
// here from the example's parts, with these beside the demo's own.
const misbehaving: Record<string, RouterListener.RouteFunction> = {
  answersTwice: (_req, res) => {
    res.end("first answer")
    res.end("second answer")
  },
  throwsAfterWriteHead: (_req, res) => {
    res.writeHead(200, { "content-type": "text/plain", "content-length": 100 })
    res.write("part of it")
    throw new Error("boom after writeHead")
  },
  readsBody: (req, res) => {
    let size = 0
    req.on("data", (chunk: Buffer) => (size += chunk.length))
    req.on("end", () => res.writeHead(200).end(`read ${size} bytes`))
  }
}

const BODY_TIMEOUT_MILLIS = 300

// The example host of `npm start`, from its own parts, on a server made as `npm start` makes it.
const startHost = async () => {
  const { dispose, listener } = await makeHost({
    services: withTable(Layer.merge(RouteRepository.layerMemory, tokens)),
    functions: { ...Demo.functions, handlers: { ...Demo.functions.handlers, ...misbehaving } },
    bodyTimeoutMillis: BODY_TIMEOUT_MILLIS
  })
  const server: Http.Server = Env.createServer(listener, {
    headersMillis: 10_000,
    bodyMillis: BODY_TIMEOUT_MILLIS,
    requestMillis: 30_000
  })
  const origin = await listen(server)
  const create = async (route: { method: string; path: string; handler: string }) => {
    const { body, headers, method } = createRoute(route)
    const created = await fetch(`${origin}/v1/routing`, { method, headers, body })
    assert.strictEqual(created.status, 201, await created.text())
  }
  return { origin, create, close: () => closeServer(server).then(dispose) }
}

describe("examples/server.ts (npm start): misbehaving route functions and slow clients", () => {
  it("a handler that answers twice: the first answer stands and the host serves on", async () => {
    const host = await startHost()
    onTestFinished(() => host.close())
    await host.create({ method: "GET", path: "/twice", handler: "answersTwice" })
    await host.create({ method: "GET", path: "/hello/:name", handler: "echo" })
    for (let i = 0; i < 3; i++) {
      const response = await fetch(`${host.origin}/twice`)
      assert.strictEqual(await response.text(), "first answer")
    }
    await new Promise((resolve) => setTimeout(resolve, 50)) // Node emits the error on the next tick
    assert.strictEqual((await fetch(`${host.origin}/hello/world`)).status, 200)
  })

  it("a handler that throws after writeHead: the answer is cut and the connection closed, not left hanging", async () => {
    const host = await startHost()
    onTestFinished(() => host.close())
    await host.create({ method: "GET", path: "/throws", handler: "throwsAfterWriteHead" })
    for (let i = 0; i < 2; i++) {
      const { closedAfterMillis, received } = await converse(host.origin, [[0, head("GET", "/throws")]], 5_000)
      assert.isDefined(closedAfterMillis, `the connection was left hanging: ${received}`)
      for (const answer of answersIn(received)) assert.isBelow(answer.body.length, 100)
    }
    assert.strictEqual((await fetch(`${host.origin}/readyz`)).status, 200)
  })

  it("a routed body that does not arrive within BODY_TIMEOUT_MS: 408 request_timeout and the connection closed", async () => {
    const host = await startHost()
    onTestFinished(() => host.close())
    await host.create({ method: "POST", path: "/upload", handler: "readsBody" })
    const { closedAfterMillis, received } = await converse(
      host.origin,
      [[0, head("POST", "/upload", { "content-length": 100 }) + "only ten b"]],
      5_000
    )
    assert.isDefined(closedAfterMillis)
    const [answer] = answersIn(received)
    assert.strictEqual(answer!.status, 408, received)
    assert.strictEqual(JSON.parse(answer!.body).code, "request_timeout")
    assert.strictEqual(answer!.headers.connection, "close")
  })
})

describe("examples/server.ts (npm start): slow clients", () => {
  it("a slow body to a stored route is not held past BODY_TIMEOUT_MS once echo has answered", async () => {
    const server = await start({ ROUTING_ADMIN_TOKENS: ADMIN, BODY_TIMEOUT_MS: "500" })
    onTestFinished(async () => {
      await server.stop()
    })
    const created = await create(server.origin, ADMIN, { method: "POST", path: "/slow", handler: "echo" })
    assert.strictEqual(created.status, 201)
    const { closedAfterMillis, received } = await converse(
      server.origin,
      [
        [0, head("POST", "/slow", { "content-type": "text/plain", "content-length": 1000 }) + "a"],
        ...Array.from({ length: 25 }, (_, i) => [200 * (i + 1), "b"] as const) // a byte every 200 ms, for 5 s
      ],
      5_000
    )
    assert.strictEqual(answersIn(received)[0]?.status, 200, received)
    assert.isDefined(closedAfterMillis, "the connection was held open for the rest of the body")
    assert.isBelow(closedAfterMillis!, 2_000)
  })

  it("headers that do not arrive within HEADERS_TIMEOUT_MS: the connection is closed", async () => {
    const server = await start({ ROUTING_ADMIN_TOKENS: ADMIN, HEADERS_TIMEOUT_MS: "500" })
    onTestFinished(async () => {
      await server.stop()
    })
    const { closedAfterMillis, received } = await converse(
      server.origin,
      [
        [0, "GET /hello HTTP/1.1\r\nHost: x\r\n"],
        ...Array.from({ length: 25 }, (_, i) => [200 * (i + 1), `X-Slow-${i}: y\r\n`] as const)
      ],
      5_000
    )
    assert.isDefined(closedAfterMillis, "the connection was held open for the rest of the headers")
    assert.isBelow(closedAfterMillis!, 2_500) // Node checks its timeouts every second
    assert.match(received, /^HTTP\/1\.1 408 /)
  })

  it("refuses a timeout that is not a whole number of milliseconds, or a request timeout shorter than the others", () => {
    const body = atStart({ ROUTING_ADMIN_TOKENS: "t", BODY_TIMEOUT_MS: "10s" }, Env.timeouts)
    assert.strictEqual(body.code, 1)
    assert.include(body.output, "BODY_TIMEOUT_MS must be a whole number of milliseconds")
    const zero = atStart({ ROUTING_ADMIN_TOKENS: "t", HEADERS_TIMEOUT_MS: "0" }, Env.timeouts)
    assert.strictEqual(zero.code, 1)
    assert.include(zero.output, "HEADERS_TIMEOUT_MS must be a whole number of milliseconds from 1")
    const request = atStart({ ROUTING_ADMIN_TOKENS: "t", REQUEST_TIMEOUT_MS: "15000" }, Env.timeouts)
    assert.strictEqual(request.code, 1)
    assert.include(request.output, "REQUEST_TIMEOUT_MS must be more than HEADERS_TIMEOUT_MS + BODY_TIMEOUT_MS (20000)")
  })
})

describe("LOG_LEVEL and why tokens are refused (docs/configuration.md, docs/authentication.md)", () => {
  const refusedLines = (output: string) => output.split("\n").filter((line) => line.includes("token refused"))
  const unknown = (origin: string, token: string) => fetch(`${origin}/v1/routing`, { headers: bearer(token) })

  it("a refused token's reason is a warning, once per reason and minute, never the token; LOG_LEVEL=error hides it", async () => {
    const server = await start({ ROUTING_ADMIN_TOKENS: "admin" })
    onTestFinished(async () => {
      await server.stop()
    })
    for (let i = 0; i < 3; i++) assert.strictEqual((await unknown(server.origin, "not-the-token-1234")).status, 401)
    const lines = refusedLines(server.output())
    assert.lengthOf(lines, 1, server.output())
    assert.include(lines[0]!, "level=WARN")
    assert.include(lines[0]!, "the token is not one of the configured tokens")
    assert.notInclude(server.output(), "not-the-token-1234")

    const quiet = await start({ ROUTING_ADMIN_TOKENS: "admin", LOG_LEVEL: "error" })
    onTestFinished(async () => {
      await quiet.stop()
    })
    assert.strictEqual((await unknown(quiet.origin, "not-the-token-1234")).status, 401)
    assert.lengthOf(refusedLines(quiet.output()), 0)
  })

  it("refuses a LOG_LEVEL that is not one of Effect's levels, naming them", () => {
    const result = atStart({ ROUTING_ADMIN_TOKENS: "admin", LOG_LEVEL: "loud" }, Env.logLevel)
    assert.strictEqual(result.code, 1)
    assert.include(result.output, "LOG_LEVEL must be one of All, Trace, Debug, Info, Warning, Error, Fatal, None")
  })
})

describe("named tokens, ROUTING_TOKENS and JWT_* (docs/authentication.md, docs/configuration.md)", () => {
  const route = (path: string) => ({ method: "GET", path, handler: "echo" })

  it("name=token entries and ROUTING_TOKENS with a prefix owner all work at once", async () => {
    const server = await startInProcess({
      ROUTING_ADMIN_TOKENS: "alice=alice-s3cret,bare-admin",
      ROUTING_READ_TOKENS: "bob=bob-s3cret",
      ROUTING_TOKENS: JSON.stringify([
        { name: "payments", token: "payments-s3cret", scopes: ["routes:read", "routes:write:/payments"] }
      ])
    })
    assert.strictEqual((await create(server.origin, "alice-s3cret", route("/a"))).status, 201)
    assert.strictEqual((await create(server.origin, "bare-admin", route("/b"))).status, 201)
    assert.strictEqual((await create(server.origin, "bob-s3cret", route("/c"))).status, 403)
    assert.strictEqual((await create(server.origin, "payments-s3cret", route("/payments/:id"))).status, 201)
    const outside = await create(server.origin, "payments-s3cret", route("/orders/:id"))
    assert.strictEqual(outside.status, 403)
    assert.include(outside.headers.get("www-authenticate")!, "scope=\"routes:write:/orders\"")
    // The name is the principal, not a part of the token.
    assert.strictEqual((await create(server.origin, "alice", route("/d"))).status, 401)
    assert.strictEqual((await create(server.origin, "alice=alice-s3cret", route("/d"))).status, 400)
  })

  it(
    "refuses a ROUTING_TOKENS that is not a list of { name, token, scopes }, naming the field, never the token",
    () => {
      const cases: ReadonlyArray<readonly [string, string]> = [
        ["not json", "ROUTING_TOKENS is not valid JSON"],
        ["{}", "ROUTING_TOKENS must be a JSON array"],
        [JSON.stringify([{ name: "a", scopes: [] }]), "ROUTING_TOKENS[0].token must be a bearer token"],
        [JSON.stringify([{ token: "hidden-1", scopes: [] }]), "ROUTING_TOKENS[0].name must be a non-empty string"],
        [JSON.stringify([{ name: "a", token: "hidden-2" }]), "ROUTING_TOKENS[0].scopes must be an array"],
        [
          JSON.stringify([{ name: "a", token: "hidden-3", scopes: ["routes:read"] }, {
            name: "b",
            token: "hidden-4",
            scopes: ["routes:write:/payments/:id"]
          }]),
          "ROUTING_TOKENS[1].scopes[0]: the prefix \"/payments/:id\" has a parameter"
        ],
        [JSON.stringify([{ name: "a", token: "hidden-5", scopes: ["admin"] }]), "ROUTING_TOKENS[0].scopes[0]"],
        [JSON.stringify([{ name: "a", token: "hidden-6", scopes: [], role: "x" }]), "unknown field \"role\""]
      ]
      for (const [value, message] of cases) {
        const result = atStart({ ROUTING_TOKENS: value }, tables)
        assert.strictEqual(result.code, 1, value)
        assert.include(result.output, message, value)
        assert.notMatch(result.output, /hidden-\d/, value)
      }
    }
  )

  it("JWT_JWKS_URL with JWT_ISSUER and JWT_AUDIENCE: the provider's tokens work, and so do static tokens", async () => {
    const { standInProvider } = await import("../../examples/jwt-authenticator.js")
    const provider = await standInProvider("https://idp.test", "registry")
    onTestFinished(provider.close)
    const server = await startInProcess({
      ROUTING_ADMIN_TOKENS: "ops=ops-s3cret,svc=svc-s3cret",
      JWT_JWKS_URL: provider.jwksUrl,
      JWT_ISSUER: "https://idp.test",
      JWT_AUDIENCE: "other-name, registry",
      JWT_ACTOR_PREFIX: "jwt:"
    })
    assert.notInclude(server.output(), "generated")
    const jwt = await provider.sign("svc", "routes:read routes:write")
    assert.strictEqual((await create(server.origin, jwt, route("/jwt"))).status, 201)
    assert.strictEqual((await create(server.origin, "svc-s3cret", route("/static"))).status, 201)
    assert.strictEqual((await create(server.origin, "unknown", route("/x"))).status, 401)
    // JWT_ACTOR_PREFIX: the JWT subject "svc" and the static token named "svc" are told apart in the change log.
    const log = await fetch(`${server.origin}/v1/routing/history`, { headers: bearer("ops-s3cret") })
    assert.deepStrictEqual((await log.json()).items.map((entry: { actor: string }) => entry.actor), ["svc", "jwt:svc"])
    const foreign = await standInProvider("https://idp.test", "registry")
    onTestFinished(foreign.close)
    assert.strictEqual(
      (await create(server.origin, await foreign.sign("svc", "routes:write"), route("/y"))).status,
      401
    )
  })

  it("refuses JWT keys without JWT_ISSUER or JWT_AUDIENCE, two key sources, or a short JWT_SECRET", async () => {
    const secret = "s".repeat(40)
    const cases: ReadonlyArray<readonly [Record<string, string>, string]> = [
      [{ JWT_SECRET: secret, JWT_AUDIENCE: "a" }, "JWT_ISSUER must be set with JWT_SECRET"],
      [{ JWT_SECRET: secret, JWT_ISSUER: "i" }, "JWT_AUDIENCE must be set with JWT_SECRET"],
      [
        { JWT_SECRET: secret, JWT_JWKS_URL: "http://127.0.0.1:1/certs", JWT_ISSUER: "i", JWT_AUDIENCE: "a" },
        "set only one of"
      ]
    ]
    // A short secret is refused when the authenticator is built, once the settings are read: a process start.
    const short = await failsToStart({ JWT_SECRET: "short-secret-x", JWT_ISSUER: "i", JWT_AUDIENCE: "a" })
    const results = [
      ...cases.map(([env, message]) => [atStart(env, tables), message] as const),
      [short, "at least 32 bytes"] as const
    ]
    for (const [result, message] of results) {
      assert.strictEqual(result.code, 1, message)
      assert.include(result.output, message)
      assert.notInclude(result.output, "short-secret-x")
      assert.notInclude(result.output, secret)
    }
  })
})
