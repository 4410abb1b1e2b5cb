/**
 * What naming the routed requests in OpenTelemetry costs (docs/observability.md): CPU time per request of the host, on the
 * GitHub routes (every route requested in turn, 8 at a time over keep-alive connections), measured in the host
 * process itself (`process.cpuUsage`), so the client's work counts for nothing.
 *
 * - with OpenTelemetry's SDK and HTTP instrumentation: the library naming each request's span and metric point, versus
 *   the library naming nothing, in one process (passes alternating between the two: `named`, `unnamed`) and in two
 *   (one where the library names, one where it cannot see `@opentelemetry/api`: `namedHost`, `unnamedHost`);
 * - without an SDK: the library with `@opentelemetry/api` installed, versus without it, versus a build with no
 *   telemetry code in the router at all.
 *
 * The machine's other load changes a host's CPU per request by tens of percent from one minute to the next, so the
 * variants are not run one after another: each round starts one host of every variant, and they take turns, one pass
 * each (their order rotating), so that every variant sees the same load. Two processes running the same code still
 * differ by up to 28% on a loaded machine (where each lands, what its JIT made), which is why the SDK comparison is
 * also made inside one process, where only the naming differs. Each round gives a ratio per comparison; the median
 * over `ROUNDS` rounds (default 5) is the figure, and the lowest and highest show the spread. `VARIANTS=named,unnamed`
 * (the keys below) runs some of them; `CPU_PROFILE=<dir>` writes each process's V8 profile of its measured passes
 * there (`<variant>-<round>.cpuprofile`), to see where the CPU goes.
 *
 *   npm run build && npm run bench:otel
 */
import { type ChildProcess, spawn, spawnSync } from "node:child_process"
import * as Http from "node:http"
import * as Os from "node:os"
import * as Path from "node:path"
import * as Scenario from "./router.js"

const ROUNDS = Number(process.env.ROUNDS ?? 5)
const PASSES = Number(process.env.PASSES ?? 8)
const CONCURRENCY = 8

interface Variant {
  readonly name: string
  readonly env: Readonly<Record<string, string>>
  /** The variant whose process this one's passes run in (with the library's naming off). */
  readonly sharing?: Key
  /** What the shared process is told before each of this variant's passes (default `"naming off"`). */
  readonly naming?: string
}

// In the order they take turns, which keeps the two variants sharing a process apart: a pass right after another pass
// of the same process finds its caches warm.
const variants = {
  named: { name: "SDK + HTTP instrumentation, routes named (one process)", env: { OTEL: "sdk", NAMING: "toggle" } },
  namedHost: { name: "SDK + HTTP instrumentation, routes named (a process)", env: { OTEL: "sdk", NAMING: "on" } },
  api: { name: "no SDK, @opentelemetry/api seen by the library", env: { OTEL: "none", NAMING: "on" } },
  unnamed: { name: "SDK + HTTP instrumentation, library names nothing (the same process)", env: {}, sharing: "named" },
  byHand: {
    name: "SDK + HTTP instrumentation, the host's handler names the route itself (the same process)",
    env: {},
    sharing: "named",
    naming: "naming by hand"
  },
  unnamedHost: {
    name: "SDK + HTTP instrumentation, library names nothing (another process)",
    env: { OTEL: "sdk", NAMING: "off" }
  },
  noApi: { name: "no SDK, @opentelemetry/api not seen by the library", env: { OTEL: "none", NAMING: "off" } },
  stripped: { name: "no SDK, a build with no telemetry code in the router", env: { OTEL: "none", NAMING: "stripped" } }
} satisfies Record<string, Variant>
type Key = "named" | "unnamed" | "byHand" | "namedHost" | "unnamedHost" | "api" | "noApi" | "stripped"
// `VARIANTS=named,unnamed` runs only those (and the comparisons between them).
const keys = (process.env.VARIANTS?.split(",") ?? Object.keys(variants)).filter((key): key is Key => key in variants)

const comparisons: ReadonlyArray<readonly [label: string, a: Key, b: Key]> = [
  ["naming, with the SDK, in one process (named / names nothing)", "named", "unnamed"],
  ["naming, with the SDK, in one process (named / the host naming by hand)", "named", "byHand"],
  ["naming by hand, with the SDK, in one process (by hand / names nothing)", "byHand", "unnamed"],
  ["naming, with the SDK, in two processes (named / names nothing)", "namedHost", "unnamedHost"],
  ["@opentelemetry/api installed, no SDK (seen / not seen)", "api", "noApi"],
  ["@opentelemetry/api not installed (not seen / no telemetry code)", "noApi", "stripped"],
  ["@opentelemetry/api installed, no SDK (seen / no telemetry code)", "api", "stripped"]
]

const message = <A>(child: ChildProcess): Promise<A> =>
  new Promise((resolve) => child.once("message", (m) => resolve(m as A)))

const requests = Scenario.requests(10_000, "github")

const send = (agent: Http.Agent, port: number, request: Scenario.RouterRequest): Promise<void> =>
  new Promise((resolve, reject) => {
    const req = Http.request({ agent, port, host: "127.0.0.1", method: request.method, path: request.path }, (res) => {
      let body = ""
      res.setEncoding("utf8")
      res.on("data", (chunk) => (body += chunk))
      res.on(
        "end",
        () =>
          res.statusCode === 200 && body === request.body ? resolve() : reject(new Error(`${request.path}: ${body}`))
      )
    })
    req.on("error", reject)
    req.end()
  })

interface Process {
  readonly child: ChildProcess
  readonly port: number
  readonly agent: Http.Agent
}

/** A variant's passes: the process they run in, what it is told first (`naming on` or `off`), the CPU they took. */
interface Host {
  readonly process: Process
  readonly naming: string | undefined
  cpu: number
}

