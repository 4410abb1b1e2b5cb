/**
 * Writes on Postgres over HTTP: `npm run bench:writes [-- --seconds S] [--rounds N] [--only NAMES] [--callers 1,10,50]
 * [--library DIR]`.
 *
 * Creates (`POST`), updates (`PATCH`, a new handler) and deletes (`DELETE`) per second, with p50 and p99 latency, at
 * 1, 10 and 50 callers, against one and two server processes on one table, for: the library (`bench/ours/
 * node-listener.ts`: `AdminListener` over `PgRouteRepository`, from DIR's compiled `dist/` when `--library` names
 * another checkout, to measure an earlier commit), the expert peer (`bench/peers/pg-node.ts`, PEER_MODE=full: the
 * same transaction, its own group commit) and the one-statement peer (PEER_MODE=insert: no log, no counter). Servers
 * are pinned to core 1, this process (the callers: keep-alive HTTP clients) to core 0. Each round starts every server
 * set on a fresh table, and for each caller count creates, then updates the routes it created, then deletes them (a
 * delete phase ends early when they run out). The median of the rounds (default 3) is printed, and the
 * `pg_stat_activity` wait events of the table's database sampled during the 50-caller creates. DATABASE_URL names the
 * database (default: the local `postgres`).
 */
import { type ChildProcess, spawn } from "node:child_process"
import * as Http from "node:http"
import { resolve } from "node:path"
import { fileURLToPath } from "node:url"
import Pg from "pg"

const ROOT = fileURLToPath(new URL("..", import.meta.url))
const argv = process.argv.slice(2)
const option = (name: string) => {
  const i = argv.indexOf(name)
  return i === -1 ? undefined : argv[i + 1]
}
const SECONDS = Number(option("--seconds") ?? 2)
const ROUNDS = Number(option("--rounds") ?? 3)
const LIBRARY = resolve(option("--library") ?? ROOT)
const ONLY = option("--only")?.split(",")
const URL_ = process.env.DATABASE_URL || "postgres://postgres@127.0.0.1:5432/postgres"
const TOKEN = "bench-writes-token"
const CALLERS = (option("--callers") ?? "1,10,50").split(",").map(Number)

interface Spec {
  readonly name: string
  readonly file: string
  readonly cwd: string
  readonly env: Record<string, string>
  readonly processes: number
}

const kinds = [
  { name: "ours", file: "bench/ours/node-listener.ts", cwd: LIBRARY, env: {} },
  { name: "expert-peer", file: "bench/peers/pg-node.ts", cwd: ROOT, env: { PEER_MODE: "full" } },
  { name: "insert-peer", file: "bench/peers/pg-node.ts", cwd: ROOT, env: { PEER_MODE: "insert" } }
]
const specs: ReadonlyArray<Spec> = kinds.flatMap((kind) =>
  [1, 2].map((processes) => ({ ...kind, name: `${kind.name}×${processes}`, processes }))
).filter((spec) => ONLY === undefined || ONLY.some((name) => spec.name.startsWith(name)))

const startServer = (spec: Spec, table: string) =>
  new Promise<{ child: ChildProcess; port: number }>((done, fail) => {
    const child = spawn("taskset", ["-c", "1", process.execPath, "--import", "tsx", spec.file], {
      cwd: spec.cwd,
      env: {
        ...process.env,
        ...spec.env,
        TSX_TSCONFIG_PATH: "bench/tsconfig.json",
        NODE_ENV: "production",
        DATABASE_URL: URL_,
        TABLE: table,
        ROUTING_ADMIN_TOKENS: TOKEN,
        PORT: "0"
      },
      stdio: ["ignore", "pipe", "inherit"]
    })
    let out = ""
    child.stdout!.on("data", (chunk: Buffer) => {
      out += chunk.toString()
      const match = /listening on http:\/\/[^:]+:(\d+)/.exec(out)
      if (match !== null) done({ child, port: Number(match[1]) })
    })
    child.once("exit", (code) => fail(new Error(`${spec.name} exited ${code}: ${out}`)))
  })

