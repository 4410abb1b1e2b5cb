/**
 * A fleet of followers (docs/scaling-out.md, "A fleet of followers"): `npm run bench:fleet [-- --followers 1000] [--workers 4] [--rates 10,100]
 * [--duration 10] [--relay on|off] [--stores memory,postgres] [--cpu-prof DIR] [--seed 100]`.
 *
 * One registry process runs `npm start`'s exact command (the example host on `node:http`, the compiled library), on
 * the memory store, and on the Postgres store in DATABASE_URL when it is set (the benchmark drops the store's tables
 * there before and after, so give it a database of its own). `--followers` follower tables
 * (`RouteFollower.layer`, each with its own stream) are spread over `--workers` processes
 * (bench/fleet-worker.ts). This process makes the changes through the registry's HTTP API at each rate, open loop (a
 * change does not wait for the last), half creates, three tenths updates, a fifth deletes (bench/plan.ts), and takes
 * the time each answer (201, 200, 204) arrives; every follower table records when it applied each change (its
 * change history's listener, called as the table takes it). Latency is from the one to the other; clocks are
 * `performance.timeOrigin + performance.now()` in every process, all on one machine. The first second of every run
 * is warm-up and not measured.
 *
 * Per store: the registry's memory (after two full collections) and its database connections with no follower and
 * with every follower connected and idle; then each rate with the followers on the registry ("direct"), with no
 * follower ("registry alone": what the writes themselves cost), and with the followers on a relay (`npm start` with
 * FOLLOW_URL on the registry, serving the stream onward; `--relay off` skips it). Registry CPU is `process.cpuUsage`
 * of the registry process over each run, read through a probe preloaded into it (bench/fleet-probe.ts); database
 * connections are counted in `pg_stat_activity` for the database (every 100 ms during a run: the most is shown).
 * Results go to bench/results/fleet-<time>.json; Markdown tables are printed.
 *
 * A rolling restart (`--rolling on`, on the Postgres store; docs/scaling-out.md, "Cursors across processes and
 * restarts"): two registry processes on one database, each with half of the followers, are restarted one after the
 * other (SIGTERM, `--rolling-changes` changes made through the other one while it is down, then started again on its
 * port); measured are the resets the followers took (target 0), the time from the first stop until every follower
 * holds the newest revision, and the bytes the registries sent meanwhile against a full snapshot for each follower
 * (what restarts cost when every cursor was answered with a reset), and the transactions the database committed
 * meanwhile (`pg_stat_database`).
 */
import * as PgClient from "@effect/sql-pg/PgClient"
import { Effect, Redacted } from "effect"
import { type ChildProcess, fork, spawn, spawnSync } from "node:child_process"
import { mkdirSync, writeFileSync } from "node:fs"
import { type AddressInfo, createServer } from "node:net"
import { cpus, loadavg } from "node:os"
import { fileURLToPath } from "node:url"
import Pg from "pg"
import * as PgRouteRepository from "route-registry/PgRouteRepository"
import type { Probed } from "./fleet-probe.js"
import type { Command, Expected, Report } from "./fleet-worker.js"
import { seedInput } from "./peers/shared.js"
import { type Change, digest, percentile, plan } from "./plan.js"
import { printMarkdownTable } from "./print.js"
import { listeningOrigin, npmStartCommand, npmStartEnv, prober } from "./run.js"

const ROOT = fileURLToPath(new URL("..", import.meta.url))
const ADMIN_TOKEN = "fleet-admin-token"
const READ_TOKEN = "fleet-read-token"

// ---------------------------------------------------------------------------------------------------------------
// Options
// ---------------------------------------------------------------------------------------------------------------

