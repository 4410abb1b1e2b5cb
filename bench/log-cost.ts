/**
 * What the change log costs a write: creates per second on this build against a build of the release before the log,
 * on both stores, called directly (no HTTP):
 * `npm run bench:log-cost -- --old <dir> [--new <dir>] [--seconds S] [--warmup W] [--rounds N] [--callers 1,50]
 * [--stores memory,postgres] [--operations create,update]`.
 *
 * `<dir>` is a checkout of the library with its dependencies installed and built (`npm ci && npm run build`), for
 * instance a worktree of the last commit of main before the log (`git worktree add ../old bfb6d07`); `--new` defaults
 * to this checkout (its `dist/`, built by the npm script). Each build runs in a child process of its own that loads
 * that checkout's `dist/` and its own `effect` and `@effect/sql-pg`, so each runs exactly as its release ran. Each
 * measurement runs on a fresh store (Postgres: a table of its own on the database in DATABASE_URL, pool of 10, dropped
 * after): W seconds of warm-up (default 1), then S seconds (default 3) of `callers` loops each creating one route after
 * the other, or updating the handler of one of 200 routes created beforehand (each update a real change). In each round
 * (default 5) every store, operation and caller count is measured on both builds, the order of the builds alternating
 * round by round, so the machine's load falls on both alike. Reported: the median creates (updates) per second of each
 * build with the range over the rounds, the median of the per-round ratios (new ÷ old), the worker process's CPU per
 * operation (the Node side only: on Postgres the database's own work is not in it), and the load average.
 */
import { type ChildProcess, fork } from "node:child_process"
import { readFileSync } from "node:fs"
import * as os from "node:os"
import { join, resolve } from "node:path"
import { pathToFileURL } from "node:url"
// Types only: at run time each worker loads the modules of the build it measures.
import type * as Effect from "effect/Effect"
import type * as Route from "route-registry/Route"
import type * as RouteRepository from "route-registry/RouteRepository"
import { printMarkdownTable } from "./print.js"

const argv = process.argv.slice(2)
const text = (name: string, fallback: string | undefined) => {
  const i = argv.indexOf(name)
  return i === -1 ? fallback : argv[i + 1]
}
const option = (name: string, fallback: number) => {
  const value = Number(text(name, String(fallback)))
  if (!(value > 0)) throw new Error(`${name} needs a positive number`)
  return value
}
const list = (name: string, fallback: string) => text(name, fallback)!.split(",").filter((item) => item !== "")

type StoreKind = "memory" | "postgres"
type Operation = "create" | "update"

interface Job {
  readonly store: StoreKind
  readonly operation: Operation
  readonly callers: number
  readonly seconds: number
  readonly warmup: number
}

interface Outcome {
  readonly perSecond: number
  readonly cpuMicros: number
  readonly failed: number
}

// The worker: loads one build's modules from its own directory, as that release resolved them.
const worker = async (build: string) => {
  const esm = (pkg: string, sub: string) => {
    const dir = join(build, "node_modules", pkg)
    const entry = JSON.parse(readFileSync(join(dir, "package.json"), "utf8")).exports[sub]
    return pathToFileURL(join(dir, typeof entry === "string" ? entry : entry.import ?? entry.default)).href
  }
  const library = (name: string) => pathToFileURL(join(build, "dist", `${name}.js`)).href
  const { Context, Effect: E, Layer, Redacted }: typeof import("effect") = await import(esm("effect", "."))
  const PgClient: typeof import("@effect/sql-pg/PgClient") = await import(esm("@effect/sql-pg", "./PgClient"))
  const PgRouteRepository: typeof import("route-registry/PgRouteRepository") = await import(
    library("PgRouteRepository")
  )
  const { decodeCreate }: typeof Route = await import(library("Route"))
  const { makeMemory, RouteRepository: Tag }: typeof RouteRepository = await import(library("RouteRepository"))
  type Store = RouteRepository.RouteRepository["Type"]
  const URL = process.env.DATABASE_URL || "postgres://postgres@127.0.0.1:5432/postgres"

  let counter = 0
  let tables = 0
  const input = () =>
    E.orDie(decodeCreate({ method: "GET", path: `/bench/${counter++}/:id`, handler: "h", middleware: ["a"] }))

  // `callers` loops calling `operation` for `seconds`: completed calls per second, failed ones (a write past the
  // store's deadline on a loaded machine) counted apart, and this process's CPU per completed call.
  const rate = (callers: number, seconds: number, operation: () => Effect.Effect<unknown, unknown>) =>
    E.gen(function*() {
      let done = 0
      let failed = 0
      const cpu = process.cpuUsage()
      const end = Date.now() + seconds * 1000
      yield* E.all(
        Array.from({ length: callers }, () =>
          E.whileLoop({
            while: () => Date.now() < end,
            body: () =>
              E.match(operation(), {
                onFailure: () => failed++,
                onSuccess: () => done++
              }),
            step: () => {}
          })),
        { concurrency: "unbounded", discard: true }
      )
      const used = process.cpuUsage(cpu)
      return { perSecond: done / seconds, cpuMicros: (used.user + used.system) / Math.max(done, 1), failed }
    })

  const measure = (store: Store, job: Job) =>
    E.gen(function*() {
      let operation: () => Effect.Effect<unknown, unknown> = () => E.flatMap(input(), (route) => store.create(route))
      if (job.operation === "update") {
        const routes = yield* E.forEach(
          Array.from({ length: 200 }),
          () => E.flatMap(input(), (route) => E.orDie(store.create(route))),
          { concurrency: 50 }
        )
        let flip = 0
        // Each update changes the handler, so each is a write.
        operation = () => store.update(routes[flip++ % routes.length]!.id, { handler: `h${flip}` as never })
      }
      yield* rate(job.callers, job.warmup, operation)
      return yield* rate(job.callers, job.seconds, operation)
    })

  const run = (job: Job): Promise<Outcome> => {
    if (job.store === "memory") {
      return E.runPromise(E.flatMap(makeMemory, (store) => measure(store, job)))
    }
    const table = `rr_bench_log_cost_${process.pid}_${tables++}`
    return E.runPromise(E.scoped(E.gen(function*() {
      const context = yield* Layer.build(
        PgRouteRepository.layer({ table }).pipe(
          Layer.provideMerge(PgClient.layer({ url: Redacted.make(URL), maxConnections: 10 }))
        )
      )
      yield* E.addFinalizer(() => E.orDie(PgRouteRepository.uninstall({ table }).pipe(E.provide(context))))
      return yield* measure(Context.get(context, Tag), job)
    })))
  }

  process.on("message", (job: Job) => {
    run(job).then((outcome) => process.send!(outcome), (error) => {
      console.error(error)
      process.exit(1)
    })
  })
  process.send!("ready")
}

