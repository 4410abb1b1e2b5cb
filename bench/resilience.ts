/**
 * `npm run bench:resilience` (docs/resilience.md; figures in docs/performance.md):
 * - start to serving: an `npm start` follower whose registry is down, started with a snapshot of 10,000 and of
 *   100,000 routes, from its spawn to its first answer from a stored route; beside it, the host's own start-up (a
 *   memory-store `npm start`, spawn to listening);
 * - the snapshot file at 100,000 routes: bytes per route, the time to write it (encode, fsync, rename) and to read it;
 * - routing p99 on a follower with and without SNAPSHOT_FILE while its registry takes a stream of changes;
 * - `--kills N` (default 200): the kill loop of test/reliability/killed.test.ts, `--lanes L` followers (default 4)
 *   living and killed at once, each with a snapshot file of its own, while one writer pours changes in.
 *
 * Run `npm run bench:resilience` (it builds first); `--kills 0` skips the kill loop, `--kills-only` runs it alone.
 */
import { type ChildProcess, spawn } from "node:child_process"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { performance } from "node:perf_hooks"
import * as SnapshotFile from "../src/internal/table/snapshotFile.js"
import * as Route from "../src/Route.js"
import * as KillLoop from "../test/utils/killLoop.js"
import { listeningOrigin, npmStartCommand, npmStartEnv } from "./run.js"

const TOKEN = "resilience-bench-token"
const tokens = { admin: TOKEN, read: `${TOKEN}-read` }
const dir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "route-registry-resilience-"))
const children: Array<ChildProcess> = []
process.on("exit", () => {
  for (const child of children) child.kill("SIGKILL")
  Fs.rmSync(dir, { recursive: true, force: true })
})

const option = (name: string, fallback: number): number => {
  const i = process.argv.indexOf(`--${name}`)
  return i === -1 ? fallback : Number(process.argv[i + 1])
}

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))
const median = (values: ReadonlyArray<number>) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!
const percentile = (values: ReadonlyArray<number>, p: number) =>
  [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor(values.length * p))]!

const start = (extra: Record<string, string>) => {
  const child = spawn(process.execPath, [...npmStartCommand().args], {
    env: npmStartEnv(tokens, { DASHBOARD: "0", ...extra }),
    stdio: ["ignore", "pipe", "pipe"]
  })
  children.push(child)
  return child
}

const stop = (child: ChildProcess) =>
  new Promise<void>((resolve) => {
    if (child.exitCode !== null) return resolve()
    child.once("exit", () => resolve())
    child.kill("SIGKILL")
  })

const routes = (count: number): Array<Route.StoredRoute> => {
  const at = Date.now()
  return Array.from({ length: count }, (_, i) =>
    new Route.StoredRoute({
      id: Route.makeRouteId(at),
      method: "GET" as Route.HttpMethod,
      path: `/b/${i}/:p` as Route.RoutePath,
      middleware: [] as Array<Route.MiddlewareName>,
      handler: "echo" as Route.HandlerName,
      createdAt: new Date(at),
      revision: i + 1
    }))
}

const snapshotOf = async (count: number): Promise<string> => {
  const file = Path.join(dir, `${count}.snapshot`)
  const content: SnapshotFile.Content = {
    kind: "follower",
    store: "0123456789abcdef",
    revision: count,
    confirmedAt: new Date(),
    routes: routes(count)
  }
  const { Effect } = await import("effect")
  await Effect.runPromise(Effect.either(SnapshotFile.write(file, content)))
  return file
}

// Spawn to the first 200 from a stored route, with the registry down (a port nothing listens on).
const startToServing = async (file: string, count: number): Promise<number> => {
  const began = performance.now()
  const child = start({ FOLLOW_URL: "http://127.0.0.1:9", FOLLOW_TOKEN: TOKEN, SNAPSHOT_FILE: file })
  const { origin } = await listeningOrigin(child, "follower", 120_000)
  while (true) {
    const answer = await fetch(`${origin}/b/${count - 1}/x`).catch(() => undefined)
    if (answer?.status === 200) break
    await pause(2)
  }
  const took = performance.now() - began
  await stop(child)
  return took
}