const agent = new Http.Agent({ keepAlive: true, maxSockets: 64 })

const request = (port: number, method: string, path: string, body?: unknown) =>
  new Promise<{ status: number; body: string }>((done, fail) => {
    const text = body === undefined ? undefined : JSON.stringify(body)
    const req = Http.request({
      host: "127.0.0.1",
      port,
      method,
      path,
      agent,
      headers: {
        authorization: `Bearer ${TOKEN}`,
        ...(text === undefined ? {} : { "content-type": "application/json", "content-length": Buffer.byteLength(text) })
      }
    }, (res) => {
      let data = ""
      res.on("data", (chunk) => data += chunk)
      res.on("end", () => done({ status: res.statusCode!, body: data }))
    })
    req.on("error", fail)
    req.end(text)
  })

interface Measured {
  readonly perSecond: number
  readonly p50: number
  readonly p99: number
}

/** `callers` loops, caller i on server i mod n, each running `next` until it gives nothing or time is up. */
const load = async (
  ports: ReadonlyArray<number>,
  callers: number,
  next: (caller: number) => { method: string; path: string; body?: unknown; ok: number } | undefined,
  onAnswer: (caller: number, body: string) => void = () => undefined
): Promise<Measured> => {
  const latencies: Array<number> = []
  const started = performance.now()
  const end = started + SECONDS * 1000
  let last = started
  await Promise.all(Array.from({ length: callers }, async (_, caller) => {
    for (;;) {
      if (performance.now() >= end) return
      const call = next(caller)
      if (call === undefined) return
      const t0 = performance.now()
      const answer = await request(ports[caller % ports.length]!, call.method, call.path, call.body)
      const t1 = performance.now()
      if (answer.status !== call.ok) throw new Error(`${call.method} ${call.path}: ${answer.status} ${answer.body}`)
      latencies.push(t1 - t0)
      last = Math.max(last, t1)
      onAnswer(caller, answer.body)
    }
  }))
  latencies.sort((a, b) => a - b)
  const at = (q: number) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] ?? NaN
  return { perSecond: latencies.length / ((last - started) / 1000), p50: at(0.5), p99: at(0.99) }
}

/** The wait events of the database's other backends, sampled every 20 ms until `stop`. */
const sampleWaits = (pool: Pg.Pool) => {
  const counts = new Map<string, number>()
  let samples = 0
  let stopped = false
  const loop = (async () => {
    while (!stopped) {
      const { rows } = await pool.query<{ wait: string; n: number }>(
        `SELECT COALESCE(wait_event_type || '/' || wait_event, 'CPU') AS wait, count(*)::int AS n FROM pg_stat_activity
         WHERE datname = current_database() AND pid <> pg_backend_pid() AND state = 'active'
         GROUP BY 1`
      )
      samples++
      for (const { n, wait } of rows) counts.set(wait, (counts.get(wait) ?? 0) + n)
      await new Promise((r) => setTimeout(r, 20))
    }
  })()
  return async () => {
    stopped = true
    await loop
    return [...counts].sort((a, b) => b[1] - a[1]).map(([wait, n]) => `${wait} ${(n / samples).toFixed(1)}`)
  }
}

type Results = Map<string, Array<Measured>>

