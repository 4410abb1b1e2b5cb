/**
 * The registry's CPU per follower per change against a bare `node:http` peer (docs/performance.md, "Fan-out CPU"):
 * `npm run bench:fleet-cpu [-- --followers 1000] [--workers 4] [--changes 200] [--rounds 5] [--seed 100]`.
 *
 * The registry runs `npm start`'s exact command (the example host on `node:http`, the compiled library, the memory
 * store, nothing preloaded); the peer is bench/peers/sse-fanout.ts, a hand-written `node:http` server that holds the
 * same streams and writes each event's bytes into each of them. Each holds `--followers` change streams: one read by
 * this process (`fetch`), which records the bytes the registry sends (and checks the peer sends the same), the others
 * opened on raw sockets by `--workers` client processes (bench/fleet-cpu-client.ts) that read and discard.
 *
 * A round makes `--changes` changes, one after another, each once its answer arrived: on the registry, `PATCH
 * /v1/routing/{id}` of its seeded routes in turn, a new handler each (so every event is an `upsert` of one route);
 * on the peer, `POST /change` with the bytes of the matching event the registry sent in its last round. The last
 * change carries a marker; measured is the server process's CPU time, every thread's (the sum of
 * /proc/<pid>/task/<tid>/schedstat, nanoseconds on a CPU), from before the first change until every stream received
 * the last one. Divided by followers × changes: CPU per follower per change, the write's own cost (answering
 * the request, storing, recording the change) included, spread over the followers. A first round of each is warm-up.
 * Before any stream is opened, one round of each with no stream shows what the writes alone cost.
 *
 * Rounds alternate the two (registry first in odd rounds, the peer first in even ones); medians are printed with
 * the lowest and highest, and the load average at each round. Results go to bench/results/fleet-cpu-<time>.json.
 */
import { type ChildProcess, fork, spawn, spawnSync } from "node:child_process"
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs"
import { cpus, loadavg } from "node:os"
import { fileURLToPath } from "node:url"
import type { Command, Report } from "./fleet-cpu-client.js"
import { printMarkdownTable } from "./print.js"
import { listeningOrigin, npmStartCommand, npmStartEnv, wholeOption } from "./run.js"

const ROOT = fileURLToPath(new URL("..", import.meta.url))
const ADMIN_TOKEN = "fleet-cpu-admin-token"
const READ_TOKEN = "fleet-cpu-read-token"

const whole = wholeOption
const config = {
  followers: whole("followers", 1_000),
  workers: whole("workers", 4),
  changes: whole("changes", 200),
  rounds: whole("rounds", 5),
  seed: whole("seed", 100)
}

const now = () => performance.now()
const median = (values: ReadonlyArray<number>) => {
  const sorted = [...values].sort((a, b) => a - b)
  const middle = Math.floor(sorted.length / 2)
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2
}

/** Nanoseconds every thread of `pid` has spent on a CPU. */
const cpuNanos = (pid: number): number => {
  let total = 0
  for (const task of readdirSync(`/proc/${pid}/task`)) {
    try {
      total += Number(readFileSync(`/proc/${pid}/task/${task}/schedstat`, "utf8").split(" ")[0])
    } catch {
      // a thread that ended between the listing and the read
    }
  }
  return total
}

// ---------------------------------------------------------------------------------------------------------------
// The two servers
// ---------------------------------------------------------------------------------------------------------------

interface Server {
  readonly child: ChildProcess
  readonly origin: string
}

const children: Array<ChildProcess> = []

const startServer = async (name: string, args: ReadonlyArray<string>, env: NodeJS.ProcessEnv): Promise<Server> => {
  const child = spawn(process.execPath, args, { cwd: ROOT, env, stdio: ["ignore", "pipe", "pipe"] })
  children.push(child)
  const { origin } = await listeningOrigin(child, name, 60_000)
  return { child, origin }
}

const startRegistry = () => {
  const command = npmStartCommand()
  return startServer("registry", command.args, npmStartEnv({ admin: ADMIN_TOKEN, read: READ_TOKEN }))
}