// The library's part alone, in this process: RouteFollower.layer built from the snapshot (registry down) to a lookup
// that finds the last route, the host's own start-up left out.
const layerFromSnapshot = async (file: string, count: number): Promise<number> => {
  const { Effect, Layer, Redacted } = await import("effect")
  const RouteFollower = await import("../src/RouteFollower.js")
  const RouteTable = await import("../src/RouteTable.js")
  const began = performance.now()
  const table = await Effect.runPromise(Effect.scoped(Effect.gen(function*() {
    const context = yield* Layer.build(
      RouteFollower.layer({ url: "http://127.0.0.1:9", token: Redacted.make(TOKEN), snapshotFile: file })
    )
    const table = yield* Effect.provide(RouteTable.RouteTable, context)
    return RouteTable.lookup(table, "GET", `/b/${count - 1}/x`)._tag
  })))
  if (table !== "Found") throw new Error(`the last route is not in the table: ${table}`)
  return performance.now() - began
}

const hostStart = async (): Promise<number> => {
  const began = performance.now()
  const child = start({})
  await listeningOrigin(child, "host", 120_000)
  const took = performance.now() - began
  await stop(child)
  return took
}

const writeAndRead = async (count: number) => {
  const { Effect, Either } = await import("effect")
  const file = Path.join(dir, "write.snapshot")
  const content: SnapshotFile.Content = {
    kind: "follower",
    store: "0123456789abcdef",
    revision: count,
    confirmedAt: new Date(),
    routes: routes(count)
  }
  const writes: Array<number> = []
  const reads: Array<number> = []
  let bytes = 0
  for (let i = 0; i < 5; i++) {
    const began = performance.now()
    bytes = await Effect.runPromise(Effect.orDie(SnapshotFile.write(file, content)))
    writes.push(performance.now() - began)
    const read = performance.now()
    const decoded = await Effect.runPromise(SnapshotFile.read(file, "follower"))
    reads.push(performance.now() - read)
    if (Either.isLeft(decoded)) throw new Error(decoded.left)
  }
  return { bytesPerRoute: bytes / count, writeMillis: median(writes), readMillis: median(reads) }
}

// Routing latency on a follower of a registry taking `rate` changes a second, with or without a snapshot file.
const routingUnderChanges = async (withSnapshot: boolean, seconds: number, rate: number) => {
  const registry = start({})
  const { origin: upstream } = await listeningOrigin(registry, "registry", 120_000)
  const post = (path: string) =>
    fetch(`${upstream}/v1/routing`, {
      method: "POST",
      headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" },
      body: JSON.stringify({ method: "GET", path, middleware: [], handler: "echo" })
    }).then((answer) => answer.arrayBuffer())
  for (let i = 0; i < 10_000; i += 50) {
    await Promise.all(Array.from({ length: 50 }, (_, j) => post(`/seed/${i + j}/:p`)))
  }
  const follower = start({
    FOLLOW_URL: upstream,
    FOLLOW_TOKEN: TOKEN,
    ...(withSnapshot ? { SNAPSHOT_FILE: Path.join(dir, "routing.snapshot") } : {})
  })
  const { origin } = await listeningOrigin(follower, "follower", 120_000)
  let running = true
  let n = 0
  const writer = (async () => {
    while (running) {
      const began = performance.now()
      await post(`/live/${n++}/:p`)
      await pause(Math.max(0, 1000 / rate - (performance.now() - began)))
    }
  })()
  const latencies: Array<number> = []
  const until = performance.now() + seconds * 1000
  const client = async () => {
    while (performance.now() < until) {
      const began = performance.now()
      const answer = await fetch(`${origin}/seed/${Math.floor(Math.random() * 10_000)}/x`)
      await answer.arrayBuffer()
      latencies.push(performance.now() - began)
    }
  }
  await Promise.all([client(), client(), client(), client()])
  running = false
  await writer
  await Promise.all([stop(follower), stop(registry)])
  return { p50: percentile(latencies, 0.5), p99: percentile(latencies, 0.99), requests: latencies.length, changes: n }
}