const PROFILES = process.env.CPU_PROFILE

// As `bench/run.ts` does: every host on core 1, this client on core 0 (when `taskset` is there), so that the hosts'
// threads all run in the same place.
const PINNED = spawnSync("taskset", ["-a", "-p", "-c", "0", String(process.pid)]).status === 0

const start = async (variant: Variant, profile: string | undefined): Promise<Process> => {
  const command = [process.execPath, "--import", "tsx", "bench/otel-host.ts"]
  const [file, ...args] = PINNED ? ["taskset", "-c", "1", ...command] : command
  const child = spawn(file!, args, {
    env: {
      ...process.env,
      TSX_TSCONFIG_PATH: "bench/tsconfig.json",
      ...variant.env,
      ...(profile === undefined ? {} : { CPU_PROFILE: profile })
    },
    stdio: ["ignore", "inherit", "inherit", "ipc"]
  })
  const { port } = await message<{ port: number }>(child)
  return { child, port, agent: new Http.Agent({ keepAlive: true, maxSockets: CONCURRENCY }) }
}

// Every message is answered, the ones that only set something with the CPU time too.
const ask = <A>(process: Process, question: string): Promise<A> => {
  const reply = message<A>(process.child)
  process.child.send(question)
  return reply
}

const cpuOf = async (process: Process): Promise<number> => (await ask<{ cpu: number }>(process, "cpu")).cpu

// Every route once, 8 at a time.
const requestAll = async ({ agent, port }: Process): Promise<void> => {
  let next = 0
  const worker = async () => {
    while (next < requests.length) await send(agent, port, requests[next++]!)
  }
  await Promise.all(Array.from({ length: CONCURRENCY }, worker))
}

const pass = async (host: Host): Promise<void> => {
  if (host.naming !== undefined) await ask(host.process, host.naming)
  await requestAll(host.process)
}

/** One pass of `host`, its CPU time added to the host's. */
const measuredPass = async (host: Host): Promise<void> => {
  if (host.naming !== undefined) await ask(host.process, host.naming)
  const before = await cpuOf(host.process)
  await requestAll(host.process)
  host.cpu += (await cpuOf(host.process)) - before
}

/** CPU microseconds per request of each variant, the variants taking turns, after two warm-up passes each. */
const round = async (index: number): Promise<Record<Key, number>> => {
  const processes = new Map<Key, Process>()
  const processOf = async (key: Key): Promise<Process> => {
    const variant: Variant = variants[key]
    if (variant.sharing !== undefined) return processOf(variant.sharing)
    const known = processes.get(key)
    if (known !== undefined) return known
    const started = await start(variant, PROFILES && Path.join(PROFILES, `${key}-${index + 1}.cpuprofile`))
    processes.set(key, started)
    return started
  }
  try {
    const hosts: Array<Host> = []
    for (const key of keys) {
      const variant: Variant = variants[key]
      const naming = variant.env.NAMING === "toggle" ? "naming on" : variant.sharing && (variant.naming ?? "naming off")
      hosts.push({ process: await processOf(key), naming, cpu: 0 })
    }
    for (const host of hosts) {
      await pass(host)
      await pass(host)
    }
    if (PROFILES !== undefined) { for (const process of processes.values()) await ask(process, "profile") }
    for (let turn = 0; turn < PASSES; turn++) {
      for (let i = 0; i < hosts.length; i++) await measuredPass(hosts[(i + turn + index) % hosts.length]!)
    }
    if (PROFILES !== undefined) { for (const process of processes.values()) await ask(process, "stop") }
    return Object.fromEntries(keys.map((key, i) => [key, hosts[i]!.cpu / (PASSES * requests.length)])) as Record<
      Key,
      number
    >
  } finally {
    for (const process of processes.values()) {
      process.agent.destroy()
      process.child.kill()
    }
  }
}

const sorted = (values: ReadonlyArray<number>) => [...values].sort((a, b) => a - b)
const median = (values: ReadonlyArray<number>) => sorted(values)[Math.floor(values.length / 2)]!
const percent = (ratio: number) => `${ratio >= 1 ? "+" : ""}${((ratio - 1) * 100).toFixed(1)}%`
const load = () =>
  Os.loadavg()
    .map((l) => l.toFixed(1))
    .join(" ")

const results: Array<Record<Key, number>> = []
console.error(`load average at the start: ${load()}; ${PINNED ? "hosts on core 1, client on core 0" : "no taskset"}`)
for (let index = 0; index < ROUNDS; index++) {
  const result = await round(index)
  results.push(result)
  const figures = keys.map((key) => `${key} ${result[key].toFixed(1)}`).join(", ")
  console.error(`round ${index + 1}/${ROUNDS} (load ${load()}): ${figures} µs CPU per request`)
}

console.log(
  `GitHub routes (${requests.length}), ${PASSES} passes a host, ${ROUNDS} rounds; load average at the end ${load()}`
)
console.log("CPU per request, median (lowest–highest) over the rounds:")
for (const key of keys) {
  const values = sorted(results.map((result) => result[key]))
  console.log(
    `  ${variants[key].name}: ${median(values).toFixed(1)} µs (${values[0]!.toFixed(1)}–${values.at(-1)!.toFixed(1)})`
  )
}
console.log("change, median of the rounds' ratios (lowest–highest):")
for (const [label, a, b] of comparisons.filter(([, a, b]) => keys.includes(a) && keys.includes(b))) {
  const ratios = sorted(results.map((result) => result[a] / result[b]))
  console.log(`  ${label}: ${percent(median(ratios))} (${percent(ratios[0]!)} to ${percent(ratios.at(-1)!)})`)
}
