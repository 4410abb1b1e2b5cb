/**
 * The benchmark: `node --import tsx bench/run.ts [--quick] [--rounds N] [--duration SECONDS] [--only IDS]
 * [--baseline DIR]`, where IDS
 * is a comma-separated list of parts to run (get, mix, post, pg-get, pg-mix, pg-post, router, which also runs
 * router-github; memory, the heap per stored route; table, the route table against radix routers by bench/table.ts;
 * writes, creates, updates and deletes per second on Postgres against its peers by bench/writes.ts, with DATABASE_URL);
 * all of them without `--only`. IDS
 * may also name servers (lean-node, fastify-plain, ours-node, npm-start, …): each scenario then runs only those and
 * its reference, and with no part named, every scenario that has one of them runs. npm-start is the example host run
 * with the command line of package.json's `start` script (the compiled library), seeded through its API.
 *
 * Every server (the library's three adapters and the peers in bench/peers) runs as a process of its own pinned to
 * core 1; wrk, pinned to core 0, loads one server at a time over 127.0.0.1. Each server stores its seed routes
 * through its own store code before it listens (SEED), and is checked through its API before any load. Each
 * scenario warms every server up, then runs rounds; in each round every server is loaded once (the order rotates
 * from round to round), so a ratio is taken within a round, pair by pair, and the median of those ratios reported.
 * Every library entry is shown against the scenario's reference, its targets' references, and the lean peers (the
 * hand-written `node:http` server and plain Fastify, both serving the whole contract) wherever they run, and the
 * listener's p99 latency against the lean `node:http` peer's.
 * Results go to bench/results/<time>.json; a table is printed.
 */
import { type ChildProcess, spawn, spawnSync } from "node:child_process"
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { cpus, tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath, pathToFileURL } from "node:url"
import type { Probe, Probed } from "./fleet-probe.js"
import { seedInput } from "./peers/shared.js"
import { type Column, printTable } from "./print.js"
import * as Router from "./router.js"

const ROOT = fileURLToPath(new URL("..", import.meta.url))
// Servers resolve the library to its compiled form in dist/, not to the TypeScript sources.
const COMPILED = { TSX_TSCONFIG_PATH: "bench/tsconfig.json" }
const ADMIN_TOKEN = "bench-admin-token"
const READ_TOKEN = "bench-read-token"

// ---------------------------------------------------------------------------------------------------------------
// Configuration
// ---------------------------------------------------------------------------------------------------------------

const argv = process.argv.slice(2)
const flag = (name: string) => argv.includes(name)
const numberOption = (name: string, fallback: number) => {
  const i = argv.indexOf(name)
  const value = i === -1 ? undefined : Number(argv[i + 1])
  if (value !== undefined && !(value > 0)) throw new Error(`${name} needs a positive number`)
  return value ?? fallback
}

const QUICK = flag("--quick")
const config = {
  quick: QUICK,
  rounds: numberOption("--rounds", QUICK ? 3 : 5),
  seconds: numberOption("--duration", QUICK ? 1 : 5),
  warmupSeconds: QUICK ? 1 : 3,
  connections: 50,
  seed: 1_000,
  scaleSeed: QUICK ? 200_000 : 1_000_000,
  memoryRoutes: 200_000
}
const DATABASE_URL = process.env.DATABASE_URL === "" ? undefined : process.env.DATABASE_URL
// --baseline DIR: another checkout of the library, built (`npm run build` there), whose `npm start` and Node listener
// run in the same rounds as this one's (`npm-start@base`, `ours-node@base`, and its router on the GitHub routes,
// `ours-router-github@base`): an earlier commit measured against this one on the same loaded machine, taking turns.
const BASELINE = (() => {
  const i = argv.indexOf("--baseline")
  return i === -1 ? undefined : argv[i + 1]
})()

// ---------------------------------------------------------------------------------------------------------------
// Servers and scenarios
// ---------------------------------------------------------------------------------------------------------------

interface ServerSpec {
  readonly name: string
  readonly file: string
  readonly seed: number
  readonly postgres?: boolean
  /** A server of the router scenario: it serves `bench/router.ts`'s routes rather than the API alone. */
  readonly router?: boolean
  /** One of the library's entries, shown against the lean peers too. */
  readonly library?: boolean
  /**
   * The example host of `npm start`, run as that script runs it (its command line is read from package.json); it
   * stores no seed of its own, so its seed routes are created through its API once it listens.
   */
  readonly npmStart?: boolean
  /** More environment for the server's process (which framework a file of several serves). */
  readonly env?: Readonly<Record<string, string>>
  /** For a router server: the set of routes it serves (bench/router.ts), passed as `ROUTE_SET`; default `rest`. */
  readonly routeSet?: Router.RouteSet
  /** The checkout the server runs from (`--baseline`); this one when omitted. */
  readonly root?: string
}

