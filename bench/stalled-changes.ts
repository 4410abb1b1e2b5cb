/**
 * Live change streams that stop reading while changes flow (issue 34 item 16; docs/performance.md, "Streams that
 * stop reading"): `npm run bench:stalled-changes [-- --streams 8] [--changes 5000]`, on the Postgres store when
 * `DATABASE_URL` is set, else the memory store.
 *
 * A registry runs `npm start`'s exact command on the compiled library with bench/fleet-probe.ts preloaded (its memory
 * over IPC). `--streams` change streams are opened on raw sockets, read until their `ready`, then never read again
 * (the socket paused), and `--changes` routes are created through the API, 8 at a time. The registry's resident set
 * and heap are read before and after (with and without a full collection), and each stream is read out at the end:
 * whether the registry cut it, and how much it had sent. What a stalled stream can make the registry hold is its
 * buffer bound (`changesBufferBytes`, 1 MiB by default) and one event: past it the stream is cut.
 */
import { type ChildProcess, spawn } from "node:child_process"
import { connect, type Socket } from "node:net"
import { cpus } from "node:os"
import { fileURLToPath } from "node:url"
import { listeningOrigin, npmStartCommand, npmStartEnv, prober, wholeOption } from "./run.js"

const ROOT = fileURLToPath(new URL("..", import.meta.url))
const ADMIN_TOKEN = "stalled-changes-admin-token"
const READ_TOKEN = "stalled-changes-read-token"
const config = { streams: wholeOption("streams", 8), changes: wholeOption("changes", 5_000) }
const database = process.env.DATABASE_URL ?? ""
// A Postgres database keeps the routes of earlier runs: each run's paths are its own.
const run = Date.now().toString(36)

const mb = (bytes: number) => `${(bytes / 1e6).toFixed(1)} MB`

const startRegistry = async () => {
  const command = npmStartCommand()
  const script = command.args[command.args.length - 1]!
  const child: ChildProcess = spawn(
    process.execPath,
    ["--expose-gc", ...command.args.slice(0, -1), "--import", "./bench/fleet-probe.ts", script],
    {
      cwd: ROOT,
      env: npmStartEnv({ admin: ADMIN_TOKEN, read: READ_TOKEN }, { DATABASE_URL: database }),
      stdio: ["ignore", "pipe", "pipe", "ipc"]
    }
  )
  const { origin } = await listeningOrigin(child, "registry", 60_000)
  return { child, origin, probe: prober(child) }
}

interface Stalled {
  readonly socket: Socket
  /** Bytes read before the stream was stalled. */
  readonly before: number
}

// A stream read until its `ready`, then paused for good.
const stalled = (origin: string): Promise<Stalled> =>
  new Promise((resolve, reject) => {
    const url = new URL(origin)
    const socket = connect(Number(url.port), url.hostname)
    let text = ""
    socket.on("error", reject)
    socket.on("data", function onData(chunk: Buffer) {
      text += chunk.toString("latin1")
      if (!text.includes("event: ready")) return
      socket.off("data", onData)
      socket.pause()
      socket.removeListener("error", reject)
      socket.on("error", () => {})
      resolve({ socket, before: text.length })
    })
    socket.write(
      `GET /v1/routing/changes HTTP/1.1\r\nHost: ${url.host}\r\nAuthorization: Bearer ${READ_TOKEN}\r\n` +
        "Accept: text/event-stream\r\n\r\n"
    )
  })

// Everything a stalled stream still had on its way, and whether the registry had ended it.
const readOut = ({ socket }: Stalled) =>
  new Promise<{ bytes: number; cut: boolean }>((resolve) => {
    let bytes = 0
    const timer = setTimeout(() => (socket.destroy(), resolve({ bytes, cut: false })), 5_000)
    socket.on("data", (chunk: Buffer) => (bytes += chunk.length))
    socket.once("close", () => (clearTimeout(timer), resolve({ bytes, cut: true })))
    socket.resume()
  })

const main = async () => {
  const registry = await startRegistry()
  try {
    const streams = await Promise.all(Array.from({ length: config.streams }, () => stalled(registry.origin)))
    const collected = await registry.probe(true)
    const before = await registry.probe(false)
    const started = performance.now()
    let next = 0
    const worker = async () => {
      while (next < config.changes) {
        const i = next++
        const answer = await fetch(`${registry.origin}/v1/routing`, {
          method: "POST",
          headers: { authorization: `Bearer ${ADMIN_TOKEN}`, "content-type": "application/json" },
          body: JSON.stringify({ method: "GET", path: `/stalled/${run}/${i}/:id`, handler: "h", middleware: ["auth"] })
        })
        await answer.arrayBuffer()
        if (answer.status !== 201) throw new Error(`a create answered ${answer.status}`)
      }
    }
    await Promise.all(Array.from({ length: 8 }, worker))
    const seconds = (performance.now() - started) / 1000
    const after = await registry.probe(false)
    const afterCollected = await registry.probe(true)
    const received = await Promise.all(streams.map(readOut))
    console.log(
      `\n${config.streams} change streams stalled after ready while ${config.changes.toLocaleString("en-US")} ` +
        `changes were made (${seconds.toFixed(1)} s); npm start, ${database === "" ? "memory" : "Postgres"} store, ` +
        `${cpus().length} cores, Node ${process.version}\n`
    )
    console.log("| measure | before | after | growth |\n|---|---:|---:|---:|")
    console.log(`| RSS | ${mb(before.rss)} | ${mb(after.rss)} | ${mb(after.rss - before.rss)} |`)
    console.log(
      `| heap and external, collected | ${mb(collected.heapUsed + collected.external)} | ${
        mb(afterCollected.heapUsed + afterCollected.external)
      } | ${mb(afterCollected.heapUsed + afterCollected.external - collected.heapUsed - collected.external)} |`
    )
    console.log(
      `| RSS, collected | ${mb(collected.rss)} | ${mb(afterCollected.rss)} | ${
        mb(afterCollected.rss - collected.rss)
      } |`
    )
    const bytes = received.map((one) => one.bytes).sort((a, b) => a - b)
    console.log(
      `\nStreams cut by the registry: ${received.filter((one) => one.cut).length} of ${config.streams}; each had ` +
        `${mb(bytes[0]!)}–${mb(bytes[bytes.length - 1]!)} on its way after it stalled (its kernel buffers and the ` +
        "registry's, at most changesBufferBytes of it in the registry)."
    )
  } finally {
    registry.child.kill("SIGTERM")
  }
}

main().then(() => process.exit(0), (error) => {
  console.error(error)
  process.exit(1)
})