const median = (values: ReadonlyArray<number>) => {
  const sorted = [...values].sort((a, b) => a - b)
  const middle = Math.floor(sorted.length / 2)
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2
}

const load = () => os.loadavg().map((value) => value.toFixed(1)).join(" ")

const main = async () => {
  const old = text("--old", undefined)
  if (old === undefined) throw new Error("--old <dir>: a built checkout of the release before the log is needed")
  const builds = { old: resolve(old), new: resolve(text("--new", ".")!) }
  const seconds = option("--seconds", 3)
  const warmup = option("--warmup", 1)
  const rounds = option("--rounds", 5)
  const callerCounts = list("--callers", "1,50").map(Number)
  const stores = list("--stores", "memory,postgres") as Array<StoreKind>
  const operations = list("--operations", "create") as Array<Operation>

  const start = (build: string) =>
    new Promise<ChildProcess>((ready, failed) => {
      const child = fork(new URL(import.meta.url), ["--worker", build], { stdio: "inherit" })
      child.once("message", () => ready(child))
      child.once("exit", (code) => failed(new Error(`the worker of ${build} ended (${code})`)))
    })
  const workers = { old: await start(builds.old), new: await start(builds.new) }
  const ask = (child: ChildProcess, job: Job) =>
    new Promise<Outcome>((answered) => {
      child.once("message", (outcome: Outcome) => answered(outcome))
      child.send(job)
    })

  const loads = [load()]
  const results = new Map<string, { old: Array<Outcome>; new: Array<Outcome> }>()
  for (let round = 0; round < rounds; round++) {
    const order = round % 2 === 0 ? (["old", "new"] as const) : (["new", "old"] as const)
    for (const store of stores) {
      for (const operation of operations) {
        for (const callers of callerCounts) {
          const key = `${store}|${operation}|${callers}`
          const entry = results.get(key) ?? { old: [], new: [] }
          results.set(key, entry)
          for (const build of order) {
            const outcome = await ask(workers[build], { store, operation, callers, seconds, warmup })
            entry[build].push(outcome)
            console.error(
              `round ${round + 1}/${rounds} ${store} ${operation} ${callers}: ${build} ${
                outcome.perSecond.toFixed(0)
              }/s, ${outcome.cpuMicros.toFixed(0)} µs CPU each${outcome.failed > 0 ? `, ${outcome.failed} failed` : ""}`
            )
          }
        }
      }
    }
    loads.push(load())
  }
  workers.old.kill()
  workers.new.kill()

  const perSecond = (outcomes: ReadonlyArray<Outcome>) => {
    const rates = outcomes.map((outcome) => outcome.perSecond)
    return `${median(rates).toFixed(0)}/s (${Math.min(...rates).toFixed(0)}–${Math.max(...rates).toFixed(0)})`
  }
  const rows = [...results].map(([key, { new: after, old: before }]) => {
    const [store, operation, callers] = key.split("|")
    const ratios = after.map((outcome, i) => outcome.perSecond / before[i]!.perSecond)
    const failed = [...before, ...after].reduce((sum, outcome) => sum + outcome.failed, 0)
    return {
      what: `${store} ${operation}, ${callers} caller${callers === "1" ? "" : "s"}`,
      old: perSecond(before),
      new: perSecond(after),
      ratio: `${median(ratios).toFixed(2)}× (${Math.min(...ratios).toFixed(2)}–${Math.max(...ratios).toFixed(2)})`,
      cpu: `${median(before.map((o) => o.cpuMicros)).toFixed(0)} / ${median(after.map((o) => o.cpuMicros)).toFixed(0)}`,
      failed: String(failed)
    }
  })
  console.log(`\nold: ${builds.old}\nnew: ${builds.new}`)
  console.log(
    `${seconds} s per measurement after ${warmup} s of warm-up, ${rounds} rounds; load average (1, 5, 15 min)`
  )
  console.log(`at the start and after each round: ${loads.join("; ")}`)
  printMarkdownTable([
    ["what", "store, operation, callers", "left"],
    ["old", "old: median (range)", "right"],
    ["new", "new: median (range)", "right"],
    ["ratio", "new ÷ old per round: median (range)", "right"],
    ["cpu", "µs CPU per op, old / new", "right"],
    ["failed", "failed", "right"]
  ], rows)
}

if (argv[0] === "--worker") await worker(resolve(argv[1]!))
else await main()
