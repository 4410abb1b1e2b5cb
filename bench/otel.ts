/**
 * What naming the routed requests in OpenTelemetry costs (docs/observability.md): CPU time per request of the host, on the
 * GitHub routes (every route requested in turn, 8 at a time over keep-alive connections), measured in the host
 * process itself (`process.cpuUsage`), so the client's work and the machine's other load count for little.
 *
 * - with OpenTelemetry's SDK and HTTP instrumentation: the library naming each request's span and metric point, versus
 *   the same host where the library cannot see `@opentelemetry/api` (it names nothing);
 * - without an SDK: the library with `@opentelemetry/api` installed, versus without it (as before the routers named their spans).
 *
 * Variants alternate, `ROUNDS` times (default 5) each, and the medians are compared.
 *
 *   npm run build && npm run bench:otel
 */
import { type ChildProcess, spawn } from "node:child_process"
import * as Http from "node:http"
import * as Scenario from "./router.js"

const ROUNDS = Number(process.env.ROUNDS ?? 5)
const PASSES = Number(process.env.PASSES ?? 4)
const CONCURRENCY = 8

interface Variant {
  readonly name: string
  readonly env: Readonly<Record<string, string>>
}

const variants: ReadonlyArray<Variant> = [
  { name: "SDK + HTTP instrumentation, routes named", env: { OTEL: "sdk", NAMING: "on" } },
  { name: "SDK + HTTP instrumentation, library names nothing", env: { OTEL: "sdk", NAMING: "off" } },
  { name: "no SDK, @opentelemetry/api seen by the library", env: { OTEL: "none", NAMING: "on" } },
  { name: "no SDK, @opentelemetry/api not seen by the library", env: { OTEL: "none", NAMING: "off" } }
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

const pass = async (agent: Http.Agent, port: number): Promise<void> => {
  let next = 0
  const worker = async () => {
    while (next < requests.length) await send(agent, port, requests[next++]!)
  }
  await Promise.all(Array.from({ length: CONCURRENCY }, worker))
}

/** CPU microseconds per request of one host of `variant`, after a warm-up pass. */
const measure = async (variant: Variant): Promise<number> => {
  const child = spawn(process.execPath, ["--import", "tsx", "bench/otel-host.ts"], {
    env: { ...process.env, TSX_TSCONFIG_PATH: "bench/tsconfig.json", ...variant.env },
    stdio: ["ignore", "inherit", "inherit", "ipc"]
  })
  try {
    const { port } = await message<{ port: number }>(child)
    const agent = new Http.Agent({ keepAlive: true, maxSockets: CONCURRENCY })
    await pass(agent, port)
    await pass(agent, port)
    const before = message<{ cpu: number }>(child)
    child.send("cpu")
    const start = (await before).cpu
    for (let i = 0; i < PASSES; i++) await pass(agent, port)
    const after = message<{ cpu: number }>(child)
    child.send("cpu")
    const end = (await after).cpu
    agent.destroy()
    return (end - start) / (PASSES * requests.length)
  } finally {
    child.kill()
  }
}

const median = (values: ReadonlyArray<number>) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!

const samples = new Map<string, Array<number>>(variants.map((variant) => [variant.name, []]))
for (let round = 0; round < ROUNDS; round++) {
  for (const variant of variants) {
    const perRequest = await measure(variant)
    samples.get(variant.name)!.push(perRequest)
    console.error(`round ${round + 1}/${ROUNDS} ${variant.name}: ${perRequest.toFixed(1)} µs CPU per request`)
  }
}

const medians = variants.map((variant) => median(samples.get(variant.name)!))
console.log(`GitHub routes (${requests.length}), ${PASSES} passes a host, ${ROUNDS} hosts a variant; medians:`)
variants.forEach((variant, i) => console.log(`  ${variant.name}: ${medians[i]!.toFixed(1)} µs CPU per request`))
const change = (a: number, b: number) => `${((a / b - 1) * 100).toFixed(1)}%`
console.log(`naming, with the SDK: ${change(medians[0]!, medians[1]!)} CPU per request`)
console.log(`@opentelemetry/api installed, no SDK: ${change(medians[2]!, medians[3]!)} CPU per request`)
