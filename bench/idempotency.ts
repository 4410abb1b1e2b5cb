/**
 * Bytes per remembered idempotency key, on both stores: `npm run bench:idempotency` (builds the library first), or
 * `node --expose-gc --import tsx bench/idempotency.ts [--count N] [--only memory|postgres|host]` with
 * `TSX_TSCONFIG_PATH=bench/tsconfig.json`. The Postgres store is measured when `DATABASE_URL` is set.
 *
 * Each scenario makes N keyed creates through the store's `createIdempotent`, each with a key of its own, and reads
 * what the store holds for them:
 * - outcome `conflict`: every create conflicts with one stored route, so the store keeps keys and nothing else (the
 *   attack of issue 16: 2,000 keyed creates that all conflicted);
 * - outcome `created`: every create stores its route, which is then deleted, so what is left is the key alone (the
 *   most a key can keep alive: the first answer outlives its route);
 * - input `typical`: a short route and a 36-character key (a UUID); `largest`: every field at its longest (a
 *   2,048-character path, 32 middleware names and a handler of 128 characters, in characters that do not compress)
 *   and a 255-character key.
 * The memory store's figure is the heap after a full GC, per key, in a process of its own per scenario. The Postgres
 * store's is `pg_total_relation_size` of its keys table (rows, indexes and TOAST) per key, on a fresh table.
 * One JSON line per scenario is printed, then a table.
 *
 * Part `host` (`--only host`) attacks the example host of `npm start` (in-memory store) as issue 16 did: 18,000 keyed
 * creates of the longest route, each with a key of its own, all conflicting with one stored route, 20 at a time; it
 * prints the host's resident memory before and after, and how many of each status it answered.
 */
import { PgClient } from "@effect/sql-pg"
import * as SqlClient from "@effect/sql/SqlClient"
import { Context, Duration, Effect, Layer, Redacted } from "effect"
import { spawn, spawnSync } from "node:child_process"
import { randomUUID } from "node:crypto"
import { readFileSync } from "node:fs"
import { fileURLToPath } from "node:url"
import * as PgRouteRepository from "route-registry/PgRouteRepository"
import * as Route from "route-registry/Route"
import * as RouteRepository from "route-registry/RouteRepository"
import { type Column, printTable } from "./print.js"

type Outcome = "conflict" | "created"
type Input = "typical" | "largest"

interface Result {
  readonly store: "memory" | "postgres"
  readonly outcome: Outcome
  readonly input: Input
  readonly keyLength: number
  readonly count: number
  readonly bytesPerKey: number
}

const argv = process.argv.slice(2)
const option = (name: string) => {
  const i = argv.indexOf(name)
  return i === -1 ? undefined : argv[i + 1]
}
const COUNT = Number(option("--count") ?? 2000)
const ONLY = option("--only")
const DATABASE_URL = process.env.DATABASE_URL === "" ? undefined : process.env.DATABASE_URL

// Characters of a static segment in an order that does not repeat, so TOAST cannot compress them away.
const noise = (length: number, seed: number) => {
  const alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
  let state = seed * 2654435761 >>> 0
  let text = ""
  for (let i = 0; i < length; i++) {
    state = (state * 1103515245 + 12345) >>> 0
    text += alphabet[state % alphabet.length]
  }
  return text
}

const staticText = (kind: Input, outcome: Outcome, i: number) =>
  kind === "typical" ? "" : noise(Route.MAX_PATH_LENGTH - 32, outcome === "conflict" ? 0 : i)

// The i-th create body: in a conflict run every body has the stored route's method and shape (`/bench/:p{i}/c…`).
const input = (kind: Input, outcome: Outcome, i: number): Route.CreateRoute => {
  const unique = outcome === "conflict" ? "c" : `u${i}`
  const body = kind === "typical"
    ? { method: "GET", path: `/bench/:p${i}/${unique}`, middleware: ["auth", "log"], handler: "BenchController#show" }
    : {
      method: "GET",
      // A parameter named after i, then static text up to nearly the longest path: the same text in a conflict run.
      path: `/bench/:p${i}/${unique}/${staticText(kind, outcome, i)}`,
      middleware: Array.from(
        { length: Route.MAX_MIDDLEWARE },
        (_, m) => `m${m}_${noise(Route.MAX_NAME_LENGTH - 5, i)}`
      ),
      handler: `h${noise(Route.MAX_NAME_LENGTH - 1, i)}`
    }
  const validated = Route.validateCreate(body)
  if (validated._tag === "Left") throw new Error(JSON.stringify(validated.left))
  return validated.right
}