// The GitHub REST API's routes, all of them (bench/router.ts).
const GITHUB = Router.routes(Infinity, "github").length
const scaleName = `ours-node@${config.scaleSeed.toLocaleString("en-US")}`
const servers: ReadonlyArray<ServerSpec> = [
  { name: "ours-node", file: "bench/ours/node-listener.ts", seed: config.seed, library: true },
  {
    name: "ours-node-telemetry",
    file: "bench/ours/node-listener.ts",
    seed: config.seed,
    library: true,
    env: { TELEMETRY: "1" }
  },
  { name: "ours-httpapp", file: "bench/ours/http-app.ts", seed: config.seed, library: true },
  { name: "ours-web", file: "bench/ours/web-handler.ts", seed: config.seed, library: true },
  { name: "npm-start", file: "examples/server.ts", seed: config.seed, library: true, npmStart: true },
  { name: "lean-node", file: "bench/peers/lean-node.ts", seed: config.seed },
  // The floor of the library's telemetry: lean-node recording the same span and metrics as cheaply as Effect allows.
  { name: "lean-node-telemetry", file: "bench/peers/lean-node.ts", seed: config.seed, env: { TELEMETRY: "1" } },
  { name: "fastify-plain", file: "bench/peers/fastify-plain.ts", seed: config.seed },
  { name: "raw-node", file: "bench/peers/raw-node.ts", seed: config.seed },
  { name: "fastify", file: "bench/peers/fastify.ts", seed: config.seed },
  { name: "express", file: "bench/peers/express.ts", seed: config.seed },
  { name: "hono", file: "bench/peers/hono.ts", seed: config.seed },
  { name: "effect-httpapi", file: "bench/peers/effect-httpapi.ts", seed: config.seed },
  { name: scaleName, file: "bench/ours/node-listener.ts", seed: config.scaleSeed, library: true },
  { name: "ours-node-pg", file: "bench/ours/node-listener.ts", seed: config.seed, postgres: true, library: true },
  { name: "fastify-pg", file: "bench/peers/fastify-pg.ts", seed: config.seed, postgres: true },
  { name: "ours-router", file: "bench/ours/router.ts", seed: config.seed, router: true, library: true },
  { name: "fastify-router", file: "bench/peers/fastify-router.ts", seed: config.seed, router: true },
  ...(["fastify", "express", "hono"] as const).map((framework): ServerSpec => ({
    name: `${framework}-integration`,
    file: "bench/ours/integrations.ts",
    seed: config.seed,
    router: true,
    library: true,
    env: { FRAMEWORK: framework }
  })),
  ...(["express", "hono"] as const).map((framework): ServerSpec => ({
    name: `${framework}-router`,
    file: "bench/peers/native-routers.ts",
    seed: config.seed,
    router: true,
    env: { FRAMEWORK: framework }
  })),
  {
    name: "ours-router-github",
    file: "bench/ours/router.ts",
    seed: GITHUB,
    router: true,
    library: true,
    routeSet: "github"
  },
  {
    name: "find-my-way-github",
    file: "bench/peers/find-my-way-router.ts",
    seed: GITHUB,
    router: true,
    routeSet: "github"
  },
  ...(["fastify", "express", "hono"] as const).map((framework): ServerSpec => ({
    name: `${framework}-integration-github`,
    file: "bench/ours/integrations.ts",
    seed: GITHUB,
    router: true,
    library: true,
    routeSet: "github",
    env: { FRAMEWORK: framework }
  })),
  {
    name: "fastify-router-github",
    file: "bench/peers/fastify-router.ts",
    seed: GITHUB,
    router: true,
    routeSet: "github"
  },
  ...(BASELINE === undefined ? [] : [
    { name: "npm-start@base", file: "examples/server.ts", seed: config.seed, npmStart: true, root: BASELINE },
    { name: "ours-node@base", file: "bench/ours/node-listener.ts", seed: config.seed, root: BASELINE },
    {
      name: "ours-node-telemetry@base",
      file: "bench/ours/node-listener.ts",
      seed: config.seed,
      root: BASELINE,
      env: { TELEMETRY: "1" }
    },
    {
      name: "ours-router-github@base",
      file: "bench/ours/router.ts",
      seed: GITHUB,
      router: true,
      library: true,
      routeSet: "github",
      root: BASELINE
    } satisfies ServerSpec
  ])
]

type Mode = "get" | "post" | "mix" | "router"

interface Scenario {
  readonly id: string
  /** The part of `--only` that runs it, when not its id. */
  readonly part?: string
  readonly title: string
  readonly mode: Mode
  readonly servers: ReadonlyArray<string>
  /** What every server's ratio is shown against. */
  readonly reference: string
}

