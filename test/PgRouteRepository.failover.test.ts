/**
 * docs/reliability.md, "Failover": the Postgres store behind one address that moves from a primary to its promoted
 * standby (test/utils/PgCluster.ts: a primary, a synchronous standby, TCP proxies as the address and as the standby's
 * way to the primary), each step driven on purpose rather than by timing:
 * - while the address reaches a standby, writes are answered 503 (never 500) and the connections that reached it are
 *   not used again;
 * - a create whose `COMMIT` was under way when the primary died, which the standby never received, is not answered
 *   201, though the promoted standby gives its transaction id to another transaction that commits; and the revision it
 *   would have had is answered to one create only;
 * - a table that read the old primary's changes after transactions the standby never received catches up with the new
 *   primary (it would otherwise take the new primary's transactions of the same ids as seen), and hears its changes.
 */
import { PgClient } from "@effect/sql-pg"
import { assert, describe, it } from "@effect/vitest"
import { Cause, Duration, Effect, Exit, Layer, ManagedRuntime, Option, Redacted } from "effect"
import * as PgRouteRepository from "route-registry/PgRouteRepository"
import * as Route from "route-registry/Route"
import * as RouteRepository from "route-registry/RouteRepository"
import * as RouteTable from "route-registry/RouteTable"
import { afterAll, beforeAll } from "vitest"
import * as EmbeddedServer from "./utils/EmbeddedServer.js"
import * as PgCluster from "./utils/PgCluster.js"
import * as TcpProxy from "./utils/tcpProxy.js"

const TABLE = "routes_failover"

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

const storeLayer = (url: string, options: PgRouteRepository.Options) =>
  PgRouteRepository.layer({ table: TABLE, ...options }).pipe(
    Layer.provide(PgClient.layer({ url: Redacted.make(url), maxConnections: 5, connectTimeout: "2 seconds" }))
  )

const createIn =
  <R>(runtime: ManagedRuntime.ManagedRuntime<R | RouteRepository.RouteRepository, unknown>) => (path: string) =>
    runtime.runPromiseExit(
      Effect.flatMap(
        Route.decodeCreate({ method: "GET", path, handler: "h", middleware: [] }).pipe(Effect.orDie),
        (input) => Effect.flatMap(RouteRepository.RouteRepository, (repo) => repo.create(input))
      )
    )

/** A process on the Postgres store through `url`, with no table. */
const host = async (url: string, options: PgRouteRepository.Options = {}) => {
  const runtime = ManagedRuntime.make(storeLayer(url, options))
  await runtime.runtime()
  return { runtime, create: createIn(runtime) }
}

/** A process on the Postgres store through `url`, with its live table. */
const tableHost = async (url: string, options: PgRouteRepository.Options = {}) => {
  const runtime = ManagedRuntime.make(Layer.provideMerge(RouteTable.layer, storeLayer(url, options)))
  await runtime.runtime()
  return {
    runtime,
    create: createIn(runtime),
    routes: () =>
      runtime.runPromise(
        Effect.map(RouteTable.RouteTable, (table) => Array.from(table, (route) => String(route.path)))
      ),
    confirmedAt: () => runtime.runPromise(Effect.map(RouteTable.status, (status) => status.confirmedAt!.getTime()))
  }
}

const unavailable = (exit: Exit.Exit<unknown, unknown>) =>
  Exit.isFailure(exit) && Option.getOrUndefined(Cause.failureOption(exit.cause))?.["_tag" as never] ===
    "StoreUnavailable"

const stored = (url: string, path: string) =>
  PgCluster.query(url, (client) => client.query(`SELECT id FROM ${TABLE} WHERE path = $1`, [path]))
    .then((result) => result.rowCount)