const keyOf = (kind: Input, i: number) => kind === "typical" ? randomUUID() : `${i}-${noise(255, i)}`.slice(0, 255)

// Bounds that never refuse: what is measured is what a key costs, not the bounds.
const idempotency = (kind: Input, i: number): RouteRepository.Idempotency => ({
  key: keyOf(kind, i),
  principal: "bench",
  expiresAfter: Duration.hours(24),
  maxKeys: Number.MAX_SAFE_INTEGER,
  maxBytes: Number.MAX_SAFE_INTEGER
})

type Store = Context.Tag.Service<RouteRepository.RouteRepository>
type Idempotent = Context.Tag.Service<RouteRepository.Idempotent>

/** Makes the keyed creates of one scenario through `store`. */
const fill = (
  store: Store,
  { createIdempotent }: Idempotent,
  kind: Input,
  outcome: Outcome,
  from: number,
  count: number
) =>
  Effect.gen(function*() {
    for (let i = from; i < from + count; i++) {
      const value = input(kind, outcome, i)
      const { outcome: first } = yield* createIdempotent(value, idempotency(kind, i))
      if (outcome === "created") {
        if (first._tag !== "Right") throw new Error("expected a created route")
        yield* store.remove(first.right.id)
      } else if (first._tag !== "Left") throw new Error("expected a conflict")
    }
  })

// The route every conflicting create runs into: the same method and shape, another parameter name.
const holder = (store: Store, kind: Input) =>
  store.create({
    ...input(kind, "conflict", 0),
    path: input(kind, "conflict", 0).path.replace(":p0", ":x") as Route.RoutePath
  })

// ---------------------------------------------------------------------------------------------------------------
// Memory: one scenario per process, so every heap reading starts clean
// ---------------------------------------------------------------------------------------------------------------

const memoryScenario = (kind: Input, outcome: Outcome): Result => {
  const gc = (globalThis as { gc?: () => void }).gc
  if (gc === undefined) throw new Error("run with node --expose-gc")
  const settle = () => {
    for (let i = 0; i < 3; i++) gc()
    return process.memoryUsage().heapUsed
  }
  const memory = Effect.runSync(Effect.scoped(Layer.build(RouteRepository.layerMemory)))
  const store = Context.get(memory, RouteRepository.RouteRepository)
  const idempotent = Context.get(memory, RouteRepository.Idempotent)
  Effect.runSync(holder(store, kind))
  // Warm the code paths (and their one-time allocations) with keys of their own before the baseline reading.
  Effect.runSync(fill(store, idempotent, kind, outcome, COUNT, 200))
  const before = settle()
  Effect.runSync(fill(store, idempotent, kind, outcome, 0, COUNT))
  const after = settle()
  return {
    store: "memory",
    outcome,
    input: kind,
    keyLength: keyOf(kind, 0).length,
    count: COUNT,
    bytesPerKey: Math.round((after - before) / COUNT)
  }
}

const runMemory = (kind: Input, outcome: Outcome): Result => {
  const child = spawnSync(process.execPath, [
    "--expose-gc",
    "--import",
    "tsx",
    fileURLToPath(import.meta.url),
    "--memory-scenario",
    `${kind},${outcome}`,
    "--count",
    String(COUNT)
  ], { encoding: "utf8", env: process.env, maxBuffer: 1 << 24 })
  const line = /^\{.*\}$/m.exec(child.stdout)
  if (child.status !== 0 || line === null) throw new Error(`memory ${kind} ${outcome} failed:\n${child.stderr}`)
  return JSON.parse(line[0])
}

// ---------------------------------------------------------------------------------------------------------------
// Postgres: a fresh table per scenario, measured and uninstalled
// ---------------------------------------------------------------------------------------------------------------

const runPostgres = (kind: Input, outcome: Outcome) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const table = `rr_bench_idem_${process.pid}_${kind}_${outcome}`
    const options = { table }
    yield* PgRouteRepository.migrate(options)
    const built = yield* PgRouteRepository.makeContext(options)
    return yield* Effect.ensuring(
      Effect.gen(function*() {
        const store = Context.get(built, RouteRepository.RouteRepository)
        yield* holder(store, kind)
        yield* fill(store, Context.get(built, RouteRepository.Idempotent), kind, outcome, 0, COUNT)
        const [row] = yield* sql<{ bytes: string }>`
          SELECT pg_total_relation_size(${`${table}_idempotency`}) AS bytes`
        const result: Result = {
          store: "postgres",
          outcome,
          input: kind,
          keyLength: keyOf(kind, 0).length,
          count: COUNT,
          bytesPerKey: Math.round(Number(row!.bytes) / COUNT)
        }
        return result
      }),
      Effect.orDie(PgRouteRepository.uninstall(options))
    ).pipe(Effect.tap((result) => Effect.sync(() => console.log(JSON.stringify(result)))))
  })

