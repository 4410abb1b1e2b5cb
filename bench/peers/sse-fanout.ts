/**
 * The peer of bench/fleet-cpu.ts: a change stream's fan-out on bare `node:http`, written for speed. It holds every
 * `GET /v1/routing/changes` answer open (a bearer token checked, the registry's headers, a `ready` event) and, for each
 * `POST /change`, writes the request's body (one event's bytes, as the registry sent them) into every open answer:
 * encoded once, one `write` per connection, a connection holding more than 1 MiB unsent closed (the registry's bound,
 * without which a server's memory has none), a comment line to every connection every 10 s. No framework, no
 * validation, no store, no history: what a hand-written server does to send the same bytes to the same sockets.
 *
 * Environment: PORT (0: any), TOKEN (the bearer token the streams need), READY (the `ready` event's text).
 */
import * as Http from "node:http"

const TOKEN = `Bearer ${process.env.TOKEN ?? ""}`
const READY = Buffer.from(process.env.READY ?? "event: ready\ndata: {}\n\n")
const HEADERS = { "content-type": "text/event-stream", "cache-control": "no-cache", "x-accel-buffering": "no" }
const BOUND = 1024 * 1024
const HEARTBEAT = Buffer.from(":\n\n")

const streams = new Set<Http.ServerResponse>()

const fanOut = (bytes: Buffer) => {
  for (const res of streams) {
    res.write(bytes)
    if (res.writableLength > BOUND) res.destroy()
  }
}

const server = Http.createServer((req, res) => {
  if (req.method === "GET" && req.url!.startsWith("/v1/routing/changes")) {
    if (req.headers.authorization !== TOKEN) return void res.writeHead(401).end()
    res.writeHead(200, HEADERS)
    res.write(READY)
    streams.add(res)
    res.once("close", () => streams.delete(res))
    return
  }
  if (req.method === "POST" && req.url === "/change") {
    const chunks: Array<Buffer> = []
    req.on("data", (chunk: Buffer) => chunks.push(chunk))
    req.on("end", () => {
      fanOut(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks))
      res.writeHead(204).end()
    })
    return
  }
  res.writeHead(404).end()
})
// Keep-alive requests from the writer: no per-request timeout on the long-lived streams.
server.requestTimeout = 0
setInterval(fanOut, 10_000, HEARTBEAT).unref()
server.listen(Number(process.env.PORT ?? 0), "127.0.0.1", () => {
  const { port } = server.address() as { readonly port: number }
  console.log(`listening on http://127.0.0.1:${port}`)
})
process.once("SIGTERM", () => {
  for (const res of streams) res.destroy()
  server.close(() => process.exit(0))
})