const argv = process.argv.slice(2)
const option = (name: string): string | undefined => {
  const i = argv.indexOf(`--${name}`)
  return i === -1 ? undefined : argv[i + 1]
}
const whole = (name: string, fallback: number): number => {
  const value = Number(option(name) ?? fallback)
  if (!Number.isInteger(value) || value < 1) throw new Error(`--${name} needs a whole number from 1`)
  return value
}
const DATABASE_URL = process.env.DATABASE_URL || undefined
const config = {
  followers: whole("followers", 1_000),
  workers: whole("workers", 4),
  rates: (option("rates") ?? "10,100").split(",").map(Number),
  seconds: whole("duration", 10),
  relay: (option("relay") ?? "on") === "on",
  /** A directory for the registry's and the relay's CPU profiles (`node --cpu-prof`), written when they stop. */
  cpuProf: option("cpu-prof"),
  stores: (option("stores") ?? (DATABASE_URL === undefined ? "memory" : "memory,postgres")).split(","),
  rolling: (option("rolling") ?? "off") === "on",
  rollingChanges: whole("rolling-changes", 50),
  /** Routes stored before any follower connects: what every snapshot carries. */
  seed: whole("seed", 100)
}
if (config.rates.some((rate) => !(rate > 0))) throw new Error("--rates needs positive numbers: --rates 10,100")
if (config.stores.some((store) => store !== "memory" && store !== "postgres")) {
  throw new Error("--stores takes memory and postgres")
}
if (config.rolling && DATABASE_URL === undefined) throw new Error("--rolling on needs DATABASE_URL")
if (config.stores.includes("postgres") && DATABASE_URL === undefined) {
  throw new Error("--stores postgres needs DATABASE_URL")
}

// The first second of every run warms the processes up and is not measured.
const WARMUP_MILLIS = 1_000
// How long after the last change the followers are given to apply it.
const SETTLE_MILLIS = 2_000
// A path is changed again only this long after its last change, so every table can see each state it passes.
const SPACING_MILLIS = 300
// Before memory and connections are read at idle: a pool closes a connection idle for 10 s (pg's default), so both
// counts are read past that, with the same wait.
const IDLE_MILLIS = { memory: 3_000, postgres: 11_000 } as const

const TARGETS = { directP99: 100, relayP99: 200, idleFollowerBytes: 50 * 1024, atRate: 100 } as const

const now = () => performance.timeOrigin + performance.now()
const sleep = (millis: number) => new Promise((resolve) => setTimeout(resolve, millis))

// ---------------------------------------------------------------------------------------------------------------
// The registry and the relay: `npm start`, with the probe
// ---------------------------------------------------------------------------------------------------------------

interface Host {
  readonly name: string
  readonly child: ChildProcess
  readonly origin: string
  readonly probe: (gc: boolean) => Promise<Probed>
}

const hosts: Array<Host> = []

const startHost = (name: string, env: Record<string, string>): Promise<Host> => {
  const command = npmStartCommand()
  const script = command.args[command.args.length - 1]!
  const child = spawn(
    process.execPath,
    [
      "--expose-gc",
      ...(config.cpuProf === undefined ? [] : ["--cpu-prof", `--cpu-prof-dir=${config.cpuProf}`]),
      ...command.args.slice(0, -1),
      "--import",
      "./bench/fleet-probe.ts",
      script
    ],
    {
      cwd: ROOT,
      env: npmStartEnv({ admin: ADMIN_TOKEN, read: READ_TOKEN }, env),
      stdio: ["ignore", "pipe", "pipe", "ipc"]
    }
  )
  const probe = prober(child)
  return listeningOrigin(child, name, 60_000).then(({ origin, output }) => {
    child.once("exit", (code, signal) => {
      if (signal !== "SIGTERM" && code !== 0) console.error(`${name} exited with ${code ?? signal}\n${output()}`)
    })
    const host: Host = { name, child, origin, probe }
    hosts.push(host)
    return host
  })
}

const stopHost = (host: Host): Promise<void> =>
  new Promise((resolve) => {
    hosts.splice(hosts.indexOf(host), 1)
    if (host.child.exitCode !== null) return resolve()
    const timer = setTimeout(() => host.child.kill("SIGKILL"), 10_000)
    host.child.once("exit", () => {
      clearTimeout(timer)
      resolve()
    })
    host.child.kill("SIGTERM")
  })

// ---------------------------------------------------------------------------------------------------------------
// The followers
// ---------------------------------------------------------------------------------------------------------------

interface Worker {
  readonly child: ChildProcess
  readonly ask: <T extends Report["type"]>(command: Command, answer: T) => Promise<Extract<Report, { type: T }>>
}

const startWorker = () =>
  new Promise<Worker>((resolve, reject) => {
    const child = fork("bench/fleet-worker.ts", [], {
      cwd: ROOT,
      execArgv: ["--import", "tsx"],
      // The compiled library in dist/, as a host runs it; latencies go back as a Float64Array.
      env: { ...process.env, TSX_TSCONFIG_PATH: "bench/tsconfig.json" },
      serialization: "advanced"
    })
    child.once("exit", (code) => reject(new Error(`a follower process exited with ${code}`)))
    const ask = <T extends Report["type"]>(command: Command, answer: T) =>
      new Promise<Extract<Report, { type: T }>>((resolveAnswer) => {
        const listen = (report: Report) => {
          if (report.type !== answer) return
          child.off("message", listen)
          resolveAnswer(report as Extract<Report, { type: T }>)
        }
        child.on("message", listen)
        child.send(command)
      })
    child.once("message", (report: Report) => report.type === "ready" && resolve({ child, ask }))
  })

