/**
 * A follower's memory against its registry's, measured from outside: `npm run bench:follower-memory [-- --routes
 * 100000] [--settle 10]`.
 *
 * A registry runs `npm start`'s exact command (the example host, the compiled library) on the Postgres store in
 * DATABASE_URL when it is set (the benchmark drops the store's tables there before and after: give it a database of
 * its own), else on the memory store; `--routes` routes are created through its API (`POST /v1/routing`, 32 at a
 * time). On Postgres the registry is then started again, so that it holds what loading its table left, as the
 * follower does, not what 100,000 requests left. Then a follower runs the same command with FOLLOW_URL on the
 * registry: it loads every route from the change stream and listens. After `--settle` seconds idle, each process's
 * resident set (`VmRSS`) and its peak (`VmHWM`) are read from `/proc/<pid>/status`: what the operating system gives
 * each, whatever the heap inside holds. Results are printed as JSON and a table.
 */
import * as PgClient from "@effect/sql-pg/PgClient"
import { Effect, Redacted } from "effect"
import { type ChildProcess, spawn } from "node:child_process"
import { readFileSync } from "node:fs"
import { fileURLToPath } from "node:url"
import * as PgRouteRepository from "route-registry/PgRouteRepository"
import { printMarkdownTable } from "./print.js"
import { listeningOrigin, npmStartCommand, npmStartEnv, seedConcurrently } from "./run.js"

const ROOT = fileURLToPath(new URL("..", import.meta.url))
const ADMIN_TOKEN = "memory-admin-token"
const READ_TOKEN = "memory-read-token"

const argv = process.argv.slice(2)
const whole = (name: string, fallback: number): number => {
  const i = argv.indexOf(`--${name}`)
  const value = i === -1 ? fallback : Number(argv[i + 1])
  if (!Number.isInteger(value) || value < 1) throw new Error(`--${name} needs a whole number from 1`)
  return value
}
const DATABASE_URL = process.env.DATABASE_URL || undefined
const config = {
  routes: whole("routes", 100_000),
  settleSeconds: whole("settle", 10),
  store: DATABASE_URL === undefined ? "memory" : "postgres"
}

interface Host {
  readonly name: string
  readonly child: ChildProcess
  readonly origin: string
}

const start = (name: string, env: Record<string, string>): Promise<Host> => {
  const command = npmStartCommand()
  const child = spawn(process.execPath, command.args, {
    cwd: ROOT,
    env: npmStartEnv({ admin: ADMIN_TOKEN, read: READ_TOKEN }, env),
    stdio: ["ignore", "pipe", "pipe"]
  })
  // A follower of 100,000 routes listens once it has them all: minutes on a loaded machine.
  return listeningOrigin(child, name, 300_000).then(({ origin }) => ({ name, child, origin }))
}

const stop = (host: Host): Promise<void> =>
  new Promise((resolve) => {
    if (host.child.exitCode !== null) return resolve()
    host.child.once("exit", () => resolve())
    host.child.kill("SIGTERM")
  })

/** The resident set and its peak of a process, in MB, as `/proc` reports them. */
const residentOf = (host: Host) => {
  const status = readFileSync(`/proc/${host.child.pid}/status`, "utf8")
  const kilobytes = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, "m").exec(status)?.[1] ?? NaN)
  return { rssMB: Math.round(kilobytes("VmRSS") / 1024), peakMB: Math.round(kilobytes("VmHWM") / 1024) }
}

const total = async (host: Host): Promise<number> => {
  const answer = await fetch(`${host.origin}/readyz`)
  if (answer.status !== 200) throw new Error(`${host.name}'s /readyz answered ${answer.status}`)
  let count = 0
  let cursor: string | null = null
  do {
    const page: Response = await fetch(
      `${host.origin}/v1/routing?limit=1000${cursor === null ? "" : `&cursor=${encodeURIComponent(cursor)}`}`,
      { headers: { authorization: `Bearer ${READ_TOKEN}` } }
    )
    const body = (await page.json()) as { readonly items: ReadonlyArray<unknown>; readonly nextCursor: string | null }
    count += body.items.length
    cursor = body.nextCursor
  } while (cursor !== null)
  return count
}

const settle = () => new Promise((resolve) => setTimeout(resolve, config.settleSeconds * 1000))

const clearStore = (url: string) =>
  Effect.runPromise(
    PgRouteRepository.uninstall().pipe(Effect.provide(PgClient.layer({ url: Redacted.make(url) })), Effect.scoped)
  )

// The registry, seeded; on Postgres started again over the seeded database.
const seededRegistry = async (): Promise<Host> => {
  const env = { DATABASE_URL: DATABASE_URL ?? "" }
  const seeding = await start("registry", env)
  const began = Date.now()
  try {
    await seedConcurrently(seeding.origin, ADMIN_TOKEN, config.routes)
  } catch (error) {
    await stop(seeding)
    throw error
  }
  console.error(`seeded ${config.routes} routes in ${((Date.now() - began) / 1000).toFixed(1)} s`)
  if (DATABASE_URL === undefined) return seeding
  await stop(seeding)
  return start("registry", env)
}

const main = async () => {
  if (DATABASE_URL !== undefined) await clearStore(DATABASE_URL)
  const registry = await seededRegistry()
  try {
    const follower = await start("follower", { FOLLOW_URL: registry.origin, FOLLOW_TOKEN: READ_TOKEN })
    try {
      await settle()
      const counts = { registry: await total(registry), follower: await total(follower) }
      if (counts.follower !== config.routes || counts.registry !== config.routes) {
        throw new Error(`routes held: ${JSON.stringify(counts)}, expected ${config.routes} each`)
      }
      // Listing every route allocates: both settle again before they are read.
      await settle()
      const measured = { registry: residentOf(registry), follower: residentOf(follower) }
      console.log(JSON.stringify({ ...config, ...measured }))
      printMarkdownTable(
        [["process", "process", "left"], ["routes", "routes", "right"], ["rss", "RSS (MB)", "right"], [
          "peak",
          "peak RSS (MB)",
          "right"
        ]],
        Object.entries(measured).map(([process, { peakMB, rssMB }]) => ({
          process: process === "registry" ? `registry (${config.store} store)` : process,
          routes: String(config.routes),
          rss: String(rssMB),
          peak: String(peakMB)
        }))
      )
    } finally {
      await stop(follower)
    }
  } finally {
    await stop(registry)
    if (DATABASE_URL !== undefined) await clearStore(DATABASE_URL)
  }
}

await main()
