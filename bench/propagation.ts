/**
 * Change propagation between processes (docs/scaling-out.md, "Propagation, measured"): `npm run bench:propagation [-- --quick] [--rates 10,100]`.
 *
 * Four host processes (bench/propagation-worker.ts: the Postgres store and a live route table each, on the compiled
 * library) share a database of the run's own on the server in DATABASE_URL (default: the local one). A plan of
 * changes at a steady rate — half creates, three tenths updates, a fifth deletes, each made by the processes in turn —
 * is given to every process before the clock starts; each makes its share at its time (open loop: a change does not
 * wait for the last) and watches its table for the others', so no message passes between processes while they run.
 * The latency of a change in a process is from its acknowledgement in the process that made it to the moment the
 * other's table routes it (a process may see it before the writer's acknowledgement returns: that counts as 0).
 * Reported after the first second (the processes' warm-up): p50, p99 and max at 10, 100 and 1,000 changes per second
 * with notifications, with polling alone at its default interval, and at 100 per second with every listening
 * connection terminated (`pg_terminate_backend`) every 2 seconds, counting only the changes acknowledged in the second
 * after each termination (`--rates kills` runs that one alone).
 */
import { type ChildProcess, fork, spawnSync } from "node:child_process"
import { mkdirSync, writeFileSync } from "node:fs"
import { fileURLToPath } from "node:url"
import Pg from "pg"
import { percentile, plan } from "./plan.js"
import { printTable } from "./print.js"
import type { Command, Report } from "./propagation-worker.js"

const ROOT = fileURLToPath(new URL("..", import.meta.url))
const PROCESSES = 4
const QUICK = process.argv.includes("--quick")
const BASE_URL = process.env.DATABASE_URL || "postgres://postgres@127.0.0.1:5432/postgres"

interface Run {
  readonly label: string
  readonly notifications: boolean
  readonly perSecond: number
  readonly seconds: number
  /** Every this many ms, every listening connection is terminated; only the second after each is measured. */
  readonly killEvery?: number
}

// `--rates 100,1000`: only those rates with notifications (and polling only if 10 is among them); `kills`, the run
// with terminated listening connections.
const rates = process.argv.includes("--rates")
  ? process.argv[process.argv.indexOf("--rates") + 1]?.split(",")
  : undefined

const allRuns: ReadonlyArray<Run> = [
  { label: "notifications", notifications: true, perSecond: 10, seconds: QUICK ? 6 : 21 },
  { label: "notifications", notifications: true, perSecond: 100, seconds: QUICK ? 3 : 11 },
  { label: "notifications", notifications: true, perSecond: 1000, seconds: QUICK ? 3 : 6 },
  { label: "polling (default interval)", notifications: false, perSecond: 10, seconds: QUICK ? 6 : 21 },
  {
    label: "notifications, 1 s after listeners are killed",
    notifications: true,
    perSecond: 100,
    seconds: QUICK ? 7 : 21,
    killEvery: 2_000
  }
]
const runs = allRuns.filter((run) =>
  rates === undefined || rates.includes(run.killEvery === undefined ? String(run.perSecond) : "kills")
)

const withDatabase = async <A>(use: (url: string) => Promise<A>): Promise<A> => {
  const name = `rr_bench_propagation_${Date.now()}`
  const admin = new Pg.Client({ connectionString: BASE_URL })
  await admin.connect()
  await admin.query(`CREATE DATABASE ${name}`)
  const url = new URL(BASE_URL)
  url.pathname = `/${name}`
  try {
    return await use(url.toString())
  } finally {
    await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
    await admin.end()
  }
}

interface Worker {
  readonly child: ChildProcess
  readonly send: (command: Command) => void
  /** Resolves with the worker's report once its part of the plan is done. */
  readonly done: Promise<Extract<Report, { type: "done" }>>
}

const startWorker = (url: string, run: Run) =>
  new Promise<Worker>((resolve, reject) => {
    const child = fork("bench/propagation-worker.ts", [], {
      cwd: ROOT,
      execArgv: ["--import", "tsx"],
      // The compiled library in dist/, as a host runs it.
      env: {
        ...process.env,
        TSX_TSCONFIG_PATH: "bench/tsconfig.json",
        DATABASE_URL: url,
        NOTIFICATIONS: run.notifications ? "1" : "0"
      }
    })
    child.once("exit", (code) => reject(new Error(`a worker exited with ${code}`)))
    const done = new Promise<Extract<Report, { type: "done" }>>((resolveDone) =>
      child.on("message", (report: Report) => report.type === "done" && resolveDone(report))
    )
    child.once("message", (report: Report) => {
      if (report.type === "ready") resolve({ child, send: (command) => child.send(command), done })
    })
  })

// The first second of every run warms the processes up (JIT, pools, first statements) and is not measured.
const WARMUP_MILLIS = 1_000
// After a termination of the listening connections, the changes acknowledged within this long are measured.
const AFTER_KILL_MILLIS = 1_000

/**
 * Terminates every listening connection of the run's database every `every` ms from `first` (wall-clock ms) until
 * `end`; resolves with the times it did.
 */
