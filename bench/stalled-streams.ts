/**
 * Change streams that stop reading, against the registry's memory (docs/performance.md, "Streams that stop
 * reading"): `npm run bench:stalled-streams [-- --routes 100000] [--streams 300] [--seconds 120]`.
 *
 * A registry runs `npm start`'s exact command on the compiled library (memory store) with bench/fleet-probe.ts
 * preloaded, which reports its memory over IPC; `--routes` routes are created through its API. Then `--streams`
 * change streams are opened with a read token on raw sockets, each asking for a snapshot, and never read: the socket
 * is paused as soon as the request is written, so the registry's writes fill the kernel's buffers and then its own.
 * Every second for `--seconds` the registry's heap (V8's heap and external memory) and resident set are read as they
 * are (no collection forced), with the connections it holds on its port (`ss`: the streams not yet cut, and the API's) and the
 * time the last `GET /v1/routing?limit=1` took (one at a time, beside the samples; one still unanswered shows how
 * long it has waited). Before the attack and at its end the heap is read again after two
 * full collections: what the registry still holds once it cut the streams. At the end each attacking socket is read
 * out, to show how much of its snapshot reached it before it was cut.
 */
import { type ChildProcess, spawn, spawnSync } from "node:child_process"
import { connect, type Socket } from "node:net"
import { cpus, loadavg } from "node:os"
import { fileURLToPath } from "node:url"
import { printMarkdownTable } from "./print.js"
import { listeningOrigin, npmStartCommand, npmStartEnv, prober, seedConcurrently, wholeOption } from "./run.js"

const ROOT = fileURLToPath(new URL("..", import.meta.url))
const ADMIN_TOKEN = "stalled-admin-token"
const READ_TOKEN = "stalled-read-token"
const config = {
  routes: wholeOption("routes", 100_000),
  streams: wholeOption("streams", 300),
  seconds: wholeOption("seconds", 120)
}

const sleep = (millis: number) => new Promise((resolve) => setTimeout(resolve, millis))
const mb = (bytes: number) => `${(bytes / 1e6).toFixed(0)} MB`

const startRegistry = async () => {
  const command = npmStartCommand()
  const script = command.args[command.args.length - 1]!
  const child: ChildProcess = spawn(
    process.execPath,
    ["--expose-gc", ...command.args.slice(0, -1), "--import", "./bench/fleet-probe.ts", script],
    {
      cwd: ROOT,
      env: npmStartEnv({ admin: ADMIN_TOKEN, read: READ_TOKEN }),
      stdio: ["ignore", "pipe", "pipe", "ipc"]
    }
  )
  const { origin } = await listeningOrigin(child, "registry", 60_000)
  const probe = prober(child)
  return { child, origin, probe }
}

interface Attacker {
  readonly socket: Socket
  closed: boolean
}

const attack = (origin: string): Array<Attacker> => {
  const url = new URL(origin)
  const request = `GET /v1/routing/changes HTTP/1.1\r\nHost: ${url.host}\r\nAuthorization: Bearer ${READ_TOKEN}\r\n` +
    "Accept: text/event-stream\r\n\r\n"
  return Array.from({ length: config.streams }, () => {
    const socket = connect(Number(url.port), url.hostname)
    const attacker: Attacker = { socket, closed: false }
    socket.pause()
    socket.write(request)
    socket.on("error", () => {})
    socket.once("close", () => (attacker.closed = true))
    return attacker
  })
}

// Reads every attacking socket out: the bytes each received before the registry closed it.
const readOut = (attackers: ReadonlyArray<Attacker>) =>
  Promise.all(attackers.map(({ socket }) =>
    new Promise<{ bytes: number; ended: boolean }>((resolve) => {
      let bytes = 0
      const timer = setTimeout(() => {
        socket.destroy()
        resolve({ bytes, ended: false })
      }, 10_000)
      socket.on("data", (chunk: Buffer) => (bytes += chunk.length))
      socket.once("end", () => {
        clearTimeout(timer)
        resolve({ bytes, ended: true })
      })
      socket.resume()
    })
  ))

const latency = async (origin: string) => {
  const started = performance.now()
  const answer = await fetch(`${origin}/v1/routing?limit=1`, { headers: { authorization: `Bearer ${READ_TOKEN}` } })
  await answer.arrayBuffer()
  return performance.now() - started
}

