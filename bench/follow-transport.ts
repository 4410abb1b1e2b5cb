/**
 * Which transport a follower reads its change stream with: `node:http` or the global `fetch` (undici) with a
 * streaming body reader. One process serves an event stream (a 200-byte event to every stream every `--interval` ms,
 * default 100: 10 changes/s); another
 * holds N streams with one transport and reads every byte; the reader's CPU time and memory are measured over the
 * same window, once per transport, each in a fresh process.
 *
 *   npm run bench:follow-transport -- [--streams 1000] [--seconds 10] [--interval 100]
 */
import { fork } from "node:child_process"
import * as Http from "node:http"
import type { AddressInfo } from "node:net"

const arg = (name: string, fallback: number) => {
  const at = process.argv.indexOf(`--${name}`)
  return at === -1 ? fallback : Number(process.argv[at + 1])
}
const STREAMS = arg("streams", 1000)
const SECONDS = arg("seconds", 10)
const INTERVAL = arg("interval", 100)
const EVENT = `event: upsert\nid: x\ndata: ${JSON.stringify({ path: "/".padEnd(150, "a") })}\n\n`

const serve = () => {
  const open = new Set<Http.ServerResponse>()
  const server = Http.createServer((_req, res) => {
    res.writeHead(200, { "content-type": "text/event-stream" })
    res.write(": open\n\n")
    open.add(res)
    res.on("close", () => open.delete(res))
  })
  server.listen(0, "127.0.0.1", () => process.send!((server.address() as AddressInfo).port))
  setInterval(() => {
    for (const res of open) res.write(EVENT)
  }, INTERVAL)
}

const readWithHttp = (url: string, onBytes: (n: number) => void) =>
  new Promise<void>((resolve) => {
    Http.get(url, { headers: { accept: "text/event-stream" } }, (res) => {
      res.on("data", (chunk: Buffer) => onBytes(chunk.length))
      resolve()
    })
  })

const readWithFetch = async (url: string, onBytes: (n: number) => void) => {
  const response = await fetch(url, { headers: { accept: "text/event-stream" } })
  const reader = response.body!.getReader()
  void (async () => {
    while (true) {
      const { done, value } = await reader.read()
      if (done) return
      onBytes(value.byteLength)
    }
  })()
}

const client = async (transport: string, port: number) => {
  const url = `http://127.0.0.1:${port}/`
  let bytes = 0
  const onBytes = (n: number) => (bytes += n)
  const read = transport === "http" ? readWithHttp : readWithFetch
  for (let i = 0; i < STREAMS; i++) await read(url, onBytes)
  await new Promise((resolve) => setTimeout(resolve, 1_000))
  globalThis.gc?.()
  const before = process.memoryUsage()
  const cpu = process.cpuUsage()
  const from = bytes
  await new Promise((resolve) => setTimeout(resolve, SECONDS * 1_000))
  const used = process.cpuUsage(cpu)
  globalThis.gc?.()
  const after = process.memoryUsage()
  process.send!({
    transport,
    streams: STREAMS,
    mbRead: (bytes - from) / 1e6,
    cpuPercent: ((used.user + used.system) / 1e3 / (SECONDS * 1_000)) * 100,
    rssMb: after.rss / 1e6,
    heapMb: after.heapUsed / 1e6,
    heapGrowthMb: (after.heapUsed - before.heapUsed) / 1e6
  })
  process.exit(0)
}

const main = async () => {
  const server = fork(process.argv[1]!, ["--role", "server", ...process.argv.slice(2)], {
    execArgv: ["--import", "tsx"]
  })
  const port = await new Promise<number>((resolve) => server.once("message", (m) => resolve(m as number)))
  const rows: Array<unknown> = []
  for (const transport of ["http", "fetch", "http", "fetch"]) {
    const child = fork(process.argv[1]!, ["--role", transport, "--port", String(port), ...process.argv.slice(2)], {
      execArgv: ["--import", "tsx", "--expose-gc"]
    })
    rows.push(await new Promise((resolve) => child.once("message", resolve)))
  }
  server.kill()
  console.table(rows)
}

const role = process.argv[process.argv.indexOf("--role") + 1]
if (process.argv.includes("--role") && role === "server") serve()
else if (process.argv.includes("--role")) void client(role!, arg("port", 0))
else void main()
