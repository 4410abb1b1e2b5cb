/**
 * A bounded soak: mixed load (90% get, 10% create) on the Postgres store for a fixed time, sampling the server's
 * live heap and RSS each second. After a warm-up third, memory must stay flat: the heap within HEAP_BOUND_BYTES
 * and RSS within RSS_BOUND_BYTES of their values at the end of warm-up. Latency percentiles are reported.
 *
 *   npm run soak                      # builds, then 60 s; DATABASE_URL, default postgres://postgres@127.0.0.1:5432/postgres
 *   npm run soak -- --seconds 20
 *
 * CI runs a shorter form of the same code (test/reliability/soak.test.ts).
 */
import { fork } from "node:child_process"
import * as Http from "node:http"
import { pathToFileURL } from "node:url"
import Pg from "pg"

export const HEAP_BOUND_BYTES = 8 * 1024 * 1024
export const RSS_BOUND_BYTES = 48 * 1024 * 1024

export interface SoakResult {
  readonly seconds: number
  readonly requests: number
  readonly statuses: Record<string, number>
  readonly p50Ms: number
  readonly p99Ms: number
  readonly heap: { readonly afterWarmUp: number; readonly end: number; readonly max: number }
  readonly rss: { readonly afterWarmUp: number; readonly end: number; readonly max: number }
  readonly flat: boolean
}

interface Memory {
  readonly heapUsed: number
  readonly rss: number
}

const percentile = (sorted: ReadonlyArray<number>, p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))] ?? 0

export const soak = async (options: {
  readonly seconds: number
  readonly databaseUrl: string
  /** Run the host on the compiled library (dist/, built by `npm run build`) rather than the sources. */
  readonly compiled?: boolean
}): Promise<SoakResult> => {
  const table = `soak_${process.pid}_${Date.now().toString(36)}`
  const host = fork(new URL("./soak-host.ts", import.meta.url), [], {
    execArgv: ["--import", "tsx", "--expose-gc"],
    env: {
      ...process.env,
      DATABASE_URL: options.databaseUrl,
      SOAK_TABLE: table,
      // The compiled library in dist/, as users run it (bench/tsconfig.json maps the package there).
      ...(options.compiled ? { TSX_TSCONFIG_PATH: "bench/tsconfig.json" } : {})
    },
    stdio: ["ignore", "inherit", "inherit", "ipc"]
  })
  const next = <A>() => new Promise<A>((resolve) => host.once("message", (message) => resolve(message as A)))
  const { port } = await next<{ port: number }>()
  const memory = async (): Promise<Memory> => {
    const reply = next<Memory>()
    host.send("memory")
    return reply
  }

  const agent = new Http.Agent({ keepAlive: true, maxSockets: 32 })
  const request = (method: string, path: string, body?: string) =>
    new Promise<{ status: number; text: string }>((resolve, reject) => {
      const req = Http.request({
        host: "127.0.0.1",
        port,
        method,
        path,
        agent,
        headers: {
          authorization: "Bearer soak",
          ...(body === undefined ? {} : { "content-type": "application/json" })
        }
      }, (res) => {
        let text = ""
        res.setEncoding("utf8")
        res.on("data", (chunk) => (text += chunk))
        res.on("end", () => resolve({ status: res.statusCode ?? 0, text }))
      })
      req.on("error", reject)
      req.end(body)
    })

  const ids: Array<string> = []
  const latencies: Array<number> = []
  const statuses: Record<string, number> = {}
  let n = 0
  const deadline = Date.now() + options.seconds * 1000
  const worker = async () => {
    while (Date.now() < deadline) {
      const create = ids.length === 0 || n % 10 === 0
      const started = performance.now()
      const response = create
        ? await request("POST", "/v1/routing", JSON.stringify({ method: "GET", path: `/soak/${n++}`, handler: "h" }))
        : await request("GET", `/v1/routing/${ids[(n++ * 7919) % ids.length]}`)
      latencies.push(performance.now() - started)
      statuses[response.status] = (statuses[response.status] ?? 0) + 1
      if (create && response.status === 201) ids.push(JSON.parse(response.text).id)
    }
  }

  const samples: Array<Memory> = []
  const sampler = setInterval(() => void memory().then((m) => samples.push(m)), 1000)
  await Promise.all(Array.from({ length: 32 }, worker))
  clearInterval(sampler)
  const end = await memory()
  samples.push(end)
  host.send("stop")
  await new Promise((resolve) => host.once("exit", resolve))
  agent.destroy()
  const admin = new Pg.Client({ connectionString: options.databaseUrl })
  await admin.connect()
  await admin.query(`DROP TABLE IF EXISTS ${table}, ${table}_migrations`)
  await admin.end()

  const warmedUp = samples[Math.floor(samples.length / 3)] ?? end
  const after = samples.slice(Math.floor(samples.length / 3))
  const sorted = latencies.sort((a, b) => a - b)
  const heap = { afterWarmUp: warmedUp.heapUsed, end: end.heapUsed, max: Math.max(...after.map((s) => s.heapUsed)) }
  const rss = { afterWarmUp: warmedUp.rss, end: end.rss, max: Math.max(...after.map((s) => s.rss)) }
  return {
    seconds: options.seconds,
    requests: latencies.length,
    statuses,
    p50Ms: percentile(sorted, 50),
    p99Ms: percentile(sorted, 99),
    heap,
    rss,
    flat: heap.max - heap.afterWarmUp <= HEAP_BOUND_BYTES && rss.max - rss.afterWarmUp <= RSS_BOUND_BYTES
  }
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const at = process.argv.indexOf("--seconds")
  const seconds = at === -1 ? 60 : Number(process.argv[at + 1])
  const databaseUrl = process.env.DATABASE_URL || "postgres://postgres@127.0.0.1:5432/postgres"
  const mb = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(1)} MB`
  const result = await soak({ seconds, databaseUrl, compiled: true })
  console.log(`soak: ${result.seconds} s, ${result.requests} requests, statuses ${JSON.stringify(result.statuses)}`)
  console.log(`latency: p50 ${result.p50Ms.toFixed(2)} ms, p99 ${result.p99Ms.toFixed(2)} ms`)
  console.log(
    `heap after warm-up ${mb(result.heap.afterWarmUp)}, max after ${mb(result.heap.max)}, end ${
      mb(result.heap.end)
    } (bound +${mb(HEAP_BOUND_BYTES)})`
  )
  console.log(
    `rss after warm-up ${mb(result.rss.afterWarmUp)}, max after ${mb(result.rss.max)}, end ${
      mb(result.rss.end)
    } (bound +${mb(RSS_BOUND_BYTES)})`
  )
  console.log(result.flat ? "memory flat after warm-up: yes" : "memory flat after warm-up: NO")
  process.exit(result.flat ? 0 : 1)
}