// --quick keeps the servers the targets compare.
const all = <A>(full: ReadonlyArray<A>, quick: ReadonlyArray<A>) => QUICK ? quick : full
// The lean peers: the whole contract on node:http written for speed, and on Fastify as its documentation teaches.
const LEAN_PEERS = ["lean-node", "fastify-plain"]
const BASELINE_SERVERS = BASELINE === undefined ? [] : ["npm-start@base", "ours-node@base", "ours-node-telemetry@base"]
const memoryServers = all(
  [
    "ours-node",
    "ours-node-telemetry",
    "lean-node-telemetry",
    "npm-start",
    "ours-httpapp",
    "ours-web",
    ...LEAN_PEERS,
    "raw-node",
    "fastify",
    "express",
    "hono",
    "effect-httpapi"
  ],
  ["ours-node", "npm-start", "ours-httpapp", ...LEAN_PEERS, "raw-node", "fastify", "effect-httpapi"]
).concat(BASELINE_SERVERS)
const postServers = all(
  memoryServers,
  ["ours-node", "npm-start", "ours-httpapp", ...LEAN_PEERS, "fastify", "effect-httpapi", ...BASELINE_SERVERS]
)
const pgServers = ["ours-node-pg", "fastify-pg"]
const allScenarios: ReadonlyArray<Scenario> = [
  { id: "get", title: "GET by id (memory)", mode: "get", servers: [...memoryServers, scaleName], reference: "fastify" },
  ...all<Scenario>([{
    id: "mix",
    title: "90/10 mix (memory)",
    mode: "mix",
    servers: memoryServers,
    reference: "fastify"
  }], []),
  { id: "post", title: "POST create (memory)", mode: "post", servers: postServers, reference: "fastify" },
  ...(DATABASE_URL === undefined ? [] : [
    { id: "pg-get", title: "GET by id (postgres)", mode: "get", servers: pgServers, reference: "fastify-pg" },
    ...all<Scenario>([{
      id: "pg-mix",
      title: "90/10 mix (postgres)",
      mode: "mix",
      servers: pgServers,
      reference: "fastify-pg"
    }], []),
    { id: "pg-post", title: "POST create (postgres)", mode: "post", servers: pgServers, reference: "fastify-pg" }
  ] satisfies ReadonlyArray<Scenario>),
  {
    id: "router",
    title: `router: ${config.seed.toLocaleString("en-US")} stored routes (memory)`,
    mode: "router",
    servers: [
      "ours-router",
      "fastify-router",
      "fastify-integration",
      "express-router",
      "express-integration",
      "hono-router",
      "hono-integration"
    ],
    reference: "fastify-router"
  },
  {
    id: "router-github",
    part: "router",
    title: `router: the GitHub REST API's ${GITHUB.toLocaleString("en-US")} routes (memory)`,
    mode: "router",
    // Express's and Hono's own routers cannot express the mixed segment `:base...:head`
    // (test/bench-peers/routers.test.ts).
    servers: [
      "ours-router-github",
      "find-my-way-github",
      "fastify-router-github",
      "fastify-integration-github",
      "express-integration-github",
      "hono-integration-github",
      ...(BASELINE === undefined ? [] : ["ours-router-github@base"])
    ],
    reference: "find-my-way-github"
  }
]
const only = argv.includes("--only") ? argv[argv.indexOf("--only") + 1]?.split(",") ?? [] : undefined
const serverNames = new Set(servers.map((spec) => spec.name))
const onlyServers = only?.filter((id) => serverNames.has(id)) ?? []
const onlyParts = only?.filter((id) => !serverNames.has(id))
const scenarios = allScenarios
  .filter((scenario) =>
    onlyParts === undefined || onlyParts.includes(scenario.id) || onlyParts.includes(scenario.part ?? scenario.id) ||
    (onlyParts.length === 0 && scenario.servers.some((name) => onlyServers.includes(name)))
  )
  .map((scenario) =>
    onlyServers.length === 0 ? scenario : {
      ...scenario,
      servers: scenario.servers.filter((name) => onlyServers.includes(name) || name === scenario.reference)
    }
  )
const selected = (part: "memory" | "table" | "writes") => onlyParts === undefined || onlyParts.includes(part)
const libraryEntries = new Set(servers.filter((spec) => spec.library === true).map((spec) => spec.name))

interface Target {
  readonly scenario: string
  readonly server: string
  readonly reference: string
  readonly min: number
}

const targets: ReadonlyArray<Target> = [
  { scenario: "get", server: "ours-node", reference: "lean-node", min: 1.0 },
  { scenario: "post", server: "ours-node", reference: "lean-node", min: 1.0 },
  { scenario: "get", server: "npm-start", reference: "ours-node", min: 0.95 },
  { scenario: "post", server: "npm-start", reference: "ours-node", min: 0.95 },
  { scenario: "get", server: "ours-node", reference: "fastify", min: 1.0 },
  { scenario: "get", server: "ours-node", reference: "raw-node", min: 0.85 },
  { scenario: "post", server: "ours-node", reference: "fastify", min: 1.0 },
  { scenario: "get", server: "ours-httpapp", reference: "effect-httpapi", min: 1.5 },
  { scenario: "post", server: "ours-httpapp", reference: "effect-httpapi", min: 1.5 },
  { scenario: "get", server: scaleName, reference: "ours-node", min: 0.9 },
  { scenario: "pg-get", server: "ours-node-pg", reference: "fastify-pg", min: 0.9 },
  { scenario: "pg-post", server: "ours-node-pg", reference: "fastify-pg", min: 0.9 },
  { scenario: "router", server: "ours-router", reference: "fastify-router", min: 0.9 },
  { scenario: "router", server: "fastify-integration", reference: "fastify-router", min: 0.9 },
  { scenario: "router", server: "express-integration", reference: "express-router", min: 1.0 },
  { scenario: "router-github", server: "ours-router-github", reference: "find-my-way-github", min: 0.95 },
  { scenario: "router-github", server: "fastify-integration-github", reference: "fastify-router-github", min: 0.9 }
]
const MEMORY_TARGET = 1.5

/** p99 latency at 50 connections: the server's over the reference's, in the same round, at most `max`. */
interface LatencyTarget {
  readonly scenario: string
  readonly server: string
  readonly reference: string
  readonly max: number
}

const latencyTargets: ReadonlyArray<LatencyTarget> = [
  { scenario: "get", server: "ours-node", reference: "lean-node", max: 1.2 },
  { scenario: "post", server: "ours-node", reference: "lean-node", max: 1.2 }
]

// ---------------------------------------------------------------------------------------------------------------
// Tools
// ---------------------------------------------------------------------------------------------------------------

const has = (command: string) => spawnSync("sh", ["-c", `command -v ${command}`]).status === 0

const ensureTools = () => {
  if (!has("taskset")) throw new Error("taskset is missing: install util-linux")
  if (has("wrk")) return
  console.log("wrk is missing: installing it from Debian's packages (apt-get install -y wrk)")
  const install = () => spawnSync("apt-get", ["install", "-y", "wrk"], { stdio: "inherit" }).status === 0
  if (!install()) {
    spawnSync("apt-get", ["update"], { stdio: "inherit" })
    if (!install()) throw new Error("could not install wrk: run `apt-get install -y wrk` as root")
  }
}

