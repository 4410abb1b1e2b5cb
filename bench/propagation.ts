/**
 * Change propagation between processes (CONTRACT §12): `npm run bench:propagation [-- --quick]`.
 *
 * Four host processes (bench/propagation-worker.ts: the Postgres store and a live route table each, on the compiled
 * library) share a database of the run's own on the server in DATABASE_URL (default: the local one). Changes —
 * half creates, three tenths updates, a fifth deletes — are sent at a steady rate (open loop: the next one does not
 * wait for the last) to the processes in turn; each of the other three is told beforehand what to expect, and
 * reports when its table routes it. The latency of a change in a process is from the acknowledgement in the process
 * that made it to the moment the other's table routes it (a process may see it before the writer's acknowledgement
 * returns: that counts as 0). Reported: p50, p99 and max at 10, 100 and 1,000 changes per second with notifications,
 * and with polling alone at its default interval.
 */
import { type ChildProcess, fork, spawnSync } from "node:child_process"
import { mkdirSync, writeFileSync } from "node:fs"
import { fileURLToPath } from "node:url"
import Pg from "pg"
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
}

const runs: ReadonlyArray<Run> = [
  { label: "notifications", notifications: true, perSecond: 10, seconds: QUICK ? 5 : 20 },
  { label: "notifications", notifications: true, perSecond: 100, seconds: QUICK ? 3 : 10 },
  { label: "notifications", notifications: true, perSecond: 1000, seconds: QUICK ? 2 : 5 },
  { label: "polling (default interval)", notifications: false, perSecond: 10, seconds: QUICK ? 5 : 20 }
]

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

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
}

const startWorker = (url: string, run: Run, onReport: (index: number, report: Report) => void, index: number) =>
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
    child.once("exit", (code) => reject(new Error(`worker ${index} exited with ${code}`)))
    child.on("message", (report: Report) => {
      if (report.type === "ready") resolve({ child, send: (command) => child.send(command) })
      else onReport(index, report)
    })
  })

const percentile = (sorted: ReadonlyArray<number>, p: number) =>
  sorted.length === 0 ? NaN : sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!

const measure = (run: Run) =>
  withDatabase(async (url) => {
    const acked = new Map<number, number>()
    const seen = new Map<number, Array<number>>()
    const failed = new Set<number>()
    // Paths whose create every process routes: an update or delete in any process finds the route.
    const live: Array<string> = []
    const creating = new Map<number, string>()
    const settle = (key: number) => {
      const path = creating.get(key)
      if (path === undefined || !acked.has(key) || (seen.get(key)?.length ?? 0) < PROCESSES - 1) return
      creating.delete(key)
      live.push(path)
    }
    const onReport = (_index: number, report: Report) => {
      if (report.type === "acked") {
        if (report.ok) acked.set(report.key, report.at)
        else failed.add(report.key)
      } else if (report.type === "seen") {
        const times = seen.get(report.key) ?? []
        times.push(report.at)
        seen.set(report.key, times)
      }
      if (report.type !== "ready") settle(report.key)
    }
    // The first process creates the tables; the others start on them.
    const first = await startWorker(url, run, onReport, 0)
    const workers = [
      first,
      ...await Promise.all(
        Array.from({ length: PROCESSES - 1 }, (_, i) => startWorker(url, run, onReport, i + 1))
      )
    ]
    try {
      let key = 0
      const total = run.perSecond * run.seconds
      const started = performance.now()
      for (let sent = 0; sent < total; sent++) {
        const due = started + (sent * 1000) / run.perSecond
        const wait = due - performance.now()
        if (wait > 1) await pause(wait)
        const writer = sent % PROCESSES
        const roll = Math.random()
        const k = key++
        let command: Command
        if (roll < 0.5 || live.length < 20) {
          const path = `/p/${k}/:id`
          creating.set(k, path)
          command = { type: "create", key: k, path, handler: `h${k}` }
        } else if (roll < 0.8) {
          command = { type: "update", key: k, path: live[Math.floor(Math.random() * live.length)]!, handler: `h${k}` }
        } else {
          command = { type: "delete", key: k, path: live.splice(Math.floor(Math.random() * live.length), 1)[0]! }
        }
        const expect: Command = {
          type: "expect",
          key: k,
          path: command.path,
          handler: command.type === "delete" ? null : command.handler
        }
        workers.forEach((worker, i) => i !== writer && worker.send(expect))
        workers[writer]!.send(command)
      }
      // Let the last changes arrive.
      await pause(run.notifications ? 2_000 : 3_000)
      const latencies: Array<number> = []
      let missing = 0
      for (const [k, at] of acked) {
        const times = seen.get(k) ?? []
        missing += PROCESSES - 1 - times.length
        for (const time of times) latencies.push(Math.max(0, time - at))
      }
      latencies.sort((a, b) => a - b)
      return {
        run: `${run.label}, ${run.perSecond.toLocaleString("en-US")}/s`,
        changes: String(acked.size),
        failed: String(failed.size),
        samples: String(latencies.length),
        missing: String(missing),
        p50: `${percentile(latencies, 50).toFixed(1)} ms`,
        p99: `${percentile(latencies, 99).toFixed(1)} ms`,
        max: `${(latencies[latencies.length - 1] ?? NaN).toFixed(1)} ms`
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
  ["max", "max", "right"]
], rows)
mkdirSync(`${ROOT}bench/results`, { recursive: true })
writeFileSync(`${ROOT}bench/results/propagation-${Date.now()}.json`, JSON.stringify(rows, null, 2))