const main = async () => {
  const registry = await startRegistry()
  try {
    const began = performance.now()
    await seedConcurrently(registry.origin, ADMIN_TOKEN, config.routes)
    console.error(`seeded ${config.routes} routes in ${((performance.now() - began) / 1000).toFixed(1)} s`)
    // The connections the registry holds open on its port: the attack's streams, and the API's request.
    const port = new URL(registry.origin).port
    const held = () =>
      spawnSync("ss", ["-Htn", "state", "established", `( sport = :${port} )`], { encoding: "utf8" }).stdout
        .split("\n").filter((line) => line.trim() !== "").length
    const snapshotBytes = await (async () => {
      // One snapshot read in full, for its size.
      const controller = new AbortController()
      const answer = await fetch(`${registry.origin}/v1/routing/changes`, {
        headers: { authorization: `Bearer ${READ_TOKEN}` },
        signal: controller.signal
      })
      const reader = answer.body!.getReader()
      let bytes = 0
      let tail = ""
      for (;;) {
        const { done, value } = await reader.read()
        if (done) break
        bytes += value.byteLength
        tail = (tail + Buffer.from(value).toString("latin1")).slice(-200)
        if (tail.includes("event: ready")) break
      }
      controller.abort()
      return bytes
    })()
    const before = await registry.probe(true)
    const loadBefore = loadavg()[0]!
    console.error(`before: heap ${mb(before.heapUsed + before.external)}, RSS ${mb(before.rss)}, ${held()} connections`)
    const attackers = attack(registry.origin)
    const started = performance.now()
    const elapsed = () => (performance.now() - started) / 1000
    // One API request in flight at a time, beside the samples: the last answered one's time, or how long the one in
    // flight has waited so far.
    let api = { sentAt: 0, millis: undefined as number | undefined, last: 0 }
    const ask = () => {
      api = { sentAt: performance.now(), millis: undefined, last: api.last }
      void latency(registry.origin).then((millis) => {
        api = { ...api, millis, last: millis }
        // Spaced, so that the API's own garbage does not hide the streams'.
        if (elapsed() < config.seconds) setTimeout(ask, 100)
      })
    }
    ask()
    const samples: Array<Record<string, string>> = []
    let peakHeap = 0
    let peakRss = 0
    for (let second = 1; elapsed() < config.seconds; second++) {
      await sleep(started + second * 1000 - performance.now())
      const probed = await registry.probe(false)
      peakHeap = Math.max(peakHeap, probed.heapUsed + probed.external)
      peakRss = Math.max(peakRss, probed.rss)
      const sample = {
        at: `${elapsed().toFixed(0)} s`,
        heap: mb(probed.heapUsed),
        external: mb(probed.external),
        rss: mb(probed.rss),
        streams: String(held()),
        api: api.millis === undefined && performance.now() - api.sentAt > 1_000
          ? `waiting ${((performance.now() - api.sentAt) / 1000).toFixed(0)} s`
          : `${api.last.toFixed(1)} ms`
      }
      samples.push(sample)
      console.error(
        `${sample.at}: heap ${sample.heap} + external ${sample.external}, RSS ${sample.rss}, ${sample.streams} ` +
          `streams, API ${sample.api}`
      )
    }
    const after = await registry.probe(true)
    const received = await readOut(attackers)
    const loadAfter = loadavg()[0]!
    console.log(
      `\n${config.streams} change streams that never read, each asking for a snapshot of ${
        config.routes.toLocaleString("en-US")
      } routes (${mb(snapshotBytes)}): the registry (npm start, memory store) every second (${cpus().length} cores, ` +
        `Node ${process.version}; load average ${loadBefore.toFixed(2)} before, ${loadAfter.toFixed(2)} after)\n`
    )
    const shown = samples.filter((_, i) => i < 5 || (i + 1) % 10 === 0)
    printMarkdownTable([
      ["at", "after the streams opened", "right"],
      ["heap", "V8 heap", "right"],
      ["external", "external", "right"],
      ["rss", "RSS", "right"],
      ["streams", "connections held", "right"],
      ["api", "GET /v1/routing?limit=1", "right"]
    ], shown)
    const bytes = received.map((one) => one.bytes).sort((a, b) => a - b)
    console.log(
      `\nAfter two full collections: heap ${mb(before.heapUsed + before.external)} before, ${
        mb(after.heapUsed + after.external)
      } at the end (peak ${mb(peakHeap)} without collecting); RSS ${mb(before.rss)} before, ${
        mb(after.rss)
      } at the end (peak ${mb(peakRss)}). Streams closed by the registry: ${
        received.filter((one) => one.ended).length
      } of ${config.streams}; each received ${mb(bytes[0]!)}–${mb(bytes[bytes.length - 1]!)} of its ${
        mb(snapshotBytes)
      } snapshot before it was closed.`
    )
  } finally {
    registry.child.kill("SIGTERM")
  }
}

main().then(() => process.exit(0), (error) => {
  console.error(error)
  process.exit(1)
})