/** `count` follower tables of the registry or relay at `origin`, spread evenly over the worker processes. */
const startFollowers = async (origin: string, count: number): Promise<ReadonlyArray<Worker>> => {
  const processes = Math.min(config.workers, count)
  const workers = await Promise.all(Array.from({ length: processes }, startWorker))
  const started = now()
  await Promise.all(workers.map((worker, i) => {
    const tables = Math.floor(count / processes) + (i < count % processes ? 1 : 0)
    return worker.ask({ type: "follow", url: origin, token: READ_TOKEN, tables }, "following")
  }))
  console.error(`  ${count} followers of ${origin} ready in ${((now() - started) / 1000).toFixed(1)} s`)
  return workers
}

const stopFollowers = (workers: ReadonlyArray<Worker>) =>
  Promise.all(workers.map((worker) =>
    new Promise((resolve) => {
      worker.child.removeAllListeners("exit")
      worker.child.once("exit", resolve)
      worker.child.send({ type: "stop" } satisfies Command)
    })
  ))

// ---------------------------------------------------------------------------------------------------------------
// The database
// ---------------------------------------------------------------------------------------------------------------

const clearStore = (url: string) =>
  Effect.runPromise(
    PgRouteRepository.uninstall().pipe(Effect.provide(PgClient.layer({ url: Redacted.make(url) })), Effect.scoped)
  )

/** Counts the connections to the database other than its own: the registry's, as nothing else uses the database. */
const connectionCounter = async (url: string) => {
  const client = new Pg.Client({ connectionString: url, application_name: "bench-fleet-counter" })
  await client.connect()
  const count = async () =>
    (await client.query<{ n: number }>(
      "SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()"
    )).rows[0]!.n
  return { count, end: () => client.end() }
}

type Counter = Awaited<ReturnType<typeof connectionCounter>>

/**
 * The transactions committed in the database (`pg_stat_database.xact_commit`): during a rolling restart, the changes
 * made, each registry's start, and the reads of the log for the followers that resume.
 */
const statementCounter = async (url: string) => {
  const client = new Pg.Client({ connectionString: url, application_name: "bench-fleet-transactions" })
  await client.connect()
  const count = async () =>
    Number(
      (await client.query<{ n: string }>(
        "SELECT xact_commit::text AS n FROM pg_stat_database WHERE datname = current_database()"
      )).rows[0]!.n
    )
  return { count, end: () => client.end() }
}

/** The most connections seen, sampled every 100 ms until `stop` is called. */
const sampleConnections = (counter: Counter | undefined) => {
  if (counter === undefined) return { stop: () => Promise.resolve(undefined) }
  let most = 0
  let running = true
  const loop = (async () => {
    while (running) {
      most = Math.max(most, await counter.count())
      await sleep(100)
    }
  })()
  return {
    stop: async () => {
      running = false
      await loop
      return most
    }
  }
}

// ---------------------------------------------------------------------------------------------------------------
// The writer
// ---------------------------------------------------------------------------------------------------------------

/** What the writer knows of the registry: each stored route's id by path and handler by id, from its answers. */
interface Registry {
  readonly origin: string
  readonly ids: Map<string, string>
  readonly handlers: Map<string, string>
}

const headers = { authorization: `Bearer ${ADMIN_TOKEN}`, "content-type": "application/json" }

/** A change the registry acknowledged: when it was sent and its answer arrived, and the id of the route it changed. */
interface Acked {
  readonly sent: number
  readonly at: number
  readonly id: string
}

/** Makes one change through the API; resolves with its acknowledgement, or the reason it failed. */
const write = (registry: Registry, change: Change): Promise<Acked | string> =>
  writeOrThrow(registry, change).catch((error: unknown) => `${change.type} failed: ${String(error)}`)

