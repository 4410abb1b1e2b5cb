/**
 * Database faults under continuous load on the Postgres store: its connections are killed, then PostgreSQL is
 * stopped and started again. Every answer must be one the contract allows (never a 500, never a hang past what
 * the deadline allows), no acknowledged create may be lost, service must resume within 5 s of the database coming back,
 * and the pool must not leak connections.
 *
 * It stops and starts a PostgreSQL server of its own (EmbeddedServer.ts), never one anything else uses.
 */
import { PgClient } from "@effect/sql-pg"
import { assert, describe, it } from "@effect/vitest"
import { Cause, Layer, Logger, Redacted } from "effect"
import * as PgRouteRepository from "route-registry/PgRouteRepository"
import { nodeListener, type Received } from "../utils/adapters.js"
import * as EmbeddedServer from "../utils/EmbeddedServer.js"
import { get, post, tokens } from "../utils/httpContract.js"
import * as TestDatabase from "../utils/TestDatabase.js"

const APPLICATION = "rr-fault-test"
const POOL = 5
const QUERY_TIMEOUT_MS = 2_000
// A request may wait for the query timeout plus a connection attempt; one whose COMMIT was under way when its
// connection died (killed, or the server stopping) then waits for the server to settle it: its answer comes at most a
// second past the deadline, plus twice the query timeout and a second of settling, plus a last read's deadline
// (docs/reliability.md). Past that and 3 s, it has hung.
const HANG_MS = QUERY_TIMEOUT_MS + 1_000 + 2 * QUERY_TIMEOUT_MS + 1_000 + QUERY_TIMEOUT_MS + 3_000
const ALLOWED = new Set([201, 200, 404, 409, 503])

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

interface Outcome {
  readonly status: number | "hung" | "error"
  readonly at: number
  readonly route?: string
}

describe("database faults under load", () => {
  it("connections killed, then the server stopped and started: only allowed answers, nothing lost", async () => {
    const database = await EmbeddedServer.make()
    const client = PgClient.layer({
      url: Redacted.make(database.url),
      applicationName: APPLICATION,
      maxConnections: POOL,
      connectTimeout: "2 seconds"
    })
    const store = PgRouteRepository.layer({ queryTimeout: QUERY_TIMEOUT_MS }).pipe(Layer.provide(client))
    // The causes of any 500 are logged: keep them, to say what went wrong if one appears.
    const logged: Array<string> = []
    const capture = Logger.replace(
      Logger.defaultLogger,
      Logger.make(({ cause, message }) => logged.push(`${message} ${Cause.pretty(cause)}`))
    )
    const server = await nodeListener.start(Layer.mergeAll(store, tokens, capture))
    const outcomes: Array<Outcome> = []
    const created: Array<Received> = []
    let running = true
    let n = 0

    const timed = async (send: () => Promise<Received>): Promise<Received | undefined> => {
      const started = Date.now()
      const response = await Promise.race([send(), pause(HANG_MS).then(() => "hung" as const)]).catch(() =>
        "error" as const
      )
      if (typeof response === "string") {
        outcomes.push({ status: response, at: started })
        return undefined
      }
      outcomes.push({ status: response.status, at: started })
      return response
    }

    const worker = async () => {
      while (running) {
        const response = await timed(() => server.send(post({ method: "PUT", path: `/fault/${n++}`, handler: "h" })))
        if (response?.status === 201) {
          created.push(response)
          await timed(() => server.send(get(response.json.id)))
        }
      }
    }

    try {
      const workers = Array.from({ length: 8 }, worker)
      await pause(1_000)
      const killed = await TestDatabase.admin(
        database.url,
        (c) =>
          c.query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1", [APPLICATION])
      )
      assert.isAbove(killed.rowCount ?? 0, 0, "no connection of the store was found to kill")
      await pause(1_500)
      await EmbeddedServer.stop(database.control)
      await pause(2_000)
      await EmbeddedServer.start(database.control)
      const back = Date.now()
      await pause(6_000)
      running = false
      await Promise.all(workers)

      const statuses = new Set(outcomes.map((o) => o.status))
      for (const status of statuses) {
        assert.isTrue(ALLOWED.has(status as number), `answered ${status}; logged:\n${logged.join("\n").slice(0, 4000)}`)
      }
      assert.isTrue(statuses.has(503), "the outage was never seen: the test did not test anything")
      const resumed = outcomes.find((o) => o.at >= back && o.status === 201)
      assert.isDefined(resumed, "no create succeeded after the database came back")
      assert.isBelow(resumed!.at - back, 5_000)

      for (const response of created) {
        const found = await server.send(get(response.json.id))
        assert.strictEqual(found.status, 200)
        assert.strictEqual(found.text, response.text)
      }
      const open = await TestDatabase.admin(
        database.url,
        (c) => c.query("SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = $1", [APPLICATION])
      )
      assert.isAtMost(open.rows[0].n, POOL)
    } finally {
      running = false
      await server.close()
      await database.close()
    }
  })
})