const median = (values: ReadonlyArray<number>) => {
  const sorted = [...values].sort((a, b) => a - b)
  const middle = Math.floor(sorted.length / 2)
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2
}

// ---------------------------------------------------------------------------------------------------------------
// Server processes
// ---------------------------------------------------------------------------------------------------------------

interface Running {
  readonly spec: ServerSpec
  readonly process: ChildProcess
  readonly origin: string
  readonly idsFile: string
  readonly output: () => string
}

// Made by main, removed by cleanUp: nothing is written when this module is only imported.
const work = join(tmpdir(), `route-registry-bench-${process.pid}`)
// The router scenarios' requests, a line each, for wrk's script: a file per set of routes.
const routerRequests = (set: Router.RouteSet) => join(work, `router-${set}.requests`)
const running: Array<Running> = []
const tables: Array<string> = []

/**
 * What `npm start` runs, read from package.json (`NAME=value … node <args>`), so the benchmark measures that command
 * and not a copy of it. Its process is node itself, pinned and measured as the others are (npm's own process is not).
 */
export const npmStartCommand = (
  root = ROOT
): { readonly env: Record<string, string>; readonly args: ReadonlyArray<string> } => {
  const script: string = JSON.parse(readFileSync(join(root, "package.json"), "utf8")).scripts.start
  const words = script.trim().split(/\s+/)
  const env: Record<string, string> = {}
  while (words.length > 0 && /^[A-Z_][A-Z0-9_]*=/.test(words[0]!)) {
    const [name, ...value] = words.shift()!.split("=")
    env[name!] = value.join("=")
  }
  if (words.shift() !== "node") throw new Error(`npm start runs something other than node: ${script}`)
  return { env, args: words }
}

/** A benchmark's option `--<name> <whole number from 1>`, or `fallback` when it is not given. */
export const wholeOption = (name: string, fallback: number): number => {
  const argv = process.argv.slice(2)
  const i = argv.indexOf(`--${name}`)
  const value = Number(i === -1 ? fallback : argv[i + 1])
  if (!Number.isInteger(value) || value < 1) throw new Error(`--${name} needs a whole number from 1`)
  return value
}

/**
 * The environment of an `npm start` host that a benchmark starts: `npm start`'s own variables, a free port on
 * loopback, the two tokens (the read token may report to the fleet, `fleet:report`, as followers' tokens do), the
 * memory store unless `extra` names a database, and `extra` over all.
 */
export const npmStartEnv = (
  tokens: { readonly admin: string; readonly read: string },
  extra: Record<string, string> = {}
): NodeJS.ProcessEnv => ({
  ...process.env,
  ...npmStartCommand().env,
  NODE_ENV: "production",
  PORT: "0",
  HOST: "127.0.0.1",
  ROUTING_ADMIN_TOKENS: tokens.admin,
  ROUTING_TOKENS: JSON.stringify([{ name: "reader", token: tokens.read, scopes: ["routes:read", "fleet:report"] }]),
  DATABASE_URL: "",
  ...extra
})

/**
 * Asks a host started with `bench/fleet-probe.ts` preloaded for its heap, RSS and CPU (`gc`: after a collection),
 * one question at a time, so each answer is the one its question asked for.
 */
export const prober = (child: ChildProcess) => {
  let asking = Promise.resolve<unknown>(undefined)
  return (gc: boolean): Promise<Probed> => {
    const answer = asking.then(() =>
      new Promise<Probed>((resolve) => {
        child.once("message", (message: Probed) => resolve(message))
        child.send({ type: "probe", gc } satisfies Probe)
      })
    )
    asking = answer
    return answer
  }
}

/**
 * Waits for a started `npm start` host to print `listening on <origin>`, collecting what it prints; a host that exits
 * first, or takes longer than `timeoutMillis`, is killed and rejected with its output.
 */
export const listeningOrigin = (
  child: ChildProcess,
  name: string,
  timeoutMillis: number
): Promise<{ readonly origin: string; readonly output: () => string }> => {
  let output = ""
  child.stdout!.on("data", (chunk) => (output += chunk))
  child.stderr!.on("data", (chunk) => (output += chunk))
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => fail(new Error(`${name} did not listen within ${timeoutMillis} ms`)), timeoutMillis)
    const fail = (error: Error) => {
      clearTimeout(timer)
      child.kill("SIGKILL")
      reject(new Error(`${error.message}\n${output}`))
    }
    child.once("exit", (code) => fail(new Error(`${name} exited with ${code}`)))
    const onData = () => {
      const match = /listening on (http:\/\/\S+)/.exec(output)
      if (match === null) return
      clearTimeout(timer)
      child.stdout!.off("data", onData)
      child.removeAllListeners("exit")
      resolve({ origin: match[1]!, output: () => output })
    }
    child.stdout!.on("data", onData)
  })
}

/**
 * Creates `count` routes (`seedInput(0…count - 1)`) through the API of the server at `origin`, `concurrency` creates
 * in flight at once: how a benchmark fills an `npm start` host with a large table.
 */
export const seedConcurrently = async (
  origin: string,
  adminToken: string,
  count: number,
  concurrency = 32
): Promise<void> => {
  let next = 0
  const worker = async () => {
    while (next < count) {
      const i = next++
      const created = await fetch(`${origin}/v1/routing`, {
        method: "POST",
        headers: { authorization: `Bearer ${adminToken}`, "content-type": "application/json" },
        body: JSON.stringify(seedInput(i))
      })
      if (created.status !== 201) throw new Error(`seeding answered ${created.status}: ${await created.text()}`)
      await created.arrayBuffer()
    }
  }
  await Promise.all(Array.from({ length: concurrency }, worker))
}