const writeOrThrow = async (registry: Registry, change: Change): Promise<Acked | string> => {
  const { handlers, ids, origin } = registry
  const id = ids.get(change.path)
  if (change.type !== "create" && id === undefined) return "the route's create failed"
  const sent = now()
  const response = change.type === "create"
    ? await fetch(`${origin}/v1/routing`, {
      method: "POST",
      headers,
      body: JSON.stringify({ method: "GET", path: change.path, handler: change.handler })
    })
    : change.type === "update"
    ? await fetch(`${origin}/v1/routing/${id}`, {
      method: "PATCH",
      headers,
      body: JSON.stringify({ handler: change.handler })
    })
    : await fetch(`${origin}/v1/routing/${id}`, { method: "DELETE", headers })
  const ackedAt = now()
  const body = await response.text()
  const expected = { create: 201, update: 200, delete: 204 }[change.type]
  if (response.status !== expected) return `${change.type} answered ${response.status}: ${body}`
  if (change.type === "create") {
    const created = (JSON.parse(body) as { readonly id: string }).id
    ids.set(change.path, created)
    handlers.set(created, change.handler!)
    return { sent, at: ackedAt, id: created }
  }
  if (change.type === "update") handlers.set(id!, change.handler!)
  else {
    ids.delete(change.path)
    handlers.delete(id!)
  }
  return { sent, at: ackedAt, id: id! }
}

