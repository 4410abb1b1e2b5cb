/**
 * The fleet attack of issue 34 item 1 (docs/performance.md, "A token that invents followers"):
 * `npm run bench:fleet-attack [-- --streams 150] [--entries 9000] [--before]`.
 *
 * A registry runs `npm start`'s exact command on the compiled library (memory store) with bench/fleet-probe.ts
 * preloaded (its memory over IPC). One token opens `--streams` change streams, each naming itself, and on each reports
 * `--entries` invented relayed followers (under the per-report bound of 10,000), one report after another. Then the
 * registry's RSS (after a full collection) is read, and `GET /v1/routing/followers` is timed as a client that uses no
 * paging asks it, with a `GET /v1/routing?limit=1` sent beside it. The token holds `routes:read` and `fleet:report`
 * (`ROUTING_TOKENS`); `--before` gives it `routes:read` alone (`ROUTING_READ_TOKENS`), as releases before 0.5.0, which
 * took reports on a read token, are run.
 */
import { type ChildProcess, spawn } from "node:child_process"
import { cpus } from "node:os"
import { fileURLToPath } from "node:url"
import { listeningOrigin, npmStartCommand, npmStartEnv, prober, wholeOption } from "./run.js"

const ROOT = fileURLToPath(new URL("..", import.meta.url))
const ADMIN_TOKEN = "fleet-attack-admin-token"
const READ_TOKEN = "fleet-attack-read-token"
const ATTACK_TOKEN = "fleet-attack-report-token"
const config = {
  streams: wholeOption("streams", 150),
  entries: wholeOption("entries", 9_000),
  before: process.argv.includes("--before")
}

const mb = (bytes: number) => `${(bytes / 1e6).toFixed(0)} MB`
const auth = (token: string) => ({ authorization: `Bearer ${token}` })

const startRegistry = async () => {
  const command = npmStartCommand()
  const script = command.args[command.args.length - 1]!
  const attacker = config.before
    ? { ROUTING_READ_TOKENS: `${READ_TOKEN},${ATTACK_TOKEN}` }
    : {
      ROUTING_TOKENS: JSON.stringify([
        { name: "reader", token: READ_TOKEN, scopes: ["routes:read"] },
        { name: "attacker", token: ATTACK_TOKEN, scopes: ["routes:read", "fleet:report"] }
      ])
    }
  const child: ChildProcess = spawn(
    process.execPath,
    ["--expose-gc", ...command.args.slice(0, -1), "--import", "./bench/fleet-probe.ts", script],
    {
      cwd: ROOT,
      env: npmStartEnv({ admin: ADMIN_TOKEN, read: READ_TOKEN }, attacker),
      stdio: ["ignore", "pipe", "pipe", "ipc"]
    }
  )
  const { origin } = await listeningOrigin(child, "registry", 60_000)
  return { child, origin, probe: prober(child) }
}

// `count` invented followers, each as a relay reports one it serves.
const invented = (stream: number, count: number) =>
  Array.from({ length: count }, (_, i) => ({
    name: `fake-${stream}-${i}`,
    address: `10.${stream % 256}.${(i >> 8) % 256}.${i % 256}:4000`,
    via: `relay-${stream}`,
    connectedAt: "2026-11-26T09:30:12.345Z",
    appliedRevision: 0,
    reportedAt: "2026-11-26T09:30:13.000Z",
    connected: true
  }))

const timed = async (url: string, token: string) => {
  const started = performance.now()
  const answer = await fetch(url, { headers: auth(token) })
  const bytes = (await answer.arrayBuffer()).byteLength
  return { status: answer.status, millis: performance.now() - started, bytes }
}

const main = async () => {
  const registry = await startRegistry()
  const streams: Array<AbortController> = []
  try {
    const before = await registry.probe(true)
    const outcomes = new Map<number, number>()
    for (let s = 0; s < config.streams; s++) {
      const controller = new AbortController()
      streams.push(controller)
      const opened = await fetch(`${registry.origin}/v1/routing/changes`, {
        headers: { ...auth(ATTACK_TOKEN), "follower-name": `relay-${s}` },
        signal: controller.signal
      })
      // Read, so that the registry never cuts the stream as stalled.
      void opened.body?.pipeTo(new WritableStream()).catch(() => {})
      const stream = opened.headers.get("follower-stream")
      const status = stream === null ? opened.status : (await fetch(`${registry.origin}/v1/routing/followers`, {
        method: "POST",
        headers: { ...auth(ATTACK_TOKEN), "content-type": "application/json" },
        body: JSON.stringify({ stream, appliedRevision: 0, followers: invented(s, config.entries) })
      }).then(async (answer) => (await answer.arrayBuffer(), answer.status)))
      outcomes.set(status, (outcomes.get(status) ?? 0) + 1)
    }
    const after = await registry.probe(true)
    const [fleet, list] = await Promise.all([
      timed(`${registry.origin}/v1/routing/followers`, READ_TOKEN),
      (async () => {
        await new Promise((resolve) => setTimeout(resolve, 5))
        return timed(`${registry.origin}/v1/routing?limit=1`, READ_TOKEN)
      })()
    ])
    const held = await registry.probe(true)
    console.log(
      `\n${config.streams} streams of one token, each reporting ${config.entries.toLocaleString("en-US")} invented ` +
        `followers (${config.before ? "routes:read alone, --before" : "routes:read and fleet:report"}); npm start, ` +
        `memory store, ${cpus().length} cores, Node ${process.version}\n`
    )
    console.log("| measure | value |\n|---|---|")
    console.log(
      `| reports answered | ${Array.from(outcomes, ([status, count]) => `${count} × ${status}`).join(", ")} |`
    )
    console.log(
      `| RSS before, after the reports, after the fleet's answer | ${mb(before.rss)}, ${mb(after.rss)}, ${
        mb(held.rss)
      } |`
    )
    console.log(`| heap after the reports (collected) | ${mb(after.heapUsed + after.external)} |`)
    console.log(
      `| GET /v1/routing/followers (no paging) | ${fleet.status}, ${fleet.millis.toFixed(0)} ms, ${mb(fleet.bytes)} |`
    )
    console.log(`| GET /v1/routing?limit=1 sent beside it | ${list.status}, ${list.millis.toFixed(0)} ms |`)
  } finally {
    for (const stream of streams) stream.abort()
    registry.child.kill("SIGTERM")
  }
}

main().then(() => process.exit(0), (error) => {
  console.error(error)
  process.exit(1)
})