// The seed routes of a server that stores none itself, created through its API one after another (as `seedInput`).
const seedThroughApi = async (server: Running) => {
  const ids: Array<string> = []
  for (let i = 0; i < server.spec.seed; i++) {
    const created = await fetch(`${server.origin}/v1/routing`, {
      method: "POST",
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, "content-type": "application/json" },
      body: JSON.stringify(seedInput(i))
    })
    if (created.status !== 201) throw new Error(`${server.spec.name}: seeding answered ${created.status}`)
    ids.push(((await created.json()) as { readonly id: string }).id)
  }
  writeFileSync(server.idsFile, ids.join("\n") + "\n")
}

const startServer = (spec: ServerSpec): Promise<Running> => {
  const idsFile = join(work, `${spec.name.replace(/[^a-z0-9-]/gi, "_")}.ids`)
  const table = `bench_${process.pid}_${spec.name.replace(/[^a-z0-9]/gi, "_")}`
  if (spec.postgres === true) tables.push(table)
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    NODE_ENV: "production",
    PORT: "0",
    HOST: "127.0.0.1",
    ROUTING_ADMIN_TOKENS: ADMIN_TOKEN,
    ROUTING_READ_TOKENS: READ_TOKEN,
    SEED: String(spec.seed),
    SEED_IDS: idsFile,
    DATABASE_URL: spec.postgres === true ? DATABASE_URL : "",
    TABLE: table
  }
  const root = spec.root ?? ROOT
  const npmStart = spec.npmStart === true ? npmStartCommand(root) : undefined
  const child = npmStart !== undefined
    ? spawn(process.execPath, npmStart.args, {
      cwd: root,
      env: { ...env, ...npmStart.env },
      stdio: ["ignore", "pipe", "pipe"]
    })
    : spawn(process.execPath, ["--max-old-space-size=4096", "--import", "tsx", spec.file], {
      cwd: root,
      env: { ...env, ...COMPILED, ...spec.env, ...(spec.routeSet === undefined ? {} : { ROUTE_SET: spec.routeSet }) },
      stdio: ["ignore", "pipe", "pipe"]
    })
  let output = ""
  child.stdout.on("data", (chunk) => (output += chunk))
  child.stderr.on("data", (chunk) => (output += chunk))
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => fail(new Error(`${spec.name} did not start within 180 s`)), 180_000)
    const fail = (error: Error) => {
      clearTimeout(timer)
      child.kill("SIGKILL")
      reject(new Error(`${error.message}\n${output}`))
    }
    child.once("exit", (code) => fail(new Error(`${spec.name} exited with ${code}`)))
    const onData = () => {
      const match = /listening on (http:\/\/\S+)/.exec(output)
      if (match === null) return
      clearTimeout(timer)
      child.stdout.off("data", onData)
      child.removeAllListeners("exit")
      // Started on both cores (start-up is compilation, not measured); every thread is now pinned to core 1, and
      // threads started later inherit it. The load generator owns core 0.
      if (spawnSync("taskset", ["-a", "-p", "-c", "1", String(child.pid)]).status !== 0) {
        return fail(new Error(`could not pin ${spec.name} to core 1`))
      }
      const server: Running = { spec, process: child, origin: match[1]!, idsFile, output: () => output }
      running.push(server)
      resolve(server)
    }
    child.stdout.on("data", onData)
  })
}

const stopServer = (server: Running): Promise<void> =>
  new Promise((resolve) => {
    if (server.process.exitCode !== null) return resolve()
    const timer = setTimeout(() => server.process.kill("SIGKILL"), 10_000)
    server.process.once("exit", () => {
      clearTimeout(timer)
      resolve()
    })
    server.process.kill("SIGTERM")
  })

const stopAll = async () => {
  await Promise.all(running.map(stopServer))
  running.length = 0
}

/**
 * Through the API: a create answered 201 and got back byte for byte, and a seeded route found. A router server: every
 * request of the scenario answered as `bench/router.ts` says.
 */
const check = async (server: Running) => {
  if (server.spec.router === true) {
    return Router.check(server.spec.name, server.origin, server.spec.seed, server.spec.routeSet)
  }
  const auth = { authorization: `Bearer ${ADMIN_TOKEN}` }
  const created = await fetch(`${server.origin}/v1/routing`, {
    method: "POST",
    headers: { ...auth, "content-type": "application/json" },
    body: JSON.stringify({ method: "GET", path: "/check/:id", middleware: ["auth"], handler: "Check#show" })
  })
  const text = await created.text()
  if (created.status !== 201) throw new Error(`${server.spec.name}: create answered ${created.status}: ${text}`)
  const found = await fetch(`${server.origin}${created.headers.get("location")}`, { headers: auth })
  if (found.status !== 200 || (await found.text()) !== text) throw new Error(`${server.spec.name}: get differs`)
  const seeded = readFileSync(server.idsFile, "utf8").split("\n").filter((line) => line !== "")
  if (seeded.length !== server.spec.seed) throw new Error(`${server.spec.name}: ${seeded.length} seeded ids`)
  const first = await fetch(`${server.origin}/v1/routing/${seeded[0]}`, { headers: auth })
  if (first.status !== 200) throw new Error(`${server.spec.name}: a seeded route answered ${first.status}`)
  await first.text()
}

// ---------------------------------------------------------------------------------------------------------------
// Load
// ---------------------------------------------------------------------------------------------------------------

