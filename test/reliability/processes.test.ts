/**
 * docs/scaling-out.md's "Several processes on one database" with real processes: three `npm start` hosts on one PostgreSQL database take creates, updates and
 * deletes from many clients at once, while their connections are killed and PostgreSQL is restarted, and a third host
 * starts in the middle of it. Once the writes stop, every host's router must serve exactly the rows of the database:
 * each stored route at its path with its handler and middleware, and nothing for any path a route had before.
 *
 * It stops and starts a PostgreSQL server of its own (EmbeddedServer.ts), never one anything else uses.
 */
import { assert, describe, it } from "@effect/vitest"
import * as EmbeddedServer from "../utils/EmbeddedServer.js"
import * as Spawned from "../utils/spawned.js"
import * as TestDatabase from "../utils/TestDatabase.js"

const TOKEN = "processes-test-token"
const METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE"] as const
// Names npm start's demo catalog registers, so every stored route serves (an unknown name would answer 503).
const MIDDLEWARE = [[], ["timing"], ["requestId", "timing"], ["requestId"]]
const WORKERS_PER_HOST = 4
// Past this after the writes stop, a table that still differs from the rows has lost a change.
const QUIESCENCE_MS = 20_000

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

// Every path is /r/<n>/:p with its own n, so a request /r/<n>/v can only be served by the route stored with that n.
const pathOf = (n: number) => `/r/${n}/:p`
const requestPath = (n: number) => `/r/${n}/v`

interface Row {
  readonly id: string
  readonly method: string
  readonly path: string
  readonly handler: string
  readonly middleware: ReadonlyArray<string>
}

interface Echo {
  readonly route: Row
}

describe("three host processes on one database", () => {
  it(
    "changes from all of them, killed connections, a restarted server, a late starter: tables equal the rows",
    async () => {
      const database = await EmbeddedServer.make()
      const env = { DATABASE_URL: database.url, ROUTING_ADMIN_TOKENS: TOKEN }
      const hosts: Array<Spawned.Running> = []
      // Every (method, n) a route has had, to check afterwards that no host serves a route where it no longer is.
      const used = new Set<string>()
      const live: Array<string> = []
      let counter = 0
      let changes = 0
      let running = true

      const admin = async (origin: string, method: string, path: string, body?: unknown) => {
        const response = await fetch(origin + path, {
          method,
          headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" },
          body: body === undefined ? null : JSON.stringify(body),
          signal: AbortSignal.timeout(10_000)
        }).catch(() => undefined)
        if (response === undefined) return undefined
        const text = await response.text()
        if (response.ok) changes++
        return { status: response.status, json: text === "" ? undefined : JSON.parse(text) }
      }

      const step = async (origin: string) => {
        const roll = Math.random()
        const method = METHODS[Math.floor(Math.random() * METHODS.length)]!
        const n = counter++
        if (roll < 0.5 || live.length < 10) {
          used.add(`${method} ${n}`)
          const created = await admin(origin, "POST", "/v1/routing", {
            method,
            path: pathOf(n),
            handler: "echo",
            middleware: MIDDLEWARE[n % MIDDLEWARE.length]
          })
          if (created?.status === 201) live.push(created.json.id)
        } else if (roll < 0.8) {
          const id = live[Math.floor(Math.random() * live.length)]!
          const patch = Math.random() < 0.5
            ? { path: pathOf(n), method }
            : { middleware: MIDDLEWARE[n % MIDDLEWARE.length] }
          if ("path" in patch) used.add(`${method} ${n}`)
          await admin(origin, "PATCH", `/v1/routing/${id}`, patch)
        } else {
          const [id] = live.splice(Math.floor(Math.random() * live.length), 1)
          await admin(origin, "DELETE", `/v1/routing/${id}`)
        }
      }

      const worker = async (host: Spawned.Running) => {
        while (running) {
          await step(host.origin)
          await pause(5)
        }
      }

      /** The differences between one host's router and the rows, as sentences (none when they agree). */
      const differences = async (host: Spawned.Running, rows: ReadonlyArray<Row>) => {
        const stored = new Map(rows.map((row) => [`${row.method} ${/^\/r\/(\d+)\//.exec(row.path)![1]}`, row]))
        const found: Array<string> = []
        await Promise.all(Array.from(used, async (key) => {
          const [method, n] = key.split(" ") as [string, string]
          const response = await fetch(host.origin + requestPath(Number(n)), { method }).catch(() => undefined)
          const served = response?.status === 200 ? (await response.json() as Echo).route : undefined
          await response?.body?.cancel().catch(() => undefined)
          const row = stored.get(key)
          if (row === undefined) {
            if (served !== undefined) found.push(`${key} served route ${served.id}, which is not stored there`)
          } else if (served === undefined || JSON.stringify({ ...served, ...row }) !== JSON.stringify(served)) {
            found.push(`${key} served ${JSON.stringify(served ?? response?.status)}, stored ${JSON.stringify(row)}`)
          }
        }))
        return found
      }

      try {
        hosts.push(await Spawned.start("examples/server.ts", env), await Spawned.start("examples/server.ts", env))
        const workers = hosts.flatMap((host) => Array.from({ length: WORKERS_PER_HOST }, () => worker(host)))
        await pause(1_500)
        // A host that starts while writers are busy.
        const late = await Spawned.start("examples/server.ts", env)
        hosts.push(late)
        workers.push(...Array.from({ length: WORKERS_PER_HOST }, () => worker(late)))
        await pause(1_500)
        const killed = await TestDatabase.admin(database.url, (client) =>
          client.query(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()"
          ))
        assert.isAtLeast(killed.rowCount ?? 0, hosts.length, "each host's connections were killed")
        await pause(1_500)
        await EmbeddedServer.stop(database.control)
        await pause(1_500)
        await EmbeddedServer.start(database.control)
        await pause(3_000)
        running = false
        await Promise.all(workers)

        const rows = await TestDatabase.admin(
          database.url,
          (client) =>
            client.query<Row>("SELECT id, method, path, handler, middleware FROM route_registry_routes ORDER BY id")
        )
        const stopped = Date.now()
        const deadline = stopped + QUIESCENCE_MS
        let remaining: Array<string> = []
        for (;;) {
          remaining = (await Promise.all(hosts.map((host) => differences(host, rows.rows)))).flat()
          if (remaining.length === 0 || Date.now() > deadline) break
          await pause(250)
        }
        console.log(
          `processes: ${changes} changes acknowledged, ${rows.rows.length} routes stored, ${used.size} paths compared ` +
            `in each of ${hosts.length} tables, ${remaining.length} differences (compared ${
              Date.now() - stopped
            } ms after ` +
            `the writes stopped)`
        )
        assert.deepStrictEqual(remaining.slice(0, 20), [])
        assert.isAbove(rows.rows.length, 10, "the load stored routes")
        // A bound a loaded machine meets (it runs beside the other files: 164 changes at a load average of 24).
        assert.isAbove(changes, 50, "the load made changes")
        for (const host of hosts) {
          // A keep-alive connection the host closes as the request goes out fails the fetch: ask again, on another.
          const readyz = () => fetch(host.origin + "/readyz")
          const ready = await readyz().catch(readyz).then((response) => response.json())
          assert.strictEqual(ready.reachable, true, JSON.stringify(ready))
          assert.strictEqual(ready.following, "notifications")
        }
      } finally {
        running = false
        await Promise.all(hosts.map((host) => host.stop()))
        await database.close()
      }
    }
  )
})
