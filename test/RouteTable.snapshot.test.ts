/**
 * A process on the Postgres store with a snapshot file (`RouteTable.layerFrom`, docs/resilience.md): it writes its
 * table's snapshot (kind `postgres`); started with its database down, it routes from the snapshot at once, refuses
 * writes with `StoreUnavailable` (the API's `503 store_unavailable`) and says `source: "snapshot"`; when the database
 * answers, the table resumes from the snapshot's revision through the change log (its change stream's clients and
 * followers hear the changes made meanwhile, no reset) and writes work; a log that no longer reaches back gets the
 * database's table in one step, and a reset downstream. A snapshot of another kind is refused with its reason.
 */
import { PgClient } from "@effect/sql-pg"
import { assert, describe, it, onTestFinished } from "@effect/vitest"
import { Effect, Either, Exit, Layer, Logger, ManagedRuntime, Redacted } from "effect"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import * as AdminListener from "route-registry/AdminListener"
import * as PgRouteRepository from "route-registry/PgRouteRepository"
import * as Route from "route-registry/Route"
import * as RouteRepository from "route-registry/RouteRepository"
import * as RouteTable from "route-registry/RouteTable"
import * as SnapshotFile from "../src/internal/table/snapshotFile.js"
import { type Served, serveNode } from "./utils/adapters.js"
import * as EventStream from "./utils/eventStream.js"
import { follow } from "./utils/followers.js"
import { READER, tokens } from "./utils/httpContract.js"
import * as Spawned from "./utils/spawned.js"
import * as TcpProxy from "./utils/tcpProxy.js"
import * as TestDatabase from "./utils/TestDatabase.js"
import { eventually } from "./utils/waiting.js"

const folder = () => {
  const dir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "route-registry-pg-snapshot-"))
  onTestFinished(() => Fs.rmSync(dir, { recursive: true, force: true }))
  return dir
}

const store = (url: string, table: string, historyCapacity?: number) =>
  PgRouteRepository.layer({ table, historyCapacity }).pipe(
    Layer.provide(PgClient.layer({ url: Redacted.make(url), maxConnections: 2, connectTimeout: "1 second" }))
  )

// A table of its own, dropped when the test ends.
const table = () => {
  const name = TestDatabase.freshTable()
  onTestFinished(() =>
    Effect.runPromise(
      PgRouteRepository.uninstall({ table: name }).pipe(Effect.provide(TestDatabase.layer()), Effect.ignore)
    )
  )
  return name
}

const host = (
  url: string,
  name: string,
  options: RouteTable.StartOptions,
  logs: Array<string> = [],
  historyCapacity?: number
) => {
  const logger = Logger.make(({ message }) =>
    void logs.push(Array.isArray(message) ? message.join(" ") : String(message))
  )
  const runtime = ManagedRuntime.make(
    Layer.merge(RouteTable.layerFrom(store(url, name, historyCapacity), options), tokens).pipe(
      Layer.provide(Logger.replace(Logger.defaultLogger, logger))
    )
  )
  onTestFinished(() => runtime.dispose())
  return runtime
}

type Host = ReturnType<typeof host>

const create = (runtime: Host, path: string) =>
  runtime.runPromiseExit(
    Effect.flatMap(
      Route.decodeCreate({ method: "GET", path, handler: "h", middleware: [] }).pipe(Effect.orDie),
      (input) => Effect.flatMap(RouteRepository.RouteRepository, (repo) => repo.create(input))
    )
  )

const tableOf = (runtime: Host) => runtime.runPromise(RouteTable.RouteTable)
const statusOf = (runtime: Host) => runtime.runPromise(RouteTable.status)

const removeAt = async (runtime: Host, path: string) => {
  const found = RouteTable.lookup(await tableOf(runtime), "GET", path)
  assert.strictEqual(found._tag, "Found", path)
  await runtime.runPromise(
    Effect.flatMap(RouteRepository.RouteRepository, (repo) => repo.remove((found as RouteTable.Found).route.id))
  )
}

// Its routing API on a port of its own.
const served = async (runtime: Host): Promise<Served> => {
  const listener = await runtime.runPromise(AdminListener.make())
  const server = await serveNode(listener, async () => {})
  onTestFinished(() => server.close())
  return server
}

const paths = (table: RouteTable.Table<Route.StoredRoute>) =>
  Array.from(table.tree.byId.values(), (entry) => entry.route.path).sort().join(" ")

/**
 * A process's snapshot of /a /b /c /d written, the process stopped, the database gone; a process started from the
 * snapshot, a follower of it, and a client of its change stream; meanwhile, through the database's own address,
 * another registry (keeping `capacity` log entries) adds /while-away, removes /b and disables /d; then the database
 * back, and the process and its follower caught up. What the follower's history heard from the start: changes, or
 * `reset` when it began again; `opened`: the stream's events before the outage ended.
 */