interface Measurement {
  readonly rps: number
  readonly requests: number
  /** The server's CPU time (all its threads, GC included) per request: steadier than req/s on a busy machine. */
  readonly cpuUs: number
  readonly p50Ms: number
  readonly p99Ms: number
  /** Socket errors and responses with a status of 400 or more: any makes the measurement suspect. */
  readonly errors: number
}

let runs = 0

const ticksPerSecond = () => Number(spawnSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).stdout.trim()) || 100

/** CPU seconds a process has used, user and system, from /proc. */
const cpuSeconds = (pid: number) => {
  const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ")
  return (Number(fields[11]) + Number(fields[12])) / ticksPerSecond()
}

const load = (server: Running, mode: Mode, seconds: number): Promise<Measurement> => {
  const prefix = `b${++runs}`
  const args = [
    "-c",
    "0",
    "wrk",
    "-t1",
    `-c${config.connections}`,
    `-d${seconds}s`,
    "--timeout",
    "5s",
    "-s",
    join(ROOT, "bench/load.lua"),
    server.origin,
    "--",
    mode,
    mode === "post" ? "-" : mode === "router" ? routerRequests(server.spec.routeSet ?? "rest") : server.idsFile,
    ADMIN_TOKEN,
    prefix
  ]
  const cpuBefore = cpuSeconds(server.process.pid!)
  return new Promise((resolve, reject) => {
    const child = spawn("taskset", args, { stdio: ["ignore", "pipe", "pipe"] })
    let output = ""
    child.stdout.on("data", (chunk) => (output += chunk))
    child.stderr.on("data", (chunk) => (output += chunk))
    const timer = setTimeout(() => child.kill("SIGKILL"), (seconds + 60) * 1000)
    child.once("exit", () => {
      clearTimeout(timer)
      const line = /^BENCH (.*)$/m.exec(output)
      if (line === null) {
        return reject(new Error(`wrk against ${server.spec.name} printed no result:\n${output}\n${server.output()}`))
      }
      const r = JSON.parse(line[1]!)
      resolve({
        rps: r.requests / (r.duration_us / 1e6),
        requests: r.requests,
        cpuUs: (cpuSeconds(server.process.pid!) - cpuBefore) * 1e6 / r.requests,
        p50Ms: r.p50_us / 1000,
        p99Ms: r.p99_us / 1000,
        errors: r.connect + r.read + r.write + r.status + r.timeout
      })
    })
  })
}

// ---------------------------------------------------------------------------------------------------------------
// Memory
// ---------------------------------------------------------------------------------------------------------------

// A heap reading needs no core of its own: the stores are measured side by side, each in a process of its own.
const memory = (store: string): Promise<number> =>
  new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [
      "--expose-gc",
      "--import",
      "tsx",
      "bench/memory.ts",
      store,
      String(config.memoryRoutes)
    ], { cwd: ROOT, env: { ...process.env, ...COMPILED }, stdio: ["ignore", "pipe", "pipe"] })
    let output = ""
    child.stdout.on("data", (chunk) => (output += chunk))
    child.stderr.on("data", (chunk) => (output += chunk))
    const timer = setTimeout(() => child.kill("SIGKILL"), 300_000)
    child.once("exit", (code) => {
      clearTimeout(timer)
      const line = /^\{.*\}$/m.exec(output)
      if (code !== 0 || line === null) return reject(new Error(`memory ${store} failed:\n${output}`))
      resolve(JSON.parse(line[0]).bytesPerRoute)
    })
  })

// ---------------------------------------------------------------------------------------------------------------
// Main
// ---------------------------------------------------------------------------------------------------------------

interface ScenarioResult {
  readonly scenario: Scenario
  readonly rounds: Record<string, Array<Measurement>>
}

const measureMemory = async () => {
  const [library, map, peers] = await Promise.all([memory("library"), memory("map"), memory("peers")])
  console.log(`memory: heap per stored route, ${config.memoryRoutes.toLocaleString("en-US")} routes (${elapsed()})`)
  return { library: library!, map: map!, peers: peers! }
}

/**
 * bench/table.ts, pinned to core 1 as the servers are (nothing else runs by then): it prints its own table and
 * writes its own results; the report names that file.
 */
const runTable = (): { readonly file: string } => {
  console.log(`route table vs radix routers (bench/table.ts${QUICK ? " --quick" : ""})`)
  const child = spawnSync(
    "taskset",
    ["-c", "1", process.execPath, "--import", "tsx", "bench/table.ts", ...(QUICK ? ["--quick"] : [])],
    {
      cwd: ROOT,
      env: { ...process.env, ...COMPILED },
      encoding: "utf8",
      stdio: ["ignore", "pipe", "inherit"],
      maxBuffer: 64 * 1024 * 1024
    }
  )
  process.stdout.write(child.stdout)
  const file = /written to (\S+\.json)/.exec(child.stdout)?.[1]
  if (child.status !== 0 || file === undefined) throw new Error(`bench/table.ts failed (exit ${child.status})`)
  return { file }
}

/**
 * bench/writes.ts (its servers pinned to core 1, its callers to core 0, as it does itself), once the HTTP servers
 * are stopped: it prints its own table.
 */
const runWrites = (): void => {
  console.log(`writes on Postgres (bench/writes.ts${QUICK ? " --seconds 1" : ""})`)
  const child = spawnSync(
    process.execPath,
    ["--import", "tsx", "bench/writes.ts", ...(QUICK ? ["--seconds", "1"] : [])],
    { cwd: ROOT, env: process.env, stdio: "inherit" }
  )
  if (child.status !== 0) throw new Error(`bench/writes.ts failed (exit ${child.status})`)
}