const seed = async (registry: Registry) => {
  for (let i = 0; i < config.seed; i++) {
    const input = seedInput(i)
    const response = await fetch(`${registry.origin}/v1/routing`, {
      method: "POST",
      headers,
      body: JSON.stringify(input)
    })
    if (response.status !== 201) throw new Error(`seeding answered ${response.status}: ${await response.text()}`)
    const created = (await response.json()) as { readonly id: string }
    registry.ids.set(input.path, created.id)
    registry.handlers.set(created.id, input.handler)
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Runs
// ---------------------------------------------------------------------------------------------------------------

type Path = "direct" | "relay" | "registry alone"

interface RunRow {
  store: string
  path: Path
  rate: string
  followers: string
  changes: string
  samples: string
  missing: string
  p50: string
  p99: string
  max: string
  target: string
  registryCpu: string
  relayCpu: string
  /** The CPU time a change costs the process the followers read, per follower (filled in once every run is made). */
  fanOut?: string
  /** CPU time per change, µs: the registry's, and the relay's when there is one. */
  readonly registryMicrosPerChange: number
  readonly relayMicrosPerChange: number | undefined
  followerCpu: string
  followerLoop: string
  write: string
  registryLoop: string
  connections: string
  differences: string
}

let runs = 0

const ms = (value: number) => Number.isNaN(value) ? "–" : `${value.toFixed(1)} ms`

const measureRun = async (
  store: string,
  path: Path,
  perSecond: number,
  registry: Registry,
  registryHost: Host,
  relayHost: Host | undefined,
  workers: ReadonlyArray<Worker>,
  counter: Counter | undefined
): Promise<RunRow> => {
  const tag = `r${++runs}`
  const changes = plan({ perSecond, seconds: config.seconds, writers: 1, spacingMillis: SPACING_MILLIS, tag })
  console.error(`  ${path}, ${perSecond}/s for ${config.seconds} s…`)
  await Promise.all(workers.map((worker) => worker.ask({ type: "start" }, "started")))
  const sampling = sampleConnections(counter)
  const registryBefore = await registryHost.probe(false)
  const relayBefore = await relayHost?.probe(false)
  const start = now() + 200
  const acked = new Map<number, Acked>()
  const failures: Array<string> = []
  // Each change at its time, whether or not the last was answered (open loop), except that a change of a path waits
  // for the answer to the path's last change (it needs the route's id).
  const last = new Map<string, Promise<unknown>>()
  await Promise.all(changes.map((change) => {
    const made = Promise.all([sleep(start + change.at - now()), last.get(change.path)])
      .then(() => write(registry, change))
      .then((result) => {
        if (typeof result === "string") failures.push(result)
        else acked.set(change.key, result)
      })
    last.set(change.path, made)
    return made
  }))
  await sleep(SETTLE_MILLIS)
  const registryAfter = await registryHost.probe(false)
  const relayAfter = await relayHost?.probe(false)
  const wall = now() - start
  const connections = await sampling.stop()
  if (failures.length > 0) {
    const kinds = new Map<string, number>()
    for (const failure of failures) kinds.set(failure.slice(0, 160), (kinds.get(failure.slice(0, 160)) ?? 0) + 1)
    console.error(`  ${failures.length} changes failed:`)
    for (const [kind, count] of kinds) console.error(`    ${count} × ${kind}`)
  }

  const expected: Array<Expected> = []
  for (const change of changes) {
    const ack = acked.get(change.key)
    if (ack === undefined || change.at < WARMUP_MILLIS) continue
    expected.push(
      change.type === "delete"
        ? { type: "delete", id: ack.id, ackedAt: ack.at }
        : { type: "upsert", handler: change.handler!, ackedAt: ack.at }
    )
  }
  const reports = await Promise.all(workers.map((worker) => worker.ask({ type: "collect", expected }, "collected")))
  const latencies = new Float64Array(reports.reduce((sum, report) => sum + report.latencies.length, 0))
  let at = 0
  for (const report of reports) {
    latencies.set(report.latencies, at)
    at += report.latencies.length
  }
  latencies.sort()
  const writes = Float64Array.from(acked.values(), (ack) => ack.at - ack.sent).sort()
  const truth = digest(Array.from(registry.handlers, ([id, handler]) => ({ id, handler })))
  const followers = workers.length === 0 ? 0 : config.followers
  const differences = reports.reduce(
    (sum, report) =>
      sum + Object.entries(report.digests).reduce((n, [key, count]) => n + (key === truth ? 0 : count), 0),
    0
  )
  const p99 = percentile(latencies, 99)
  const target = path === "registry alone" ? undefined : path === "direct" ? TARGETS.directP99 : TARGETS.relayP99
  const cpuOf = (before: Probed | undefined, after: Probed | undefined) =>
    before === undefined || after === undefined ? undefined : (after.cpuMicros - before.cpuMicros)
  const registryCpu = cpuOf(registryBefore, registryAfter)!
  const relayCpu = cpuOf(relayBefore, relayAfter)
  const followerCpu = reports.reduce((sum, report) => sum + report.cpuMillis, 0)
  return {
    store,
    path,
    rate: `${perSecond}/s`,
    followers: String(followers),
    changes: `${acked.size}${failures.length > 0 ? ` (${failures.length} failed)` : ""}`,
    samples: followers === 0 ? "" : latencies.length.toLocaleString("en-US"),
    missing: followers === 0 ? "" : String(reports.reduce((sum, report) => sum + report.missing, 0)),
    p50: followers === 0 ? "" : ms(percentile(latencies, 50)),
    p99: followers === 0 ? "" : ms(p99),
    max: followers === 0 ? "" : ms(latencies[latencies.length - 1] ?? NaN),
    target: target === undefined || perSecond !== TARGETS.atRate
      ? ""
      : `< ${target} ms ${p99 < target ? "met" : "MISSED"}`,
    registryCpu: `${((registryCpu / 1e3 / wall) * 100).toFixed(1)}% · ${
      Math.round(registryCpu / Math.max(1, acked.size)).toLocaleString("en-US")
    } µs/change`,
    relayCpu: relayCpu === undefined || relayAfter === undefined
      ? ""
      : `${((relayCpu / 1e3 / wall) * 100).toFixed(1)}% · loop ${relayAfter.loopDelay.p99.toFixed(0)} / ${
        relayAfter.loopDelay.max.toFixed(0)
      } ms`,
    registryMicrosPerChange: registryCpu / Math.max(1, acked.size),
    relayMicrosPerChange: relayCpu === undefined ? undefined : relayCpu / Math.max(1, acked.size),
    followerCpu: followers === 0 ? "" : `${((followerCpu / wall) * 100).toFixed(0)}%`,
    followerLoop: followers === 0 ?
      "" :
      `${Math.max(...reports.map((report) => report.loopDelay.p99)).toFixed(0)} / ${
        Math.max(...reports.map((report) => report.loopDelay.max)).toFixed(0)
      } ms`,
    write: `${percentile(writes, 50).toFixed(1)} / ${percentile(writes, 99).toFixed(1)} ms`,
    registryLoop: `${registryAfter.loopDelay.p99.toFixed(0)} / ${registryAfter.loopDelay.max.toFixed(0)} ms`,
    connections: connections === undefined ? "" : String(connections),
    differences: followers === 0 ? "" : String(differences)
  }
}

/**
 * What one follower costs per change the process it reads: directly, the registry's CPU per change over what it spends
 * with no follower at the same rate; through a relay, the relay's CPU per change (it makes no writes of its own).
 */
const fanOut = (rows: ReadonlyArray<RunRow>): void => {
  for (const row of rows) {
    const alone = rows.find((other) => other.path === "registry alone" && other.rate === row.rate)
    const followers = Number(row.followers)
    const micros = row.path === "relay"
      ? row.relayMicrosPerChange
      : row.path === "direct" && alone !== undefined
      ? row.registryMicrosPerChange - alone.registryMicrosPerChange
      : undefined
    if (micros !== undefined && followers > 0) row.fanOut = `${(micros / followers).toFixed(1)} µs`
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Idle followers: the registry's memory and connections
// ---------------------------------------------------------------------------------------------------------------

interface Idle {
  readonly probed: Probed
  readonly connections: number | undefined
}

const idle = async (store: keyof typeof IDLE_MILLIS, host: Host, counter: Counter | undefined): Promise<Idle> => {
  await sleep(IDLE_MILLIS[store])
  return { probed: await host.probe(true), connections: await counter?.count() }
}

interface MemoryRow {
  store: string
  followers: string
  rss: string
  heap: string
  perFollower: string
  target: string
  connections: string
}

const mb = (bytes: number) => `${(bytes / 1e6).toFixed(1)} MB`
const kb = (bytes: number) => `${(bytes / 1024).toFixed(1)} KB`

const memoryRows = (store: string, none: Idle, all: Idle): Array<MemoryRow> => {
  const rss = (all.probed.rss - none.probed.rss) / config.followers
  const heap = (all.probed.heapUsed + all.probed.external - none.probed.heapUsed - none.probed.external) /
    config.followers
  const worst = Math.max(rss, heap)
  return [
    {
      store,
      followers: "0",
      rss: mb(none.probed.rss),
      heap: mb(none.probed.heapUsed + none.probed.external),
      perFollower: "",
      target: "",
      connections: none.connections === undefined ? "" : String(none.connections)
    },
    {
      store,
      followers: String(config.followers),
      rss: mb(all.probed.rss),
      heap: mb(all.probed.heapUsed + all.probed.external),
      perFollower: `${kb(rss)} RSS · ${kb(heap)} heap`,
      target: `< 50 KB ${worst < TARGETS.idleFollowerBytes ? "met" : "MISSED"}`,
      connections: all.connections === undefined ? "" : String(all.connections)
    }
  ]
}

// ---------------------------------------------------------------------------------------------------------------
// One store
// ---------------------------------------------------------------------------------------------------------------

const measureStore = async (store: "memory" | "postgres") => {
  console.error(`${store} store:`)
  const url = store === "postgres" ? DATABASE_URL! : undefined
  if (url !== undefined) await clearStore(url)
  const counter = url === undefined ? undefined : await connectionCounter(url)
  const runRows: Array<RunRow> = []
  try {
    const host = await startHost("registry", url === undefined ? {} : { DATABASE_URL: url })
    const registry: Registry = { origin: host.origin, ids: new Map(), handlers: new Map() }
    await seed(registry)
    const none = await idle(store, host, counter)
    const direct = await startFollowers(host.origin, config.followers)
    const all = await idle(store, host, counter)
    for (const rate of config.rates) {
      runRows.push(await measureRun(store, "direct", rate, registry, host, undefined, direct, counter))
    }
    await stopFollowers(direct)
    for (const rate of config.rates) {
      runRows.push(await measureRun(store, "registry alone", rate, registry, host, undefined, [], counter))
    }
    if (config.relay) {
      const relay = await startHost("relay", { FOLLOW_URL: host.origin, FOLLOW_TOKEN: READ_TOKEN })
      const followers = await startFollowers(relay.origin, config.followers)
      for (const rate of config.rates) {
        runRows.push(await measureRun(store, "relay", rate, registry, host, relay, followers, counter))
      }
      await stopFollowers(followers)
      await stopHost(relay)
    }
    await stopHost(host)
    fanOut(runRows)
    return { runs: runRows, memory: memoryRows(store, none, all) }
  } finally {
    await counter?.end()
    if (url !== undefined) await clearStore(url)
  }
}

// ---------------------------------------------------------------------------------------------------------------
// A rolling restart of two registry processes on one database
// ---------------------------------------------------------------------------------------------------------------

const freePort = () =>
  new Promise<number>((resolve) => {
    const server = createServer().listen(0, "127.0.0.1", () => {
      const { port } = server.address() as AddressInfo
      server.close(() => resolve(port))
    })
  })

// The bytes of one full snapshot: a stream opened with no cursor, read up to its `ready`.
const snapshotBytes = async (origin: string): Promise<number> => {
  const controller = new AbortController()
  const response = await fetch(`${origin}/v1/routing/changes`, {
    headers: { authorization: `Bearer ${READ_TOKEN}` },
    signal: controller.signal
  })
  const reader = response.body!.getReader()
  const decoder = new TextDecoder()
  let text = ""
  let bytes = 0
  while (!text.includes("event: ready")) {
    const { done, value } = await reader.read()
    if (done) break
    bytes += value.byteLength
    text += decoder.decode(value, { stream: true })
  }
  controller.abort()
  return bytes
}

const newestRevision = async (origin: string): Promise<number> => {
  const response = await fetch(`${origin}/v1/routing/history?limit=1`, { headers })
  const page = (await response.json()) as { readonly items: ReadonlyArray<{ readonly revision: number }> }
  return page.items[0]?.revision ?? 0
}

const rolling = async (url: string) => {
  console.error("rolling restart (postgres store):")
  await clearStore(url)
  const ports = [await freePort(), await freePort()]
  const start = (i: number) => startHost(`registry ${i + 1}`, { DATABASE_URL: url, PORT: String(ports[i]) })
  const registries = [await start(0), await start(1)]
  const registry: Registry = { origin: registries[0]!.origin, ids: new Map(), handlers: new Map() }
  try {
    await seed(registry)
    const half = Math.ceil(config.followers / 2)
    const workers = [
      ...(await startFollowers(registries[0]!.origin, half)),
      ...(await startFollowers(registries[1]!.origin, config.followers - half))
    ]
    const snapshot = await snapshotBytes(registries[0]!.origin)
    const ask = async (revision: number) => {
      const answers = await Promise.all(workers.map((worker) => worker.ask({ type: "at", revision }, "at")))
      return {
        current: answers.reduce((sum, answer) => sum + answer.current, 0),
        resets: answers.reduce((sum, answer) => sum + answer.resets, 0)
      }
    }
    const resetsBefore = (await ask(0)).resets
    const changes = plan({
      perSecond: 100,
      seconds: (config.rollingChanges * 2) / 100,
      writers: 1,
      spacingMillis: 0,
      tag: "rr"
    })
    // What the registries sent before (seeding's answers, the first snapshots) is not counted.
    const baseline = await Promise.all(registries.map((host) => host.probe(false)))
    let sent = 0
    const statements = await statementCounter(url)
    const statementsBefore = await statements.count()
    const startedAt = now()
    // How long each registry was away: from its stop to its listening again.
    const away: Array<number> = []
    for (let i = 0; i < 2; i++) {
      const stopping = registries[i]!
      const before = await stopping.probe(false)
      const stoppedAt = now()
      await stopHost(stopping)
      sent += before.bytesSent - baseline[i]!.bytesSent
      const other = { ...registry, origin: registries[1 - i]!.origin }
      for (const change of changes.slice(i * config.rollingChanges, (i + 1) * config.rollingChanges)) {
        const acked = await writeOrThrow(other, change)
        if (typeof acked === "string") throw new Error(acked)
      }
      registries[i] = await start(i)
      away.push(now() - stoppedAt)
    }
    const backAt = now()
    const newest = await newestRevision(registries[0]!.origin)
    let state = await ask(newest)
    while (state.current < config.followers && now() - startedAt < 300_000) {
      await sleep(50)
      state = await ask(newest)
    }
    const currentAfter = now() - startedAt
    const allCurrentAt = now()
    for (const host of registries) sent += (await host.probe(false)).bytesSent
    // Postgres publishes a backend's counts within a second of its transactions.
    await sleep(1_500)
    const transactions = (await statements.count()) - statementsBefore
    await statements.end()
    await stopFollowers(workers)
    return {
      followers: String(config.followers),
      changes: String(config.rollingChanges * 2),
      resets: String(state.resets - resetsBefore),
      current: `${state.current} / ${config.followers}`,
      currentAfter: `${(currentAfter / 1000).toFixed(1)} s`,
      currentAfterBack: `${((allCurrentAt - backAt) / 1000).toFixed(1)} s`,
      transactions: transactions.toLocaleString("en-US"),
      away: away.map((millis) => `${(millis / 1000).toFixed(1)} s`).join(", "),
      sent: mb(sent),
      snapshots: mb(snapshot * config.followers),
      ratio: `${((100 * sent) / (snapshot * config.followers)).toFixed(1)} %`
    }
  } finally {
    for (const host of registries) if (hosts.includes(host)) await stopHost(host)
    await clearStore(url)
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Main
// ---------------------------------------------------------------------------------------------------------------

const main = async () => {
  const openFiles = spawnSync("sh", ["-c", "ulimit -n"], { encoding: "utf8" }).stdout.trim()
  const machine = {
    date: new Date().toISOString(),
    cores: cpus().length,
    cpu: cpus()[0]?.model ?? "",
    node: process.version,
    openFiles,
    loadBefore: loadavg().map((load) => load.toFixed(2)).join(" ")
  }
  // Each stream is a socket at both ends: the registry (or relay) needs one per follower.
  if (Number(openFiles) < config.followers + 200) {
    throw new Error(`ulimit -n is ${openFiles}: raise it above ${config.followers + 200} (ulimit -n 65536)`)
  }
  if (config.rolling) {
    const restart = await rolling(DATABASE_URL!)
    console.log(
      `\nA rolling restart of 2 registry processes on one database under ${config.followers} followers ` +
        `(${machine.cores} cores, Node ${machine.node})\n`
    )
    printMarkdownTable([
      ["followers", "followers", "right"],
      ["changes", "changes while restarting", "right"],
      ["resets", "resets (target 0)", "right"],
      ["current", "followers current", "right"],
      ["away", "each registry away (stop to listening)", "right"],
      ["currentAfter", "all current after the first stop", "right"],
      ["currentAfterBack", "… after the last start", "right"],
      ["transactions", "database transactions", "right"],
      ["sent", "registries sent", "right"],
      ["snapshots", "a snapshot each", "right"],
      ["ratio", "sent / snapshots", "right"]
    ], [restart])
    mkdirSync(`${ROOT}bench/results`, { recursive: true })
    writeFileSync(
      `${ROOT}bench/results/fleet-rolling-${Date.now()}.json`,
      JSON.stringify({ machine, config, restart }, null, 2) + "\n"
    )
    return
  }
  const results = []
  for (const store of config.stores as ReadonlyArray<"memory" | "postgres">) results.push(await measureStore(store))
  const loadAfter = loadavg().map((load) => load.toFixed(2)).join(" ")
  const processes = `1 registry${config.relay ? ", 1 relay" : ""}, ${
    Math.min(config.workers, config.followers)
  } follower processes, this one (the writer)`
  console.log(
    `\nA fleet of ${
      config.followers.toLocaleString("en-US")
    } followers (${processes}; ${machine.cores} cores, ${machine.cpu}, ` +
      `Node ${machine.node}, ulimit -n ${openFiles}; load average ${machine.loadBefore} before, ${loadAfter} after)\n`
  )
  printMarkdownTable(
    [
      ["store", "store", "left"],
      ["path", "path", "left"],
      ["rate", "rate", "right"],
      ["followers", "followers", "right"],
      ["changes", "changes", "right"],
      ["samples", "samples", "right"],
      ["missing", "missing", "right"],
      ["p50", "p50", "right"],
      ["p99", "p99", "right"],
      ["max", "max", "right"],
      ["target", "p99 target", "left"],
      ["write", "write p50 / p99", "right"],
      ["registryCpu", "registry CPU", "right"],
      ["registryLoop", "registry loop delay p99 / max", "right"],
      ["relayCpu", "relay CPU · loop delay p99 / max", "right"],
      ["fanOut", "CPU per follower per change", "right"],
      ["followerCpu", "followers' CPU", "right"],
      ["followerLoop", "followers' loop delay p99 / max", "right"],
      ["connections", "db conns (most)", "right"],
      ["differences", "tables ≠ registry", "right"]
    ],
    results.flatMap((result) =>
      result.runs.map(({ registryMicrosPerChange: _, relayMicrosPerChange: __, ...row }) => row)
    )
  )
  console.log(
    "\nThe registry with idle followers (after two full collections; heap is V8's heap and external memory)\n"
  )
  printMarkdownTable([
    ["store", "store", "left"],
    ["followers", "followers", "right"],
    ["rss", "RSS", "right"],
    ["heap", "heap", "right"],
    ["perFollower", "per idle follower", "right"],
    ["target", "target", "left"],
    ["connections", "db connections", "right"]
  ], results.flatMap((result) => result.memory))
  mkdirSync(`${ROOT}bench/results`, { recursive: true })
  writeFileSync(
    `${ROOT}bench/results/fleet-${Date.now()}.json`,
    JSON.stringify({ machine, loadAfter, config, results }, null, 2) + "\n"
  )
}

const cleanUp = () => Promise.all(hosts.map(stopHost))

process.once("SIGINT", () => void cleanUp().then(() => process.exit(130)))
main().then(() => cleanUp(), async (error) => {
  console.error(error)
  await cleanUp()
  process.exit(1)
})