const throughOutage = async (capacity?: number) => {
  const proxy = await TcpProxy.start(TestDatabase.url)
  onTestFinished(() => proxy.close())
  const name = table()
  const options: RouteTable.StartOptions = { snapshotFile: Path.join(folder(), "table.snapshot") }
  const first = host(proxy.url, name, options)
  for (const path of ["/a", "/b", "/c", "/d"]) assert.isTrue(Exit.isSuccess(await create(first, path)))
  await Effect.runPromise(
    eventually(() => "no snapshot of the 4 routes written", () =>
      Fs.existsSync(options.snapshotFile!) &&
      Either.getOrThrow(SnapshotFile.decode(Fs.readFileSync(options.snapshotFile!), "postgres")).entries.length === 4)
  )
  await first.dispose()
  proxy.point(undefined)

  const logs: Array<string> = []
  const process = host(proxy.url, name, options, logs)
  assert.strictEqual((await statusOf(process)).source, "snapshot")
  const server = await served(process)
  const follower = await follow(server.origin, READER)
  onTestFinished(() => follower.close())
  assert.strictEqual(paths(follower.table), "/a /b /c /d")
  const heard: Array<string> = []
  const listen = (): void => {
    follower.ring.subscribe((change) => {
      heard.push(change === undefined ? "reset" : change._tag)
      if (change === undefined) listen()
    })
  }
  listen()
  const stream = await EventStream.open(fetch, `${server.origin}/v1/routing/changes`, {
    authorization: `Bearer ${READER}`
  })
  onTestFinished(() => stream.close())
  await stream.waitFor((event) => event.event === "ready")
  const opened = stream.events.length

  const other = host(TestDatabase.url, name, {}, [], capacity)
  assert.isTrue(Exit.isSuccess(await create(other, "/while-away")))
  await removeAt(other, "/b")
  const d = RouteTable.lookup(await tableOf(other), "GET", "/d") as RouteTable.Found
  await other.runPromise(Effect.flatMap(
    Effect.zip(RouteRepository.RouteRepository, Route.decodePatch({ enabled: false }).pipe(Effect.orDie)),
    ([repo, patch]) => repo.update(d.route.id, patch)
  ))
  await other.dispose()

  proxy.point(TestDatabase.url)
  await Effect.runPromise(eventually(
    () => "never caught up",
    () => statusOf(process).then((status) => status.source === "database"),
    20_000
  ))
  const expected = "/a /c /d /while-away"
  assert.strictEqual(paths(await tableOf(process)), expected)
  await Effect.runPromise(
    eventually(() => "the follower never took the changes", () => paths(follower.table) === expected, 20_000)
  )
  return { process, follower, heard, stream, opened, logs }
}