const ratio = (result: ScenarioResult, server: string, reference: string): number | undefined => {
  const ours = result.rounds[server]
  const theirs = result.rounds[reference]
  if (ours === undefined || theirs === undefined) return undefined
  return median(ours.map((m, i) => m.rps / theirs[i]!.rps))
}

/** The median over rounds of (server p99 / reference p99), both measured in the same round. */
const p99Ratio = (result: ScenarioResult, server: string, reference: string): number | undefined => {
  const ours = result.rounds[server]
  const theirs = result.rounds[reference]
  if (ours === undefined || theirs === undefined) return undefined
  return median(ours.map((m, i) => m.p99Ms / theirs[i]!.p99Ms))
}

/**
 * What a server is shown against in a scenario: its targets' references, the scenario's reference and, for a library
 * entry, the lean peers; each only when it ran in that scenario, never the server itself.
 */
const referencesOf = (result: ScenarioResult, name: string): ReadonlyArray<string> =>
  [
    ...new Set([
      ...targets.filter((t) => t.scenario === result.scenario.id && t.server === name).map((t) => t.reference),
      result.scenario.reference,
      ...(libraryEntries.has(name) ? LEAN_PEERS : [])
    ])
  ].filter((reference) => reference !== name && result.rounds[reference] !== undefined)

const runScenario = async (scenario: Scenario, byName: Map<string, Running>): Promise<ScenarioResult> => {
  const rounds: Record<string, Array<Measurement>> = {}
  const list = scenario.servers.map((name) => byName.get(name)!)
  process.stdout.write(`${scenario.title}: warm-up`)
  for (const server of list) await load(server, scenario.mode, config.warmupSeconds)
  for (let round = 0; round < config.rounds; round++) {
    process.stdout.write(`, round ${round + 1}`)
    // The order rotates so no server always follows the same one.
    for (let i = 0; i < list.length; i++) {
      const server = list[(i + round) % list.length]!
      const measurement = await load(server, scenario.mode, config.seconds)
      ;(rounds[server.spec.name] ??= []).push(measurement)
    }
  }
  process.stdout.write(` (${elapsed()})\n`)
  return { scenario, rounds }
}

const dropTables = async () => {
  if (DATABASE_URL === undefined || tables.length === 0) return
  const { default: Pg } = await import("pg")
  const client = new Pg.Client({ connectionString: DATABASE_URL })
  await client.connect()
  try {
    for (const table of tables) await client.query(`DROP TABLE IF EXISTS "${table}", "${table}_migrations"`)
  } finally {
    await client.end()
  }
}

interface Row {
  readonly scenario?: string
  readonly server?: string
  readonly rps?: string
  readonly p99?: string
  readonly cpu?: string
  readonly vs?: string
  readonly ratio?: string
  readonly target?: string
  readonly result?: string
}

const columns: ReadonlyArray<Column<Row>> = [
  ["scenario", "scenario", "left"],
  ["server", "server", "left"],
  ["rps", "req/s (median)", "right"],
  ["p99", "p99 ms", "right"],
  ["cpu", "cpu us/req", "right"],
  ["vs", "vs", "left"],
  ["ratio", "ratio", "right"],
  ["target", "target", "left"],
  ["result", "result", "left"]
]

const started = Date.now()
const elapsed = () => `${Math.round((Date.now() - started) / 1000)} s`