const fixed = (n: number) => n.toFixed(1)

const main = async () => {
  console.log(`node ${process.version}, ${Os.cpus().length} cores, load average ${Os.loadavg()[0]!.toFixed(1)}`)
  if (!process.argv.includes("--kills-only")) await measures()
  await killLoop(option("kills", 200), option("lanes", 4))
  console.log(`load average at the end ${Os.loadavg()[0]!.toFixed(1)}`)
}

const measures = async () => {
  const own = median([await hostStart(), await hostStart(), await hostStart()])
  console.log(`host's own start-up (memory store, spawn to listening): ${fixed(own)} ms`)
  for (const count of [10_000, 100_000]) {
    const file = await snapshotOf(count)
    const inProcess = median([
      await layerFromSnapshot(file, count),
      await layerFromSnapshot(file, count),
      await layerFromSnapshot(file, count)
    ])
    console.log(
      `RouteFollower.layer from a snapshot of ${count} routes, registry down, to a lookup: ${fixed(inProcess)} ms`
    )
    const took = median([
      await startToServing(file, count),
      await startToServing(file, count),
      await startToServing(file, count)
    ])
    console.log(
      `start to serving ${count} routes from a snapshot, registry down: ${fixed(took)} ms ` +
        `(${fixed(took - own)} ms beyond the host's own start-up)`
    )
  }
  const at = await writeAndRead(100_000)
  console.log(
    `snapshot of 100,000 routes: ${fixed(at.bytesPerRoute)} bytes/route, write ${fixed(at.writeMillis)} ms ` +
      `(encode, fsync, rename, folder fsync), read and check ${fixed(at.readMillis)} ms`
  )
  const seconds = option("seconds", 20)
  const rate = option("rate", 100)
  for (const withSnapshot of [false, true]) {
    const r = await routingUnderChanges(withSnapshot, seconds, rate)
    console.log(
      `routing ${
        withSnapshot ? "with" : "without"
      } SNAPSHOT_FILE, 10,000 routes, ${r.changes} changes in ${seconds} s: ` +
        `p50 ${fixed(r.p50)} ms, p99 ${fixed(r.p99)} ms over ${r.requests} requests`
    )
  }
}

const killLoop = async (kills: number, lanes: number) => {
  if (kills > 0) {
    const registry = start({})
    const { origin } = await listeningOrigin(registry, "registry", 120_000)
    const began = performance.now()
    const outcome = await KillLoop.run({
      kills,
      token: TOKEN,
      registry: origin,
      snapshotFile: Path.join(dir, "killed.snapshot"),
      maxLifeMillis: 2_000,
      lanes,
      report: (line) => console.log(`  ${line}`),
      startFollower: async (snapshotFile) => {
        const child = start({ FOLLOW_URL: origin, FOLLOW_TOKEN: TOKEN, SNAPSHOT_FILE: snapshotFile })
        const listening = await listeningOrigin(child, "follower", 120_000)
        return { ...listening, kill: () => stop(child) }
      }
    })
    await stop(registry)
    console.log(
      `kill -9 loop: ${outcome.kills} kills (${lanes} followers at once) in ` +
        `${fixed((performance.now() - began) / 1000)} s, ${outcome.revisions} revisions written meanwhile; ` +
        `${outcome.checked} snapshots found complete and equal to the registry's table at their revision ` +
        `(${outcome.snapshotRevisions} distinct revisions), ${outcome.fromSnapshot} restarts routed from one; ` +
        `problems: ${outcome.problems.length}`
    )
    for (const problem of outcome.problems.slice(0, 10)) console.log(`  ${problem}`)
  }
}

main().then(() => process.exit(0), (error: unknown) => {
  console.error(error)
  process.exit(1)
})