describe("a Postgres-store process's snapshot", () => {
  it("is routed from while the database is down, then the database's table replaces it and writes work", async () => {
    const proxy = await TcpProxy.start(TestDatabase.url)
    onTestFinished(() => proxy.close())
    const name = table()
    const file = Path.join(folder(), "table.snapshot")
    // A refused connection falls back at once: the timeout bounds only a database that does not answer.
    const options: RouteTable.StartOptions = { snapshotFile: file, startTimeout: "30 seconds" }

    const first = host(proxy.url, name, options)
    for (const path of ["/a", "/b", "/c"]) assert.isTrue(Exit.isSuccess(await create(first, path)))
    assert.strictEqual((await statusOf(first)).source, "database")
    await Effect.runPromise(eventually(() => "no snapshot of the 3 routes written", () =>
      Fs.existsSync(file) &&
      Either.getOrThrow(SnapshotFile.decode(Fs.readFileSync(file), "postgres")).entries.length === 3))
    await first.dispose()

    // The database goes away; meanwhile (through another address) a route is added and one removed.
    proxy.point(undefined)
    const direct = host(TestDatabase.url, name, {})
    const added = await create(direct, "/while-away")
    assert.isTrue(Exit.isSuccess(added))
    const b = RouteTable.lookup(await tableOf(direct), "GET", "/b")
    assert.strictEqual(b._tag, "Found")
    await direct.runPromise(
      Effect.flatMap(RouteRepository.RouteRepository, (repo) => repo.remove((b as RouteTable.Found).route.id))
    )
    await direct.dispose()

    const logs: Array<string> = []
    const second = host(proxy.url, name, options, logs)
    const snapshotTable = await tableOf(second)
    const status = await statusOf(second)
    assert.strictEqual(status.source, "snapshot")
    assert.isFalse(status.reachable)
    assert.isNotNull(status.confirmedAt)
    assert.strictEqual(RouteTable.size(snapshotTable), 3)
    assert.strictEqual(RouteTable.lookup(snapshotTable, "GET", "/b")._tag, "Found")
    const refused = await create(second, "/refused")
    assert.isTrue(Exit.isFailure(refused))
    assert.include(JSON.stringify(refused), "StoreUnavailable")
    assert.isTrue(logs.some((line) => line.includes("routing from the snapshot")), logs.join("\n"))

    // The database answers: its table replaces the snapshot's, and writes work.
    proxy.point(TestDatabase.url)
    const deadline = Date.now() + 20_000
    while ((await statusOf(second)).source !== "database") {
      assert.isBelow(Date.now(), deadline, "never caught up")
      await new Promise((resolve) => setTimeout(resolve, 50))
    }
    const caughtUp = await tableOf(second)
    assert.strictEqual(caughtUp, snapshotTable, "the same table, its routes replaced")
    assert.strictEqual(RouteTable.lookup(caughtUp, "GET", "/while-away")._tag, "Found")
    assert.strictEqual(RouteTable.lookup(caughtUp, "GET", "/b")._tag, "NotFound")
    // The database's table is written at once, not only at its next change.
    const holds = (path: string) =>
      Either.getOrThrow(SnapshotFile.decode(Fs.readFileSync(file), "postgres")).entries.some((entry) =>
        entry.route.path === path
      )
    await Effect.runPromise(
      eventually(() => "the database's table was not written", () => holds("/while-away") && !holds("/b"))
    )
    assert.isTrue(Exit.isSuccess(await create(second, "/after")))
    assert.strictEqual(RouteTable.lookup(caughtUp, "GET", "/after")._tag, "Found")
    await Effect.runPromise(
      eventually(
        () => "the snapshot was not written again",
        () => Either.getOrThrow(SnapshotFile.decode(Fs.readFileSync(file), "postgres")).entries.length === 4
      )
    )
  }, 60_000)

  it(
    "resumes from its revision through the change log: its stream and its follower hear the changes, no reset",
    async () => {
      const { follower, heard, logs, opened, process, stream } = await throughOutage()
      assert.deepStrictEqual(heard.sort(), ["Delete", "Upsert", "Upsert"])
      // The same connection carried the changes as changes: never cut, never a reset.
      const after = stream.events.slice(opened).map((event) => event.event).sort()
      assert.deepStrictEqual(after, ["delete", "upsert", "upsert"])
      // A change's every field comes through the log: /d is disabled here and at the follower.
      for (const routes of [await tableOf(process), follower.table]) {
        const d = Array.from(routes.tree.byId.values()).find((entry) => entry.route.path === "/d")
        assert.strictEqual(d?.route.enabled, false)
      }
      assert.isTrue(logs.some((line) => line.includes("caught up through its change log")), logs.join("\n"))
      assert.isTrue(Exit.isSuccess(await create(process, "/after")))
      await Effect.runPromise(eventually(
        () => "the follower never heard /after",
        () => RouteTable.lookup(follower.table, "GET", "/after")._tag === "Found"
      ))
      assert.notInclude(heard, "reset")
    },
    60_000
  )

  it(
    "whose revision the change log no longer holds is replaced whole, its stream's clients resumed with a reset",
    async () => {
      // A log of one change: those made meanwhile prune the snapshot's revision from it.
      const { heard, logs, stream } = await throughOutage(1)
      await stream.ended // its history began again: the stream is cut, and a client resuming is sent the table whole
      assert.include(heard, "reset")
      assert.isTrue(logs.some((line) => line.includes("does not hold every change since")), logs.join("\n"))
    },
    60_000
  )

  it("absent, a first start routes from the bootstrap file until the database's table replaces it whole", async () => {
    const proxy = await TcpProxy.start(TestDatabase.url)
    onTestFinished(() => proxy.close())
    const name = table()
    const dir = folder()
    const bootstrapFile = Path.join(dir, "routes.json")
    Fs.writeFileSync(bootstrapFile, JSON.stringify({ routes: [{ method: "GET", path: "/boot", handler: "h" }] }))
    const direct = host(TestDatabase.url, name, {})
    assert.isTrue(Exit.isSuccess(await create(direct, "/stored")))
    await direct.dispose()

    proxy.point(undefined)
    const options: RouteTable.StartOptions = {
      snapshotFile: Path.join(dir, "table.snapshot"),
      bootstrapFile,
      startTimeout: "300 millis"
    }
    const booted = host(proxy.url, name, options)
    const status = await statusOf(booted)
    assert.strictEqual(status.source, "bootstrap")
    assert.isNull(status.confirmedAt)
    const routes = await tableOf(booted)
    assert.strictEqual(RouteTable.lookup(routes, "GET", "/boot")._tag, "Found")
    assert.strictEqual(RouteTable.lookup(routes, "GET", "/stored")._tag, "NotFound")
    await new Promise((resolve) => setTimeout(resolve, 1_200))
    assert.isFalse(Fs.existsSync(options.snapshotFile!), "a bootstrap table is never written as a snapshot")

    proxy.point(TestDatabase.url)
    const deadline = Date.now() + 20_000
    while ((await statusOf(booted)).source !== "database") {
      assert.isBelow(Date.now(), deadline, "never caught up")
      await new Promise((resolve) => setTimeout(resolve, 50))
    }
    assert.strictEqual(RouteTable.lookup(routes, "GET", "/boot")._tag, "NotFound")
    assert.strictEqual(RouteTable.lookup(routes, "GET", "/stored")._tag, "Found")
  }, 60_000)

  it("of another kind is refused with its reason, and the start fails as without one", async () => {
    const proxy = await TcpProxy.start(TestDatabase.url)
    onTestFinished(() => proxy.close())
    proxy.point(undefined)
    const file = Path.join(folder(), "table.snapshot")
    const content = { store: "0123456789abcdef", revision: 1, confirmedAt: new Date(), routes: [] }
    await Effect.runPromise(SnapshotFile.write(file, { ...content, kind: "follower" }))
    const logs: Array<string> = []
    const runtime = host(proxy.url, table(), { snapshotFile: file, startTimeout: "200 millis" }, logs)
    assert.isTrue(Exit.isFailure(await runtime.runPromiseExit(RouteTable.status)))
    assert.isTrue(
      logs.some((line) =>
        line.includes(`${file} is not routed from (written by a follower process, not a postgres's)`)
      ),
      logs.join("\n")
    )
  }, 30_000)
})