// ---------------------------------------------------------------------------------------------------------------
// The host of `npm start`, attacked through its API
// ---------------------------------------------------------------------------------------------------------------

const HOST_REQUESTS = 18_000
const TOKEN = "bench-admin-token"

// The resident memory of a process, in MB (Linux).
const residentMb = (pid: number) =>
  Math.round(Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))![1]) / 1024)

const runHost = async () => {
  const host = spawn(process.execPath, ["--import", "tsx", "examples/server.ts"], {
    cwd: fileURLToPath(new URL("..", import.meta.url)),
    env: { ...process.env, PORT: "0", ROUTING_ADMIN_TOKENS: TOKEN, DATABASE_URL: "" },
    stdio: ["ignore", "pipe", "inherit"]
  })
  try {
    const origin = await new Promise<string>((resolve, reject) => {
      let printed = ""
      host.stdout.on("data", (chunk) => {
        printed += chunk
        const listening = /listening on (http:\/\/\S+)/.exec(printed)
        if (listening !== null) resolve(listening[1]!)
      })
      host.once("exit", (code) => reject(new Error(`the host exited with ${code}`)))
    })
    const send = (i: number) => {
      const value = input("largest", "conflict", i)
      return fetch(`${origin}/v1/routing`, {
        method: "POST",
        headers: {
          authorization: `Bearer ${TOKEN}`,
          "content-type": "application/json",
          "idempotency-key": JSON.stringify(keyOf("largest", i))
        },
        body: JSON.stringify(value)
      }).then(async (response) => (await response.arrayBuffer(), response.status))
    }
    const holder = input("largest", "conflict", 0)
    await fetch(`${origin}/v1/routing`, {
      method: "POST",
      headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" },
      body: JSON.stringify({ ...holder, path: holder.path.replace(":p0", ":x") })
    })
    const before = residentMb(host.pid!)
    const statuses: Record<number, number> = {}
    let next = 0
    await Promise.all(Array.from({ length: 20 }, async () => {
      while (next < HOST_REQUESTS) {
        const status = await send(next++)
        statuses[status] = (statuses[status] ?? 0) + 1
      }
    }))
    const result = {
      part: "host",
      requests: HOST_REQUESTS,
      rssBeforeMb: before,
      rssAfterMb: residentMb(host.pid!),
      statuses
    }
    console.log(JSON.stringify(result))
  } finally {
    host.kill("SIGTERM")
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Main
// ---------------------------------------------------------------------------------------------------------------

const scenarios: ReadonlyArray<readonly [Input, Outcome]> = [
  ["typical", "conflict"],
  ["typical", "created"],
  ["largest", "conflict"],
  ["largest", "created"]
]

const main = async () => {
  if (ONLY === "host") return runHost()
  const results: Array<Result> = []
  if (ONLY === undefined || ONLY === "memory") {
    for (const [kind, outcome] of scenarios) {
      const result = runMemory(kind, outcome)
      console.log(JSON.stringify(result))
      results.push(result)
    }
  }
  if ((ONLY === undefined || ONLY === "postgres") && DATABASE_URL !== undefined) {
    const client = PgClient.layer({ url: Redacted.make(DATABASE_URL) })
    for (const [kind, outcome] of scenarios) {
      results.push(await Effect.runPromise(runPostgres(kind, outcome).pipe(Effect.provide(Layer.orDie(client)))))
    }
  }
  const rows = results.map((r) => ({
    store: r.store,
    outcome: r.outcome,
    input: r.input,
    key: String(r.keyLength),
    keys: r.count.toLocaleString("en-US"),
    bytes: r.bytesPerKey.toLocaleString("en-US")
  }))
  const columns: ReadonlyArray<Column<(typeof rows)[number]>> = [
    ["store", "store", "left"],
    ["outcome", "first answer", "left"],
    ["input", "input", "left"],
    ["key", "key chars", "right"],
    ["keys", "keys", "right"],
    ["bytes", "bytes per key", "right"]
  ]
  printTable(columns, rows)
}

const scenario = option("--memory-scenario")
if (scenario !== undefined) {
  const [kind, outcome] = scenario.split(",") as [Input, Outcome]
  console.log(JSON.stringify(memoryScenario(kind, outcome)))
} else {
  main().catch((error) => {
    console.error(error)
    process.exit(1)
  })
}