const round = async (pool: Pg.Pool, spec: Spec, results: Results, waits: Map<string, Array<string>>) => {
  const table = `rr_bench_writes_${process.pid}_${Date.now().toString(36)}`
  const servers: Array<{ child: ChildProcess; port: number }> = []
  try {
    // The first migrates; the second finds the table made.
    servers.push(await startServer(spec, table))
    if (spec.processes === 2) servers.push(await startServer(spec, table))
    const ports = servers.map((server) => server.port)
    let n = 0
    for (const callers of CALLERS) {
      const created: Array<Array<string>> = Array.from({ length: callers }, () => [])
      const stopWaits = callers === 50 ? sampleWaits(pool) : undefined
      const creates = await load(ports, callers, () => ({
        method: "POST",
        path: "/v1/routing",
        body: { method: "GET", path: `/w/${callers}/${n++}/:id`, handler: "h", middleware: ["auth"] },
        ok: 201
      }), (caller, body) => created[caller]!.push(JSON.parse(body).id))
      if (stopWaits !== undefined) waits.set(spec.name, await stopWaits())
      const cursor = created.map(() => 0)
      const updates = await load(ports, callers, (caller) => {
        const ids = created[caller]!
        return ids.length === 0 ? undefined : {
          method: "PATCH",
          path: `/v1/routing/${ids[cursor[caller]!++ % ids.length]}`,
          body: { handler: `h${n++}` },
          ok: 200
        }
      })
      const deletes = await load(ports, callers, (caller) => {
        const id = created[caller]!.pop()
        return id === undefined ? undefined : { method: "DELETE", path: `/v1/routing/${id}`, ok: 204 }
      })
      for (const [op, measured] of [["create", creates], ["update", updates], ["delete", deletes]] as const) {
        const key = `${spec.name}|${op}|${callers}`
        results.set(key, [...(results.get(key) ?? []), measured])
      }
    }
  } finally {
    for (const server of servers) server.child.kill("SIGTERM")
    await Promise.all(servers.map((server) => new Promise((r) => server.child.once("exit", r))))
    // Everything the migration made is named after the table.
    const made = await pool.query<{ kind: string; name: string }>(
      `SELECT 'TABLE' AS kind, format('%I', tablename) AS name FROM pg_tables WHERE starts_with(tablename, $1)
       UNION ALL SELECT 'FUNCTION', format('%I(%s)', proname, pg_get_function_identity_arguments(oid)) FROM pg_proc
       WHERE starts_with(proname, $1)`,
      [table]
    )
    for (const { kind, name } of made.rows) await pool.query(`DROP ${kind} IF EXISTS ${name} CASCADE`)
  }
}

const median = (values: ReadonlyArray<number>) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!

const main = async () => {
  spawn("taskset", ["-cp", "0", String(process.pid)], { stdio: "ignore" })
  const pool = new Pg.Pool({ connectionString: URL_, max: 2 })
  const results: Results = new Map()
  const waits = new Map<string, Array<string>>()
  for (let r = 0; r < ROUNDS; r++) {
    // The order rotates from round to round.
    for (const spec of [...specs.slice(r % specs.length), ...specs.slice(0, r % specs.length)]) {
      await round(pool, spec, results, waits)
    }
  }
  await pool.end()
  agent.destroy()
  console.log(`writes on Postgres, ${SECONDS} s a phase, median of ${ROUNDS} rounds; library from ${LIBRARY}`)
  console.log("| server | op | callers | per s | p50 ms | p99 ms |")
  console.log("|---|---|---:|---:|---:|---:|")
  for (const spec of specs) {
    for (const op of ["create", "update", "delete"]) {
      for (const callers of CALLERS) {
        const all = results.get(`${spec.name}|${op}|${callers}`) ?? []
        const m = (f: (x: Measured) => number) => median(all.map(f))
        console.log(
          `| ${spec.name} | ${op} | ${callers} | ${Math.round(m((x) => x.perSecond))} | ${
            m((x) => x.p50).toFixed(1)
          } | ${m((x) => x.p99).toFixed(1)} |`
        )
      }
    }
  }
  console.log("\npg_stat_activity during 50-caller creates (last round; active backends per sample, by wait event):")
  for (const [name, list] of waits) console.log(`${name}: ${list.slice(0, 6).join(", ")}`)
}

main().catch((error) => {
  console.error(error)
  process.exit(1)
})