const main = async () => {
  if (config.rounds < 3) throw new Error("--rounds must be at least 3")
  mkdirSync(work)
  ensureTools()
  // What users run is the compiled library: build it, and resolve "route-registry" to dist/ (bench/tsconfig.json).
  if (spawnSync("npm", ["run", "build"], { cwd: ROOT, stdio: "inherit" }).status !== 0) {
    throw new Error("npm run build failed")
  }
  const wrkVersion = spawnSync("wrk", ["--version"], { encoding: "utf8" }).stdout.split("\n")[0]?.trim()
  const notes: Array<string> = []
  if (QUICK) {
    notes.push(
      `--quick: ${config.rounds} rounds of ${config.seconds} s after ${config.warmupSeconds} s of warm-up; ` +
        `scale with ${config.scaleSeed.toLocaleString("en-US")} routes instead of 1,000,000; no 90/10 mix; ` +
        "Express, Hono and the web handler left out"
    )
  }
  if (DATABASE_URL === undefined) notes.push("Postgres scenarios skipped: DATABASE_URL is not set")
  for (const note of notes) console.log(note)

  writeFileSync(routerRequests("rest"), Router.requestLines(config.seed))
  writeFileSync(routerRequests("github"), Router.requestLines(GITHUB, "github"))
  const needed = new Set(scenarios.flatMap((scenario) => scenario.servers))
  const specs = servers.filter((spec) => needed.has(spec.name))
  console.log(
    `starting ${specs.length} servers (seeding ${config.seed.toLocaleString("en-US")} routes each` +
      (needed.has(scaleName) ? `, ${config.scaleSeed.toLocaleString("en-US")} for ${scaleName})` : ")")
  )
  // Settled all before going on, so a failed start leaves no server unaccounted for.
  const starts = await Promise.allSettled(specs.map(startServer))
  for (const start of starts) if (start.status === "rejected") throw start.reason
  const byName = new Map(running.map((server) => [server.spec.name, server]))
  for (const server of byName.values()) {
    if (server.spec.npmStart === true) await seedThroughApi(server)
    await check(server)
  }
  console.log(`started and checked in ${elapsed()}`)

  const results: Array<ScenarioResult> = []
  for (const scenario of scenarios) results.push(await runScenario(scenario, byName))
  await stopAll()

  const heap = selected("memory") ? await measureMemory() : undefined
  const table = selected("table") ? runTable() : undefined
  if (selected("writes") && DATABASE_URL !== undefined) runWrites()

  // The table: a line per server and scenario, with its ratio to the scenario's reference and to every target's.
  const rows: Array<Row> = []
  const outcomes: Array<Record<string, unknown>> = []
  for (const result of results) {
    for (const name of result.scenario.servers) {
      const measured = result.rounds[name]!
      const failed = measured.some((m) => m.errors > 0)
      const first: Row = {
        scenario: result.scenario.title,
        server: name,
        rps: Math.round(median(measured.map((m) => m.rps))).toLocaleString("en-US") + (failed ? " !" : ""),
        p99: median(measured.map((m) => m.p99Ms)).toFixed(1),
        cpu: median(measured.map((m) => m.cpuUs)).toFixed(0)
      }
      const own = targets.filter((t) => t.scenario === result.scenario.id && t.server === name)
      const references = referencesOf(result, name)
      if (references.length === 0) rows.push(first)
      references.forEach((reference, i) => {
        const value = ratio(result, name, reference)!
        const target = own.find((t) => t.reference === reference)
        // A third digit when two would round a miss up to the target.
        const digits = target !== undefined && Math.abs(value - target.min) < 0.005 ? 3 : 2
        rows.push({
          ...(i === 0 ? first : {}),
          vs: reference,
          ratio: value.toFixed(digits) + "x",
          ...(target === undefined ? {} : {
            target: `>= ${target.min.toFixed(2)}`,
            result: value >= target.min ? "met" : "MISSED"
          })
        })
        if (target !== undefined) outcomes.push({ ...target, ratio: value, met: value >= target.min })
      })
      for (const target of latencyTargets) {
        if (target.scenario !== result.scenario.id || target.server !== name) continue
        const value = p99Ratio(result, name, target.reference)
        if (value === undefined) continue
        const met = value <= target.max
        rows.push({
          vs: `${target.reference} p99`,
          ratio: value.toFixed(2) + "x",
          target: `<= ${target.max.toFixed(2)}`,
          result: met ? "met" : "MISSED"
        })
        outcomes.push({ ...target, kind: "p99", ratio: value, met })
      }
    }
  }
  if (heap !== undefined) {
    const heapRatio = heap.library / heap.map
    rows.push({
      scenario: "heap per route",
      server: "ours (layerMemory)",
      rps: `${Math.round(heap.library)} B`,
      vs: "plain Map",
      ratio: heapRatio.toFixed(2) + "x",
      target: `<= ${MEMORY_TARGET.toFixed(2)}`,
      result: heapRatio <= MEMORY_TARGET ? "met" : "MISSED"
    })
    rows.push({ server: "plain Map", rps: `${Math.round(heap.map)} B` })
    rows.push({
      server: "peers' two Maps",
      rps: `${Math.round(heap.peers)} B`,
      vs: "plain Map",
      ratio: (heap.peers / heap.map).toFixed(2) + "x"
    })
    outcomes.push({
      scenario: "memory",
      server: "library",
      reference: "map",
      max: MEMORY_TARGET,
      ratio: heapRatio,
      met: heapRatio <= MEMORY_TARGET
    })
  }
  console.log()
  printTable(columns, rows)
  console.log()
  console.log("ratio: the median over rounds of (server req/s / reference req/s), both measured in the same round.")
  console.log("p99 ratio: the median over rounds of (server p99 / reference p99); lower is better.")
  console.log("cpu: the server's CPU time per request (all its threads), steadier than req/s when the machine is busy.")
  if (rows.some((row) => row.rps?.endsWith("!") === true)) {
    console.log("!: some responses failed (status >= 400 or socket errors)")
  }

  const report = {
    date: new Date(started).toISOString(),
    seconds: Math.round((Date.now() - started) / 1000),
    machine: { cpu: cpus()[0]?.model, cores: cpus().length, node: process.version, wrk: wrkVersion },
    config,
    notes,
    scenarios: results.map((result) => ({
      id: result.scenario.id,
      title: result.scenario.title,
      mode: result.scenario.mode,
      reference: result.scenario.reference,
      servers: Object.fromEntries(
        Object.entries(result.rounds).map(([name, measured]) => [name, {
          rps: median(measured.map((m) => m.rps)),
          p99Ms: median(measured.map((m) => m.p99Ms)),
          ratioToReference: ratio(result, name, result.scenario.reference),
          ratios: Object.fromEntries(
            referencesOf(result, name).map((reference) => [reference, ratio(result, name, reference)])
          ),
          rounds: measured
        }])
      )
    })),
    memory: heap === undefined ? undefined : {
      routes: config.memoryRoutes,
      bytesPerRoute: heap,
      ratioToMap: heap.library / heap.map
    },
    table,
    targets: outcomes
  }
  const dir = join(ROOT, "bench/results")
  mkdirSync(dir, { recursive: true })
  const file = join(dir, `${report.date.replace(/[:.]/g, "-")}.json`)
  writeFileSync(file, JSON.stringify(report, null, 2) + "\n")
  console.log(`written to ${file} (${report.seconds} s)`)
}

const cleanUp = async () => {
  await stopAll()
  await dropTables().catch((error) => console.error("could not drop the benchmark tables:", error))
  rmSync(work, { recursive: true, force: true })
}

// Runs only as the entry module (npm run bench), so that importing it starts nothing.
if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  process.once("SIGINT", () => void cleanUp().then(() => process.exit(130)))
  main().then(cleanUp, async (error) => {
    console.error(error)
    await cleanUp()
    process.exit(1)
  })
}