describe("PgRouteRepository behind an address that reaches a standby", () => {
  it("answers writes 503, never 500, and writes again on the primary at once; so does a primary made read-only", async () => {
    const cluster = await PgCluster.make()
    const address = await TcpProxy.start(cluster.primary.url)
    const writer = await host(address.url, { queryTimeout: Duration.seconds(1) })
    try {
      assert.isTrue(Exit.isSuccess(await writer.create("/before")))
      // The address moves to the standby, and the connections to the primary are cut.
      address.point(cluster.standby.url)
      address.cut()
      const exits = await Promise.all([0, 1, 2, 3].map((i) => writer.create(`/on-standby/${i}`)))
      for (const exit of exits) assert.isTrue(unavailable(exit), String(exit))
      // The address back on the primary, without cutting the connections the pool made to the standby meanwhile.
      address.point(cluster.primary.url)
      const after = await Promise.all([0, 1, 2, 3].map((i) => writer.create(`/after/${i}`)))
      for (const exit of after) assert.isTrue(Exit.isSuccess(exit), String(exit))
      // A primary being demoted: read-only for every transaction, though not in recovery.
      const readOnly = (on: boolean) =>
        PgCluster.query(cluster.primary.url, async (client) => {
          await client.query(`ALTER SYSTEM SET default_transaction_read_only = ${on}`)
          await client.query("SELECT pg_reload_conf()")
          // A new session has the setting once the server has read it again, and has told every session to.
          const shown = () =>
            PgCluster.query(cluster.primary.url, (fresh) => fresh.query("SHOW default_transaction_read_only"))
          while ((await shown()).rows[0].default_transaction_read_only !== (on ? "on" : "off")) await pause(20)
        })
      await readOnly(true)
      const demoted = await Promise.all([0, 1].map((i) => writer.create(`/demoted/${i}`)))
      for (const exit of demoted) assert.isTrue(unavailable(exit), String(exit))
      await readOnly(false)
      assert.isTrue(Exit.isSuccess(await writer.create("/promoted-again")))
    } finally {
      await writer.runtime.dispose()
      await address.close()
      await cluster.close()
    }
  })
})

describe("PgRouteRepository on a server that crashed", () => {
  // A crash (a backend killed) restarts every process of the server but its postmaster: ids of transactions it never
  // wrote down may be given again, as after a failover.
  it("reads nothing by a feed cursor taken before the crash: the table loads every route again", async () => {
    const server = await EmbeddedServer.make()
    const writer = await host(server.url)
    try {
      const changes = await writer.runtime.runPromise(RouteRepository.Feed)
      const before = await writer.runtime.runPromise(changes.cursor)
      assert.isTrue((await writer.runtime.runPromise(changes.since(before))).complete)
      const statsReset = () =>
        PgCluster.query(server.url, (client) => client.query("SELECT stats_reset::text AS at FROM pg_stat_archiver"))
          .then((result) => String(result.rows[0].at), () => undefined)
      const resetBefore = await statsReset()
      await PgCluster.query(server.url, async (client) => {
        const { rows } = await client.query("SELECT pg_backend_pid() AS pid")
        process.kill(rows[0].pid, "SIGKILL")
      })
      // The crash is the server's to notice: until it has restarted its processes, a read may still reach the old ones.
      for (let at = await statsReset(); at === undefined || at === resetBefore; at = await statsReset()) await pause(50)
      for (;;) {
        const read = await writer.runtime.runPromiseExit(changes.since(before))
        if (Exit.isSuccess(read)) {
          assert.isFalse(read.value.complete)
          break
        }
        await pause(50) // the server is restarting its processes
      }
    } finally {
      await writer.runtime.dispose()
      await server.close()
    }
  })
})

