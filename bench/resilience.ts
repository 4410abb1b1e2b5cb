/**
 * `npm run bench:resilience` (docs/resilience.md; figures in docs/performance.md):
 * - start to serving: an `npm start` follower whose registry is down, started with a snapshot of 10,000 and of
 *   100,000 routes, from its spawn to its first answer from a stored route; beside it, the host's own start-up (a
 *   memory-store `npm start`, spawn to listening), and the library's part alone in this process (wall and CPU time);
 * - the snapshot file at 100,000 routes: bytes per route, the time to write it (encode, fsync, rename) and to read it;
 * - what a follower's writer pays per snapshot of 10,000 and of 100,000 routes: CPU time (every thread), time on the
 *   event loop (the request path's share) and wall time, for its first write and for writes after 100 changes at the
 *   table's end or at random places;
 * - routing p50 and p99 on a follower of 10,000 routes while its registry takes a stream of changes (`--rate`, default
 *   100 a second), `--rounds R` (default 3) rounds of `--seconds S` (default 10) without and R with SNAPSHOT_FILE,
 *   taken in turn, and the medians of each; `--warmup W` milliseconds of requests (default 0) before each round counts;
 * - `--kills N` (default 200): the kill loop of test/reliability/killed.test.ts, `--lanes L` followers (default 4)
 *   living and killed at once, each with a snapshot file of its own, while one writer pours changes in; each follower
 *   is killed at a random instant up to `--life` milliseconds (default 2,000) after it listens.
 *
 * Run `npm run bench:resilience` (it builds first); `--kills 0` skips the kill loop; `--start-only`, `--writes-only`,
 * `--routing-only`, `--kills-only` run one part alone.
 */
import { type ChildProcess, spawn } from "node:child_process"
import * as Fs from "node:fs"
import * as Http from "node:http"
import * as Os from "node:os"
import * as Path from "node:path"
import { performance } from "node:perf_hooks"
import { fileURLToPath } from "node:url"
import * as SnapshotFile from "../src/internal/table/snapshotFile.js"
import * as Route from "../src/Route.js"
import * as Compiled from "../test/utils/compiled.js"
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