const killListeners = async (url: string, first: number, every: number, end: number): Promise<Array<number>> => {
  const admin = new Pg.Client({ connectionString: url })
  await admin.connect()
  const kills: Array<number> = []
  try {
    for (let at = first; at < end; at += every) {
      await new Promise((resolve) => setTimeout(resolve, at - (performance.timeOrigin + performance.now())))
      kills.push(performance.timeOrigin + performance.now())
      await admin.query(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() " +
          // A listening connection's last statement is its LISTEN, or a ping it sent itself (NOTIFY).
          "AND pid <> pg_backend_pid() AND (query LIKE 'LISTEN %' OR query LIKE 'NOTIFY %')"
      )
    }
  } finally {
    await admin.end()
  }
  return kills
}

// A path is changed again only this long after its last change, so every process can see each state it passes.
// Without notifications a change takes up to the poll interval (500 ms by default) to arrive, so paths wait longer.
const spacingOf = (run: Run) => run.notifications ? 300 : 1_100

const measure = (run: Run) =>
  withDatabase(async (url) => {
    // The first process creates the tables; the others start on them.
    const first = await startWorker(url, run)
    const workers = [first, ...await Promise.all(Array.from({ length: PROCESSES - 1 }, () => startWorker(url, run)))]
    try {
      const changes = plan({
        perSecond: run.perSecond,
        seconds: run.seconds,
        writers: PROCESSES,
        spacingMillis: spacingOf(run)
      })
      const start = performance.timeOrigin + performance.now() + 500
      workers.forEach((worker, index) => worker.send({ type: "run", index, start, plan: changes }))
      const killing = run.killEvery === undefined
        ? Promise.resolve(undefined)
        : killListeners(url, start + WARMUP_MILLIS, run.killEvery, start + run.seconds * 1000 - AFTER_KILL_MILLIS)
      const [reports, kills] = await Promise.all([Promise.all(workers.map((worker) => worker.done)), killing])
      // With terminations, only what was acknowledged in the second after one counts.
      const measured = (ackedAt: number) =>
        kills === undefined || kills.some((kill) => ackedAt >= kill && ackedAt < kill + AFTER_KILL_MILLIS)
      const acked = new Map<number, number>()
      for (const report of reports) for (const [key, at] of Object.entries(report.acked)) acked.set(Number(key), at)
      const latencies: Array<number> = []
      let missing = 0
      for (const change of changes) {
        const at = acked.get(change.key)
        if (at === undefined || change.at < WARMUP_MILLIS || !measured(at)) continue
        reports.forEach((report, index) => {
          if (index === change.writer) return
          const seen = report.seen[change.key]
          if (seen === undefined) missing++
          else latencies.push(Math.max(0, seen - at))
        })
      }
      latencies.sort((a, b) => a - b)
      // How long the writes themselves took, from their planned time to their acknowledgement.
      const writes = changes.filter((change) =>
        change.at >= WARMUP_MILLIS && acked.has(change.key) && measured(acked.get(change.key)!)
      )
        .map((change) => acked.get(change.key)! - (start + change.at)).sort((a, b) => a - b)
      return {
        run: `${run.label}, ${run.perSecond.toLocaleString("en-US")}/s`,
        changes: String(acked.size),
        failed: String(reports.reduce((sum, report) => sum + report.failed.length, 0)),
        samples: String(latencies.length),
        missing: String(missing),
        p50: `${percentile(latencies, 50).toFixed(1)} ms`,
        p99: `${percentile(latencies, 99).toFixed(1)} ms`,
        max: `${(latencies[latencies.length - 1] ?? NaN).toFixed(1)} ms`,
        write: `${percentile(writes, 50).toFixed(1)} / ${percentile(writes, 99).toFixed(1)} ms`,
        loop: `${Math.max(...reports.map((report) => report.loopDelay.p99)).toFixed(0)} / ${
          Math.max(...reports.map((report) => report.loopDelay.max)).toFixed(0)
        } ms`
      }
    } finally {
      for (const worker of workers) worker.child.removeAllListeners("exit")
      await Promise.all(workers.map((worker) =>
        new Promise((resolve) => {
          worker.child.once("exit", resolve)
          worker.send({ type: "stop" })
        })
      ))
    }
  })

if (spawnSync("npm", ["run", "build"], { cwd: ROOT, stdio: "inherit" }).status !== 0) {
  throw new Error("npm run build failed")
}
const rows = []
for (const run of runs) {
  console.error(`running: ${run.label} at ${run.perSecond}/s for ${run.seconds} s…`)
  rows.push(await measure(run))
}
console.log(`\nPropagation across ${PROCESSES} processes (write acknowledged in one → routable in each other one)`)
printTable([
  ["run", "run", "left"],
  ["changes", "changes", "right"],
  ["failed", "failed", "right"],
  ["samples", "samples", "right"],
  ["missing", "missing", "right"],
  ["p50", "p50", "right"],
  ["p99", "p99", "right"],
  ["max", "max", "right"],
  ["write", "write p50 / p99", "right"],
  ["loop", "event loop delay p99 / max", "right"]
], rows)
mkdirSync(`${ROOT}bench/results`, { recursive: true })
writeFileSync(`${ROOT}bench/results/propagation-${Date.now()}.json`, JSON.stringify(rows, null, 2))