const startPeer = (ready: string) =>
  startServer("peer", ["--import", "tsx", "bench/peers/sse-fanout.ts"], {
    ...process.env,
    PORT: "0",
    TOKEN: READ_TOKEN,
    READY: ready
  })

// ---------------------------------------------------------------------------------------------------------------
// The streams
// ---------------------------------------------------------------------------------------------------------------

interface Client {
  readonly child: ChildProcess
  readonly next: <T extends Report["type"]>(type: T, group: string) => Promise<void>
}

const startClient = () =>
  new Promise<Client>((resolve, reject) => {
    const child = fork("bench/fleet-cpu-client.ts", [], { cwd: ROOT, execArgv: ["--import", "tsx"] })
    children.push(child)
    child.once("exit", (code) => reject(new Error(`a client process exited with ${code}`)))
    const waiting: Array<{ type: string; group: string; resolve: () => void }> = []
    child.on("message", (report: Report) => {
      if (report.type === "ready") return resolve({ child, next })
      if (report.type === "lost") throw new Error(`${report.group}: ${report.reason}`)
      const at = waiting.findIndex((wait) => wait.type === report.type && wait.group === report.group)
      if (at !== -1) waiting.splice(at, 1)[0]!.resolve()
    })
    const next = <T extends Report["type"]>(type: T, group: string) =>
      new Promise<void>((resolveNext) => void waiting.push({ type, group, resolve: resolveNext }))
  })

const tell = (client: Client, command: Command) => client.child.send(command)

/** The stream this process reads: everything it received, as text. */
interface Recorder {
  text: string
  readonly stop: () => void
}

const record = async (origin: string): Promise<Recorder> => {
  const controller = new AbortController()
  const response = await fetch(`${origin}/v1/routing/changes`, {
    headers: { authorization: `Bearer ${READ_TOKEN}` },
    signal: controller.signal
  })
  if (response.status !== 200) throw new Error(`${origin}'s stream answered ${response.status}`)
  const recorder: Recorder = { text: "", stop: () => controller.abort() }
  const decoder = new TextDecoder()
  const reader = response.body!.getReader()
  void (async () => {
    for (;;) {
      const { done, value } = await reader.read()
      if (done) return
      recorder.text += decoder.decode(value, { stream: true })
    }
  })().catch(() => {})
  while (!recorder.text.includes("event: ready")) await new Promise((resolve) => setTimeout(resolve, 10))
  return recorder
}

const until = async (condition: () => boolean) => {
  while (!condition()) await new Promise((resolve) => setTimeout(resolve, 2))
}

// ---------------------------------------------------------------------------------------------------------------
// Rounds
// ---------------------------------------------------------------------------------------------------------------

const adminHeaders = { authorization: `Bearer ${ADMIN_TOKEN}`, "content-type": "application/json" }

const seed = async (origin: string): Promise<Array<string>> => {
  const ids: Array<string> = []
  for (let i = 0; i < config.seed; i++) {
    const response = await fetch(`${origin}/v1/routing`, {
      method: "POST",
      headers: adminHeaders,
      body: JSON.stringify({ method: "GET", path: `/fleet-cpu/${i}/:id`, handler: "Seed#show" })
    })
    if (response.status !== 201) throw new Error(`seeding answered ${response.status}: ${await response.text()}`)
    ids.push(((await response.json()) as { readonly id: string }).id)
  }
  return ids
}

const marker = (round: number) => `Bench#r${round}end`

// The events of round `round` in what the registry sent: each change's event exactly as written, in order.
const eventsOf = (text: string, round: number): Array<string> => {
  const events = text.split("\n\n")
    .filter((block) => block.includes(`"Bench#r${round}c`) || block.includes(`"${marker(round)}"`))
    .map((block) => `${block}\n\n`)
  if (events.length !== config.changes) throw new Error(`round ${round}: ${events.length} events of ${config.changes}`)
  if (!events.every((event) => event.startsWith("event: upsert\n"))) throw new Error("an event is not an upsert")
  return events
}

interface Measured {
  readonly micros: number
  readonly wallMillis: number
  readonly load: number
}

