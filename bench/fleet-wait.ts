/**
 * Waiting for the fleet (docs/scaling-out.md, "Waiting for a change"): `npm run bench:fleet-wait [-- --followers 1000]
 * [--workers 4] [--writes 30]`.
 *
 * One registry runs `npm start`'s exact command (the example host, the compiled library, the memory store), with
 * `--followers` follower tables (`RouteFollower.layer`, each with its own stream and its own name) spread over
 * `--workers` processes (bench/fleet-worker.ts). Once every follower is listed with a revision, this process makes
 * `--writes` creates one after another, and after each asks `GET /v1/routing/followers?revision=R&wait=60` with R the
 * write's `Registry-Revision`, as `sync --wait` does. Measured per write: from sending the write to its answer, and
 * from sending the write to the fleet's answer with `complete: true` (the write, every follower applying it and
 * reporting, and the registry's answer listing every follower). A wait that ends `complete: false` is counted.
 * Results go to bench/results/fleet-wait-<time>.json; a Markdown table is printed.
 */
import { type ChildProcess, fork, spawn } from "node:child_process"
import { mkdirSync, writeFileSync } from "node:fs"
import { cpus, loadavg } from "node:os"
import { fileURLToPath } from "node:url"
import type { Command, Report } from "./fleet-worker.js"
import { percentile } from "./plan.js"
import { printMarkdownTable } from "./print.js"
import { npmStartCommand, npmStartEnv, wholeOption } from "./run.js"

const ROOT = fileURLToPath(new URL("..", import.meta.url))
const ADMIN_TOKEN = "fleet-wait-admin"
const READ_TOKEN = "fleet-wait-reader"

const whole = wholeOption
const config = { followers: whole("followers", 1_000), workers: whole("workers", 4), writes: whole("writes", 30) }

const now = () => performance.now()
const children: Array<ChildProcess> = []

// The registry: npm start's command on a free port, ready once it prints where it listens.
const startRegistry = (): Promise<string> => {
  const command = npmStartCommand()
  const child = spawn(process.execPath, [...command.args], {
    cwd: ROOT,
    env: npmStartEnv({ admin: ADMIN_TOKEN, read: READ_TOKEN }),
    stdio: ["ignore", "pipe", "inherit"]
  })
  children.push(child)
  return new Promise((resolve, reject) => {
    let output = ""
    child.once("exit", (code) => reject(new Error(`the registry exited with ${code}\n${output}`)))
    child.stdout!.on("data", (chunk) => {
      output += chunk
      const match = /listening on (http:\/\/\S+)/.exec(output)
      if (match !== null) resolve(match[1]!)
    })
  })
}

const ask = <T extends Report["type"]>(child: ChildProcess, command: Command, answer: T) =>
  new Promise<void>((resolve) => {
    const listen = (report: Report) => {
      if (report.type !== answer) return
      child.off("message", listen)
      resolve()
    }
    child.on("message", listen)
    child.send(command)
  })

const startWorker = (): Promise<ChildProcess> =>
  new Promise((resolve, reject) => {
    const child = fork("bench/fleet-worker.ts", [], {
      cwd: ROOT,
      execArgv: ["--import", "tsx"],
      env: { ...process.env, TSX_TSCONFIG_PATH: "bench/tsconfig.json" },
      serialization: "advanced"
    })
    children.push(child)
    child.once("exit", (code) => reject(new Error(`a follower process exited with ${code}`)))
    child.once("message", (report: Report) => report.type === "ready" && resolve(child))
  })

interface Fleet {
  readonly revision: number
  readonly items: ReadonlyArray<{ readonly connected: boolean; readonly appliedRevision: number | null }>
  readonly complete?: boolean
}

const fleet = async (origin: string, query = ""): Promise<Fleet> => {
  const response = await fetch(`${origin}/v1/routing/followers${query}`, {
    headers: { authorization: `Bearer ${READ_TOKEN}` }
  })
  if (response.status !== 200) throw new Error(`GET /v1/routing/followers: ${response.status} ${await response.text()}`)
  return response.json() as Promise<Fleet>
}

// Until every follower is connected and has reported once.
const fleetReady = async (origin: string) => {
  for (;;) {
    const { items } = await fleet(origin)
    const reported = items.filter((item) => item.connected && item.appliedRevision !== null).length
    if (reported >= config.followers) return
    await new Promise((resolve) => setTimeout(resolve, 200))
  }
}

const write = async (origin: string, n: number): Promise<number> => {
  const response = await fetch(`${origin}/v1/routing`, {
    method: "POST",
    headers: { authorization: `Bearer ${ADMIN_TOKEN}`, "content-type": "application/json" },
    body: JSON.stringify({ method: "GET", path: `/fleet-wait/${n}`, handler: "h" })
  })
  if (response.status !== 201) throw new Error(`POST: ${response.status} ${await response.text()}`)
  await response.arrayBuffer()
  return Number(response.headers.get("registry-revision"))
}

const main = async () => {
  const origin = await startRegistry()
  const workers = await Promise.all(Array.from({ length: Math.min(config.workers, config.followers) }, startWorker))
  const started = now()
  await Promise.all(workers.map((worker, i) => {
    const tables = Math.floor(config.followers / workers.length) + (i < config.followers % workers.length ? 1 : 0)
    return ask(worker, { type: "follow", url: origin, token: READ_TOKEN, tables, name: `w${i}` }, "following")
  }))
  await fleetReady(origin)
  console.error(`${config.followers} followers listed in ${((now() - started) / 1000).toFixed(1)} s`)

  const acked: Array<number> = []
  const complete: Array<number> = []
  let incomplete = 0
  for (let n = 0; n < config.writes; n++) {
    const sent = now()
    const revision = await write(origin, n)
    acked.push(now() - sent)
    const answer = await fleet(origin, `?revision=${revision}&wait=60`)
    if (answer.complete === true) complete.push(now() - sent)
    else incomplete++
  }
  const row = (name: string, values: Array<number>) => {
    const sorted = [...values].sort((a, b) => a - b)
    return {
      measure: name,
      n: String(sorted.length),
      p50: percentile(sorted, 50).toFixed(1),
      p95: percentile(sorted, 95).toFixed(1),
      p99: percentile(sorted, 99).toFixed(1),
      max: (sorted[sorted.length - 1] ?? 0).toFixed(1)
    }
  }
  const rows = [row("write answered (ms)", acked), row("write to complete: true (ms)", complete)]
  console.log(
    `\n${config.followers} followers in ${workers.length} processes, ${config.writes} writes one after another; ` +
      `${incomplete} waits ended complete: false. Machine: ${cpus().length} cores, load ${
        loadavg().map((l) => l.toFixed(1)).join(" ")
      }.\n`
  )
  printMarkdownTable([
    ["measure", "measure", "left"],
    ["n", "n", "right"],
    ["p50", "p50", "right"],
    ["p95", "p95", "right"],
    ["p99", "p99", "right"],
    ["max", "max", "right"]
  ], rows)
  mkdirSync(`${ROOT}bench/results`, { recursive: true })
  const file = `${ROOT}bench/results/fleet-wait-${new Date().toISOString().replace(/[:.]/g, "-")}.json`
  writeFileSync(file, JSON.stringify({ config, rows, incomplete }, null, 2))
  console.error(`results: ${file}`)
}

main().catch((error) => {
  console.error(error)
  process.exitCode = 1
}).finally(() => {
  for (const child of children) {
    child.removeAllListeners("exit")
    child.kill("SIGKILL")
  }
})