describe("npm start on Postgres with SNAPSHOT_FILE", () => {
  it(
    "starts from its snapshot with the database down, answers writes 503 store_unavailable, then catches up",
    async () => {
      const database = await TestDatabase.freshDatabase()
      onTestFinished(() => database.drop())
      const proxy = await TcpProxy.start(database.url)
      onTestFinished(() => proxy.close())
      const token = "admin-token-for-the-snapshot-test"
      const env = {
        DATABASE_URL: proxy.url,
        SNAPSHOT_FILE: Path.join(folder(), "table.snapshot"),
        DATABASE_START_TIMEOUT_MS: "1000",
        ROUTING_ADMIN_TOKENS: token,
        DASHBOARD: "0"
      }
      const headers = { authorization: `Bearer ${token}`, "content-type": "application/json" }
      const post = (origin: string, path: string) =>
        fetch(`${origin}/v1/routing`, {
          method: "POST",
          headers,
          body: JSON.stringify({ method: "GET", path, handler: "echo" })
        })
      const ready = async (origin: string) =>
        (await (await fetch(`${origin}/readyz`)).json()) as Record<string, unknown>

      const first = await Spawned.start("examples/server.ts", env)
      try {
        assert.strictEqual((await post(first.origin, "/hello")).status, 201)
      } finally {
        assert.strictEqual(await first.stop(), 0) // its last snapshot is written at shutdown
      }

      proxy.point(undefined)
      const second = await Spawned.start("examples/server.ts", env)
      onTestFinished(() => void second.stop("SIGKILL"))
      const fromSnapshot = await ready(second.origin)
      assert.strictEqual(fromSnapshot.source, "snapshot", JSON.stringify(fromSnapshot))
      assert.isNumber(fromSnapshot.stalenessMillis)
      assert.strictEqual((await fetch(`${second.origin}/hello`)).status, 200)
      const refused = await post(second.origin, "/refused")
      assert.strictEqual(refused.status, 503)
      assert.strictEqual(((await refused.json()) as { code: string }).code, "store_unavailable")
      // The admin API's reads answer as the store does when it cannot be reached.
      assert.strictEqual((await fetch(`${second.origin}/v1/routing`, { headers })).status, 503)

      proxy.point(database.url)
      const deadline = Date.now() + 30_000
      while ((await ready(second.origin)).source !== "database") {
        assert.isBelow(Date.now(), deadline, `never caught up:\n${second.output()}`)
        await new Promise((resolve) => setTimeout(resolve, 100))
      }
      assert.strictEqual((await post(second.origin, "/after")).status, 201)
      assert.strictEqual((await fetch(`${second.origin}/after`)).status, 200)
    },
    120_000
  )
})