const measure = async (
  server: Server,
  group: string,
  clients: ReadonlyArray<Client>,
  recorder: Recorder | undefined,
  end: string,
  change: (i: number) => Promise<void>
): Promise<Measured> => {
  await Promise.all(clients.map((client) => {
    const armed = client.next("armed", group)
    tell(client, { type: "await", group, marker: end })
    return armed
  }))
  const seen = Promise.all(clients.map((client) => client.next("seen", group)))
  const from = recorder?.text.length ?? 0
  const started = now()
  const before = cpuNanos(server.child.pid!)
  for (let i = 0; i < config.changes; i++) await change(i)
  await seen
  if (recorder !== undefined) await until(() => recorder.text.indexOf(end, from) !== -1)
  const cpu = cpuNanos(server.child.pid!) - before
  return { micros: cpu / 1e3, wallMillis: now() - started, load: loadavg()[0]! }
}

const main = async () => {
  const openFiles = spawnSync("sh", ["-c", "ulimit -n"], { encoding: "utf8" }).stdout.trim()
  // Every stream is a socket in the server and one in a client, and both servers' streams are open at once.
  if (Number(openFiles) < config.followers + 200) {
    throw new Error(`ulimit -n is ${openFiles}: raise it above ${config.followers + 200} (ulimit -n 65536)`)
  }
  const machine = {
    date: new Date().toISOString(),
    cores: cpus().length,
    cpu: cpus()[0]?.model ?? "",
    node: process.version,
    loadBefore: loadavg().map((load) => load.toFixed(2)).join(" ")
  }
  const registry = await startRegistry()
  const ids = await seed(registry.origin)
  const patch = (round: number) => async (i: number) => {
    const handler = i === config.changes - 1 ? marker(round) : `Bench#r${round}c${i}`
    const response = await fetch(`${registry.origin}/v1/routing/${ids[i % ids.length]}`, {
      method: "PATCH",
      headers: adminHeaders,
      body: JSON.stringify({ handler })
    })
    if (response.status !== 200) throw new Error(`a change answered ${response.status}: ${await response.text()}`)
    await response.arrayBuffer()
  }
  const recorded = await record(registry.origin)
  const ready = recorded.text.slice(recorded.text.lastIndexOf("event: ready"))
  recorded.stop()
  const peer = await startPeer(ready.slice(0, ready.indexOf("\n\n") + 2))
  const post = (events: ReadonlyArray<string>) => async (i: number) => {
    const response = await fetch(`${peer.origin}/change`, { method: "POST", body: events[i]! })
    if (response.status !== 204) throw new Error(`the peer answered ${response.status}`)
    await response.arrayBuffer()
  }

  // The writes alone: no stream open on either.
  let round = 0
  const aloneRegistry = await measure(registry, "none", [], undefined, marker(round), patch(round))
  const aloneRecorder = await record(registry.origin)
  round++
  await measure(registry, "none", [], aloneRecorder, marker(round), patch(round))
  let events = eventsOf(aloneRecorder.text, round)
  aloneRecorder.stop()
  const alonePeer = await measure(peer, "none", [], undefined, "", post(events))

  // Every stream: one read here on each server, the others by the clients.
  const clients = await Promise.all(Array.from({ length: config.workers }, startClient))
  const others = config.followers - 1
  const connect = async (server: Server, group: string) => {
    await Promise.all(clients.map((client, i) => {
      const count = Math.floor(others / clients.length) + (i < others % clients.length ? 1 : 0)
      const connected = client.next("connected", group)
      tell(client, { type: "connect", group, origin: server.origin, token: READ_TOKEN, count })
      return connected
    }))
    return record(server.origin)
  }
  const registryStreams = await connect(registry, "registry")
  const peerStreams = await connect(peer, "peer")
  console.error(`${config.followers} streams open on each`)

  const rows: Array<{ round: number; registry: Measured; peer: Measured }> = []
  for (let r = 0; r <= config.rounds; r++) {
    const runRegistry = async () => {
      round++
      const measured = await measure(registry, "registry", clients, registryStreams, marker(round), patch(round))
      events = eventsOf(registryStreams.text.slice(-events.join("").length * 2), round)
      return measured
    }
    const runPeer = async () => {
      const from = peerStreams.text.length
      const measured = await measure(peer, "peer", clients, peerStreams, marker(round), post(events))
      // Its heartbeats aside, what the peer sent this round is the registry's events, byte for byte.
      const sent = peerStreams.text.slice(from).split("\n\n").filter((block) => block !== ":").join("\n\n")
      if (!sent.includes(events.join(""))) throw new Error("the peer did not send the registry's bytes")
      return measured
    }
    // Round 0 warms both up; then the order alternates.
    const registryFirst = r % 2 === 1 || r === 0
    const first = registryFirst ? await runRegistry() : await runPeer()
    const second = registryFirst ? await runPeer() : await runRegistry()
    const measured = registryFirst ? { registry: first, peer: second } : { registry: second, peer: first }
    const perFollower = (m: Measured) => (m.micros / (config.followers * config.changes)).toFixed(2)
    console.error(
      `round ${r}${r === 0 ? " (warm-up)" : ""}: registry ${perFollower(measured.registry)} µs, peer ${
        perFollower(measured.peer)
      } µs per follower per change; load ${measured.registry.load.toFixed(2)}`
    )
    if (r > 0) rows.push({ round: r, ...measured })
  }
  registryStreams.stop()
  peerStreams.stop()

  const per = (m: Measured) => m.micros / (config.followers * config.changes)
  const spread = (values: ReadonlyArray<number>, digits: number) =>
    `${median(values).toFixed(digits)} (${Math.min(...values).toFixed(digits)}–${Math.max(...values).toFixed(digits)})`
  const registryPer = rows.map((row) => per(row.registry))
  const peerPer = rows.map((row) => per(row.peer))
  const ratios = rows.map((row) => per(row.peer) / per(row.registry))
  const loads = rows.flatMap((row) => [row.registry.load, row.peer.load])
  const eventBytes = events.reduce((sum, event) => sum + Buffer.byteLength(event), 0) / events.length
  console.log(
    `\nCPU per follower per change: ${
      config.followers.toLocaleString("en-US")
    } streams, ${config.changes} changes a round, ` +
      `${config.rounds} rounds alternated after a warm-up; events of ${eventBytes.toFixed(0)} bytes ` +
      `(${machine.cores} cores, ${machine.cpu}, Node ${machine.node}; load average ${spread(loads, 2)})\n`
  )
  printMarkdownTable([
    ["server", "server", "left"],
    ["alone", "a change, no stream", "right"],
    ["total", "a change, every stream", "right"],
    ["perFollower", "per follower per change (median, lowest–highest)", "right"],
    ["wall", "first change to last received", "right"],
    ["ratio", "throughput against the peer", "right"]
  ], [
    {
      server: "registry (npm start, memory store)",
      alone: `${(aloneRegistry.micros / config.changes).toFixed(0)} µs`,
      total: `${(median(rows.map((row) => row.registry.micros)) / config.changes).toFixed(0)} µs`,
      perFollower: `${spread(registryPer, 2)} µs`,
      wall: `${median(rows.map((row) => row.registry.wallMillis)).toFixed(0)} ms`,
      ratio: `${spread(ratios, 2)}× (target ≥ 0.8×)`
    },
    {
      server: "bare node:http peer",
      alone: `${(alonePeer.micros / config.changes).toFixed(0)} µs`,
      total: `${(median(rows.map((row) => row.peer.micros)) / config.changes).toFixed(0)} µs`,
      perFollower: `${spread(peerPer, 2)} µs`,
      wall: `${median(rows.map((row) => row.peer.wallMillis)).toFixed(0)} ms`,
      ratio: "1×"
    }
  ])
  mkdirSync(`${ROOT}bench/results`, { recursive: true })
  writeFileSync(
    `${ROOT}bench/results/fleet-cpu-${Date.now()}.json`,
    JSON.stringify({ machine, loadAfter: loadavg(), config, aloneRegistry, alonePeer, rows }, null, 2) + "\n"
  )
}

const cleanUp = () => {
  for (const child of children) if (child.exitCode === null) child.kill("SIGTERM")
}
process.once("SIGINT", () => {
  cleanUp()
  process.exit(130)
})
main().then(() => {
  cleanUp()
  process.exit(0)
}, (error) => {
  console.error(error)
  cleanUp()
  process.exit(1)
})