describe("PgRouteRepository across a failover", () => {
  // One failover, driven step by step; each test checks one consequence of it.
  let scenario: {
    readonly lost: Exit.Exit<Route.StoredRoute, unknown>
    readonly other: Exit.Exit<Route.StoredRoute, unknown>
    readonly newPrimary: string
    readonly table: Awaited<ReturnType<typeof tableHost>>
    readonly promotedAt: number
    readonly later: (path: string) => Promise<Exit.Exit<Route.StoredRoute, unknown>>
  }
  let close: () => Promise<void> = async () => {}

  beforeAll(async () => {
    const cluster = await PgCluster.make()
    const address = await TcpProxy.start(cluster.primary.url)
    // The table's own way to the database, so that it reaches the new primary only once a change is committed there.
    const tableAddress = await TcpProxy.start(cluster.primary.url)
    const closing: Array<() => Promise<void>> = [cluster.close, address.close, tableAddress.close]
    close = async () => {
      for (const done of closing.splice(0).reverse()) await done().catch(() => undefined)
    }
    // The lost create's fate is asked for twice its deadline once its COMMIT goes unanswered, which its deadline's
    // backstop decides: the deadline outlasts the steps below up to the promotion on a loaded machine (with 10 s, a CI
    // run answered the lost create "could not be learnt": its window had closed before the promotion).
    const writer = await host(address.url, { queryTimeout: Duration.seconds(30) })
    closing.push(() => writer.runtime.dispose())
    // A table that polls rarely: it reads the feed when it is woken, by a notification or its listener's first ping.
    const table = await tableHost(tableAddress.url, { pollInterval: Duration.seconds(30) })
    closing.push(() => table.runtime.dispose())
    assert.isTrue(Exit.isSuccess(await writer.create("/first")))

    // The standby stops hearing the primary: a commit now waits for it, for good.
    cluster.replication.hold({ direction: "to client" })
    const lost = writer.create("/lost")
    const waiting = async () => {
      for (;;) {
        const found = await PgCluster.query(cluster.primary.url, (client) =>
          client.query<{ xid: string }>(
            "SELECT backend_xid::text AS xid FROM pg_stat_activity WHERE wait_event = 'SyncRep'"
          ))
        if (found.rows[0] !== undefined) return BigInt(found.rows[0].xid)
        await pause(20)
      }
    }
    const lostXid = await waiting()
    // Transactions the standby never hears of, which commit on the primary at once (they write nothing), then a read of
    // the feed by the table after them: its cursor takes their ids as seen.
    await PgCluster.query(cluster.primary.url, async (client) => {
      for (let i = 0; i < 200; i++) await client.query("SELECT pg_current_xact_id()")
    })
    const woken = Date.now()
    await PgCluster.query(
      cluster.primary.url,
      (client) => client.query("SELECT pg_notify($1, 'changed')", [`${TABLE}_changes`])
    )
    while ((await table.confirmedAt()) <= woken) await pause(20)

    await EmbeddedServer.stop(cluster.primary.control, "immediate")
    tableAddress.point(undefined)
    await EmbeddedServer.promote(cluster.standby.control)
    const promotedAt = Date.now()
    address.point(cluster.standby.url)
    // The new primary gives the lost transaction's id to another transaction, which commits.
    await PgCluster.query(cluster.standby.url, async (client) => {
      for (;;) {
        const { rows } = await client.query<{ xid: string }>("SELECT pg_current_xact_id()::text AS xid")
        if (BigInt(rows[0]!.xid) >= lostXid) return
      }
    })
    // Another process creates a route, without telling the others: the table must read it from the feed.
    const quiet = await host(address.url, { notifications: false })
    closing.push(() => quiet.runtime.dispose())
    const other = await quiet.create("/other")
    tableAddress.point(cluster.standby.url)
    const loud = await host(address.url, {})
    closing.push(() => loud.runtime.dispose())
    scenario = {
      lost: await lost,
      other,
      newPrimary: cluster.standby.url,
      table,
      promotedAt,
      later: loud.create
    }
  })

  afterAll(() => close())

  it("a create whose COMMIT the new primary never received is not acknowledged", async () => {
    const { lost, newPrimary } = scenario
    assert.strictEqual(await stored(newPrimary, "/lost"), 0, "the standby never received it")
    assert.isTrue(unavailable(lost), `answered ${Exit.isSuccess(lost) ? JSON.stringify(lost.value) : lost}`)
  })

  it("no revision is answered to two writes", () => {
    const { lost, other } = scenario
    assert.isTrue(Exit.isSuccess(other), String(other))
    if (Exit.isSuccess(lost) && Exit.isSuccess(other)) assert.notStrictEqual(lost.value.revision, other.value.revision)
  })

  it("the table catches up with the new primary, and hears its later changes", async () => {
    const { later, promotedAt, table } = scenario
    const catchUp = async (path: string) => {
      for (;;) {
        if ((await table.routes()).includes(path)) return
        if (Date.now() - promotedAt > 20_000) assert.fail(`${path} never reached the table: ${await table.routes()}`)
        await pause(20)
      }
    }
    await catchUp("/other")
    const sent = Date.now()
    assert.isTrue(Exit.isSuccess(await later("/later")))
    await catchUp("/later")
    // Heard, not polled: the table polls every 30 s.
    assert.isBelow(Date.now() - sent, 5_000)
  })
})