// `npm start` (through tsx, as users run it), or `script` (the kill loop's compiled host).
const start = (extra: Record<string, string>, script?: string) => {
  const child = spawn(process.execPath, script === undefined ? [...npmStartCommand().args] : [script], {
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

// The CPU time (user and system) a child used so far, in milliseconds: what its start costs whatever the load, where
// its wall time is mostly its wait for a core on a loaded machine. Linux's /proc, in clock ticks of 10 ms.
const cpuOf = (child: ChildProcess): number => {
  const fields = Fs.readFileSync(`/proc/${child.pid}/stat`, "utf8").split(") ")[1]!.split(" ")
  return (Number(fields[11]) + Number(fields[12])) * 10
}

interface Took {
  readonly wall: number
  readonly cpu: number
}

const medianOf = (runs: ReadonlyArray<Took>): Took => ({
  wall: median(runs.map((run) => run.wall)),
  cpu: median(runs.map((run) => run.cpu))
})

// Spawn to the first 200 from a stored route, with the registry down (a port nothing listens on).
const startToServing = async (file: string, count: number): Promise<Took> => {
  const began = performance.now()
  const child = start({ FOLLOW_URL: "http://127.0.0.1:9", FOLLOW_TOKEN: TOKEN, SNAPSHOT_FILE: file })
  const { origin } = await listeningOrigin(child, "follower", 600_000)
  while (true) {
    const answer = await fetch(`${origin}/b/${count - 1}/x`).catch(() => undefined)
    if (answer?.status === 200) break
    await pause(2)
  }
  const took = { wall: performance.now() - began, cpu: cpuOf(child) }
  await stop(child)
  return took
}

// The library's part alone, in this process: RouteFollower.layer built from the snapshot (registry down) to a lookup
// that finds the last route, the host's own start-up left out. Its CPU time (this process's, user and system) beside
// its wall time: on a loaded machine the wall time is mostly waiting for a core.
const layerFromSnapshot = async (file: string, count: number): Promise<Took> => {
  const { Effect, Layer, Redacted } = await import("effect")
  const RouteFollower = await import("../src/RouteFollower.js")
  const RouteTable = await import("../src/RouteTable.js")
  const began = performance.now()
  const cpu = process.cpuUsage()
  const table = await Effect.runPromise(Effect.scoped(Effect.gen(function*() {
    const context = yield* Layer.build(
      RouteFollower.layer({ url: "http://127.0.0.1:9", token: Redacted.make(TOKEN), snapshotFile: file })
    )
    const table = yield* Effect.provide(RouteTable.RouteTable, context)
    return RouteTable.lookup(table, "GET", `/b/${count - 1}/x`)._tag
  })))
  const used = process.cpuUsage(cpu)
  if (table !== "Found") throw new Error(`the last route is not in the table: ${table}`)
  return { wall: performance.now() - began, cpu: (used.user + used.system) / 1000 }
}

const hostStart = async (): Promise<Took> => {
  const began = performance.now()
  const child = start({})
  await listeningOrigin(child, "host", 600_000)
  const took = { wall: performance.now() - began, cpu: cpuOf(child) }
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
    bytes = (await Effect.runPromise(Effect.orDie(SnapshotFile.write(file, content)))).bytes
    writes.push(performance.now() - began)
    const read = performance.now()
    const decoded = await Effect.runPromise(SnapshotFile.read(file, "follower"))
    reads.push(performance.now() - read)
    if (Either.isLeft(decoded)) throw new Error(decoded.left)
  }
  return { bytesPerRoute: bytes / count, writeMillis: median(writes), readMillis: median(reads) }
}

interface WriteCost {
  /** The process's CPU time, every thread (the event loop's work, the thread pool's hash and I/O). */
  readonly cpu: number
  /** The event loop's active time (the capture of the table and the write's slices): what the request path gives up. */
  readonly busy: number
  readonly wall: number
}

const medianCost = (costs: ReadonlyArray<WriteCost>): WriteCost => ({
  cpu: median(costs.map((cost) => cost.cpu)),
  busy: median(costs.map((cost) => cost.busy)),
  wall: median(costs.map((cost) => cost.wall))
})

// What a follower's writer pays per snapshot of `count` routes, held as its table holds them (a Map by id, captured
// with Array.from): its first write (every line made), then 10 writes after 100 changes each, `at` the table's end
// (creates, and deletes of the latest: the routing rounds' stream) or at random places (updates); medians of the 10.
const writeCost = async (count: number, at: "end" | "random") => {
  const { Effect } = await import("effect")
  const file = Path.join(dir, "cost.snapshot")
  const table = new Map(routes(count).map((route) => [route.id as string, route]))
  const kept = SnapshotFile.kept()
  let revision = count
  let latest: Array<string> = []
  const once = async (): Promise<WriteCost> => {
    const cpu = process.cpuUsage()
    const loop = performance.eventLoopUtilization()
    const began = performance.now()
    const content: SnapshotFile.Content = {
      kind: "follower",
      store: "0123456789abcdef",
      revision,
      confirmedAt: new Date(),
      routes: Array.from(table.values())
    }
    await Effect.runPromise(Effect.orDie(SnapshotFile.write(file, content, kept)))
    const used = process.cpuUsage(cpu)
    const busy = performance.eventLoopUtilization(loop).active
    return { cpu: (used.user + used.system) / 1000, busy, wall: performance.now() - began }
  }
  const change = () => {
    const ids = [...table.keys()]
    const next: Array<string> = []
    for (let i = 0; i < 100; i++) {
      revision++
      const id = at === "end" ? Route.makeRouteId(Date.now()) : ids[Math.floor(Math.random() * ids.length)]!
      const before = table.get(id)
      if (at === "end") next.push(id)
      table.set(
        id,
        new Route.StoredRoute({
          id: id as Route.RouteId,
          method: "GET" as Route.HttpMethod,
          path: (before?.path ?? `/c/${revision}/:p`) as Route.RoutePath,
          middleware: [],
          handler: "echo" as Route.HandlerName,
          createdAt: new Date(),
          revision
        })
      )
    }
    for (const id of latest) table.delete(id)
    latest = next
  }
  const first = await once()
  const later: Array<WriteCost> = []
  for (let i = 0; i < 10; i++) {
    change()
    later.push(await once())
  }
  return { first, later: medianCost(later) }
}

const costText = (cost: WriteCost) =>
  `${fixed(cost.cpu)} ms CPU, ${fixed(cost.busy)} ms on the event loop, ${fixed(cost.wall)} ms wall`

// One request on a connection of its own (no keep-alive): a loaded registry closing an idle kept-alive connection as
// the next request goes out fails that request (`other side closed`), and a create may or may not have been applied.
const request = (origin: string, method: string, path: string, body?: unknown) =>
  new Promise<{ status: number; text: string }>((resolve, reject) => {
    const sent = Http.request(origin + path, {
      method,
      agent: false,
      headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" }
    }, (response) => {
      let text = ""
      response.setEncoding("utf8")
      response.on("data", (chunk: string) => text += chunk)
      response.on("end", () => resolve({ status: response.statusCode ?? 0, text }))
    })
    sent.on("error", reject)
    sent.end(body === undefined ? undefined : JSON.stringify(body))
  })

const create = async (origin: string, path: string): Promise<string> => {
  const answer = await request(origin, "POST", "/v1/routing", { method: "GET", path, middleware: [], handler: "echo" })
  if (answer.status !== 201) throw new Error(`create ${path}: ${answer.status} ${answer.text}`)
  return (JSON.parse(answer.text) as { id: string }).id
}

const SEEDED = 10_000

// A registry holding SEEDED routes, and a writer changing it `rate` times a second (a create, then the delete of the
// oldest it made past 50, so the table keeps its size across rounds) until stopped.
const changingRegistry = async (rate: number) => {
  const registry = start({})
  const { origin } = await listeningOrigin(registry, "registry", 600_000)
  for (let i = 0; i < SEEDED; i += 50) {
    await Promise.all(Array.from({ length: 50 }, (_, j) => create(origin, `/seed/${i + j}/:p`)))
  }
  let running = true
  let changes = 0
  const live: Array<string> = []
  const writer = (async () => {
    for (let n = 0; running; n++) {
      const began = performance.now()
      if (live.length >= 50) {
        const removed = await request(origin, "DELETE", `/v1/routing/${live.shift()!}`)
        if (removed.status !== 204) throw new Error(`delete: ${removed.status} ${removed.text}`)
      } else live.push(await create(origin, `/live/${n}/:p`))
      changes++
      await pause(Math.max(0, 1000 / rate - (performance.now() - began)))
    }
  })()
  return {
    origin,
    changes: () => changes,
    stop: async () => {
      running = false
      await writer
      await stop(registry)
    }
  }
}

// Routing latency on a follower of `upstream` for `seconds`, with or without a snapshot file (a new one each round),
// 4 clients on kept-alive connections. The clients run `warmup` milliseconds before the latencies count (`--warmup`,
// default 0): a follower's first snapshot serialises every route once, a cost of its start rather than of its writes.
const routingRound = async (upstream: string, withSnapshot: boolean, seconds: number, round: number) => {
  const follower = start({
    FOLLOW_URL: upstream,
    FOLLOW_TOKEN: TOKEN,
    ...(withSnapshot ? { SNAPSHOT_FILE: Path.join(dir, `routing-${round}.snapshot`) } : {})
  })
  const { origin } = await listeningOrigin(follower, "follower", 600_000)
  while ((await fetch(`${origin}/seed/${SEEDED - 1}/x`).then((answer) => answer.status)) !== 200) await pause(50)
  const latencies: Array<number> = []
  const from = performance.now() + option("warmup", 0)
  const until = from + seconds * 1000
  const client = async () => {
    while (performance.now() < until) {
      const began = performance.now()
      const answer = await fetch(`${origin}/seed/${Math.floor(Math.random() * SEEDED)}/x`)
      await answer.arrayBuffer()
      if (began >= from) latencies.push(performance.now() - began)
    }
  }
  await Promise.all([client(), client(), client(), client()])
  await stop(follower)
  return { p50: percentile(latencies, 0.5), p99: percentile(latencies, 0.99), requests: latencies.length }
}

const fixed = (n: number) => n.toFixed(1)

const main = async () => {
  console.log(`node ${process.version}, ${Os.cpus().length} cores, load average ${Os.loadavg()[0]!.toFixed(1)}`)
  const only = ["start", "writes", "routing", "kills"].find((part) => process.argv.includes(`--${part}-only`))
  if (only === undefined || only === "start") await startFigures()
  if (only === undefined || only === "writes") await writeFigures()
  if (only === undefined || only === "routing") await routingFigures(option("rounds", 3), option("seconds", 10))
  if (only === undefined || only === "kills") await killLoop(option("kills", 200), option("lanes", 4))
  console.log(`load average at the end ${Os.loadavg()[0]!.toFixed(1)}`)
}

const startFigures = async () => {
  const own = medianOf([await hostStart(), await hostStart(), await hostStart()])
  console.log(
    `host's own start-up (memory store, spawn to listening): ${fixed(own.wall)} ms wall, ${fixed(own.cpu)} ms CPU`
  )
  for (const count of [10_000, 100_000]) {
    const file = await snapshotOf(count)
    const inProcess = medianOf([
      await layerFromSnapshot(file, count),
      await layerFromSnapshot(file, count),
      await layerFromSnapshot(file, count)
    ])
    console.log(
      `RouteFollower.layer from a snapshot of ${count} routes, registry down, to a lookup: ` +
        `${fixed(inProcess.wall)} ms wall, ${fixed(inProcess.cpu)} ms CPU`
    )
    const took = medianOf([
      await startToServing(file, count),
      await startToServing(file, count),
      await startToServing(file, count)
    ])
    console.log(
      `start to serving ${count} routes from a snapshot, registry down: ${fixed(took.wall)} ms wall ` +
        `(${fixed(took.wall - own.wall)} ms beyond the host's own start-up), ${fixed(took.cpu)} ms CPU ` +
        `(${fixed(took.cpu - own.cpu)} ms beyond)`
    )
  }
  const at = await writeAndRead(100_000)
  console.log(
    `snapshot of 100,000 routes: ${fixed(at.bytesPerRoute)} bytes/route, write ${fixed(at.writeMillis)} ms ` +
      `(encode, fsync, rename, folder fsync), read and check ${fixed(at.readMillis)} ms`
  )
}

const writeFigures = async () => {
  for (const count of [10_000, 100_000]) {
    for (const at of ["end", "random"] as const) {
      const cost = await writeCost(count, at)
      console.log(
        `snapshot write of ${count} routes: the first ${costText(cost.first)}; after 100 changes ` +
          `${at === "end" ? "at the end" : "at random places"} (median of 10) ${costText(cost.later)}`
      )
    }
  }
}

// Rounds without and with snapshots taken in turn against one registry under one stream of changes, so a load that
// drifts over the run weighs on both alike; the medians of the rounds' figures are what compare.
const routingFigures = async (rounds: number, seconds: number) => {
  const rate = option("rate", 100)
  const registry = await changingRegistry(rate)
  const figures = {
    without: [] as Array<{ p50: number; p99: number }>,
    with: [] as Array<{ p50: number; p99: number }>
  }
  for (let round = 0; round < 2 * rounds; round++) {
    const withSnapshot = round % 2 === 1
    const before = registry.changes()
    const r = await routingRound(registry.origin, withSnapshot, seconds, round)
    ;(withSnapshot ? figures.with : figures.without).push(r)
    console.log(
      `  round ${round + 1}, ${withSnapshot ? "with" : "without"} SNAPSHOT_FILE: ${registry.changes() - before} ` +
        `changes, p50 ${fixed(r.p50)} ms, p99 ${fixed(r.p99)} ms over ${r.requests} requests, ` +
        `load average ${Os.loadavg()[0]!.toFixed(1)}`
    )
  }
  await registry.stop()
  for (const [name, runs] of Object.entries(figures)) {
    console.log(
      `routing ${name} SNAPSHOT_FILE, ${SEEDED} routes, changes at up to ${rate}/s, ${rounds} rounds of ${seconds} s: ` +
        `median p50 ${fixed(median(runs.map((r) => r.p50)))} ms, median p99 ${fixed(median(runs.map((r) => r.p99)))} ms`
    )
  }
}

// Whether a process runs: a compiled copy of another run still running is left alone.
const alive = (pid: number) => {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

// The kill loop's processes run the sources compiled to JavaScript, as test/reliability/killed.test.ts's do: it checks
// what a kill leaves on disk, not how fast a host starts, and a host through tsx costs twice the CPU to start, which
// on a loaded machine is minutes per follower. A follower may take that long to listen all the same: 10 minutes.
const killLoop = async (kills: number, lanes: number) => {
  if (kills > 0) {
    const compiled = await Compiled.compile(fileURLToPath(new URL("..", import.meta.url)), alive)
    process.on("exit", () => Fs.rmSync(compiled.directory, { recursive: true, force: true }))
    // Its real path: the host starts only when it is the main module, by the path its bundle was written to.
    const host = Fs.realpathSync(Path.join(compiled.directory, "examples", "server.js"))
    const registry = start({}, host)
    const { origin } = await listeningOrigin(registry, "registry", 600_000)
    const began = performance.now()
    const outcome = await KillLoop.run({
      kills,
      token: TOKEN,
      registry: origin,
      snapshotFile: Path.join(dir, "killed.snapshot"),
      maxLifeMillis: option("life", 2_000),
      lanes,
      report: (line) => console.log(`  ${line}`),
      startFollower: async (snapshotFile) => {
        const child = start({ FOLLOW_URL: origin, FOLLOW_TOKEN: TOKEN, SNAPSHOT_FILE: snapshotFile }, host)
        const listening = await listeningOrigin(child, "follower", 600_000)
        return { ...listening, kill: () => stop(child) }
      }
    })
    await stop(registry)
    console.log(
      `kill -9 loop: ${outcome.kills} kills (${lanes} followers at once) in ` +
        `${fixed((performance.now() - began) / 1000)} s, ${outcome.revisions} revisions written meanwhile; ` +
        `${outcome.checked} snapshots found complete and equal to the registry's table at their revision ` +
        `(${outcome.snapshotRevisions} distinct revisions), ${outcome.fromSnapshot} restarts routed from one; ` +
        `refused, by reason: ${JSON.stringify(outcome.refused)}; problems: ${outcome.problems.length}`
    )
    for (const problem of outcome.problems.slice(0, 10)) console.log(`  ${problem}`)
  }
}

main().then(() => process.exit(0), (error: unknown) => {
  console.error(error)
  process.exit(1)
})
