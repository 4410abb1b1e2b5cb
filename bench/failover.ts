/**
 * A Postgres failover under load, measured from outside (docs/reliability.md, "Failover"): a primary and a synchronous
 * standby of its own (test/utils/PgCluster.ts), a TCP proxy as the one address the registries reach the database by,
 * two `npm start` registries through it, a follower of the first (`FOLLOW_URL`, through a proxy that counts the `reset`
 * events it passes), and writers creating routes through both registries. The primary is killed (`pg_ctl stop -m
 * immediate`), the address moves at once to the standby, still read-only, for `standbyMillis`, then the standby is
 * promoted and the address stays on it. Every acknowledged create is then looked for on the new primary, and every
 * process's router is asked for every stored route.
 *
 *   npm run bench:failover                  # 5 runs, the compiled library (dist/)
 *   npm run bench:failover -- --runs 10
 *
 * test/reliability/failover.test.ts runs one, on the sources, and checks it.
 */
import { spawn } from "node:child_process"
import { fileURLToPath, pathToFileURL } from "node:url"
import * as CuttingProxy from "../test/utils/cuttingProxy.js"
import * as EmbeddedServer from "../test/utils/EmbeddedServer.js"
import * as PgCluster from "../test/utils/PgCluster.js"
import * as TcpProxy from "../test/utils/tcpProxy.js"

const ROOT = fileURLToPath(new URL("..", import.meta.url))
const TOKEN = "failover-bench-token"
const WRITERS = 4
// A pause between one writer's creates: enough writes to see every phase, few enough routes to compare every table.
const WRITE_PAUSE_MS = 5
// Longer than any answer may take (a write waits up to queryTimeout, 5 s, and a COMMIT in doubt up to 11 s more).
const REQUEST_MS = 30_000
// The longest a process may take to start, on a loaded machine.
const START_MS = 90_000

export interface Options {
  /** How long the address reaches the standby before it is promoted. */
  readonly standbyMillis: number
  /** How long the writers run before the primary is killed, and after the standby is promoted. */
  readonly beforeMillis: number
  readonly afterMillis: number
  /** Run the hosts on the compiled library (dist/, built by `npm run build`) rather than the sources. */
  readonly compiled: boolean
}

export interface Figures {
  /** Creates answered 201. */
  readonly acknowledged: number
  /** Of those, the ones on the new primary. */
  readonly found: number
  /** Answered 201, and not on the new primary (target 0). */
  readonly lost: number
  /** `Registry-Revision` values answered to more than one create (target 0). */
  readonly reusedRevisions: number
  /** Every answer by status (`error` for a request that got none). */
  readonly statuses: Readonly<Record<string, number>>
  /** Creates refused (503) from the kill on. */
  readonly refused: number
  /** The write gap: from the first refused create's answer to the acknowledgment of the first create sent after it. */
  readonly gapMillis: number
  /** From the new primary accepting writes (its promotion done) to the first create acknowledged after it. */
  readonly recoveryMillis: number
  /** From the promotion to the first create acknowledged after it being served by every process. */
  readonly caughtUpMillis: number
  /** `reset` events the follower was sent (target 0). */
  readonly followerResets: number
  /**
   * After the writes stopped: when the look that found every process serving exactly the stored routes began (0: the
   * first look did), and what still differed.
   */
  readonly convergedMillis: number
  readonly differences: ReadonlyArray<string>
  /** Each registry's `/readyz` body at the end. */
  readonly readiness: ReadonlyArray<{ readonly reachable?: boolean; readonly following?: string }>
}

interface Host {
  readonly origin: string
  readonly stop: () => Promise<void>
}

interface Answer {
  readonly path: string
  readonly status: number | "error"
  readonly sentAt: number
  readonly answeredAt: number
  readonly id?: string
  readonly revision?: string
}

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** `npm start`'s host with `env`, once it says it listens. */
const startHost = (env: Record<string, string>, compiled: boolean) =>
  new Promise<Host>((resolve, reject) => {
    const child = spawn(process.execPath, ["--import", "tsx", "examples/server.ts"], {
      cwd: ROOT,
      env: {
        PATH: process.env.PATH ?? "",
        HOME: process.env.HOME ?? "",
        PORT: "0",
        ...(compiled ? { TSX_TSCONFIG_PATH: "bench/tsconfig.json" } : {}),
        ...env
      },
      stdio: ["ignore", "pipe", "pipe"]
    })
    let output = ""
    const exited = new Promise<void>((done) => child.once("exit", () => done()))
    const stop = () => {
      child.kill("SIGKILL")
      return exited
    }
    const timer = setTimeout(() => reject(new Error(`no "listening on" line:\n${output}`)), START_MS)
    void exited.then(() => reject(new Error(`exited early:\n${output}`)))
    child.stderr.on("data", (chunk) => (output += chunk))
    child.stdout.on("data", (chunk) => {
      output += chunk
      const match = /listening on (http:\/\/127\.0\.0\.1:\d+)/i.exec(output)
      if (match === null) return
      clearTimeout(timer)
      resolve({ origin: match[1]!, stop })
    })
  })

const create = async (origin: string, path: string): Promise<Answer> => {
  const sentAt = Date.now()
  try {
    const response = await fetch(`${origin}/v1/routing`, {
      method: "POST",
      headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" },
      body: JSON.stringify({ method: "GET", path, handler: "echo", middleware: [] }),
      signal: AbortSignal.timeout(REQUEST_MS)
    })
    const body = await response.json() as { id?: string }
    const revision = response.headers.get("registry-revision") ?? undefined
    return {
      path,
      status: response.status,
      sentAt,
      answeredAt: Date.now(),
      ...(response.status === 201 ? { id: body.id!, revision: revision! } : {})
    }
  } catch {
    return { path, status: "error", sentAt, answeredAt: Date.now() }
  }
}

/** The id of the route `origin`'s router serves at `path` (the demo handler `echo` answers it), if any. */
const served = async (origin: string, path: string) => {
  const response = await fetch(origin + path, { signal: AbortSignal.timeout(REQUEST_MS) }).catch(() => undefined)
  if (response?.status !== 200) {
    await response?.body?.cancel().catch(() => undefined)
    return undefined
  }
  return ((await response.json()) as { route?: { id?: string } }).route?.id
}

/** Runs `f` over `items`, `concurrency` at a time. */
const inTurns = async <A, B>(items: ReadonlyArray<A>, concurrency: number, f: (item: A) => Promise<B>) => {
  const results: Array<B> = []
  let next = 0
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (next < items.length) {
      const i = next++
      results[i] = await f(items[i]!)
    }
  }))
  return results
}

/** Where the processes' routers differ from the stored rows: each row must be served, by its own route. */
const differencesOf = async (origins: ReadonlyArray<string>, rows: ReadonlyArray<{ id: string; path: string }>) => {
  const checks = origins.flatMap((origin) => rows.map((row) => ({ origin, row })))
  const found = await inTurns(checks, 32, async ({ origin, row }) => {
    const id = await served(origin, row.path)
    return id === row.id ? undefined : `${origin} serves ${id ?? "nothing"} at ${row.path}, stored ${row.id}`
  })
  return found.filter((difference) => difference !== undefined)
}

export const failover = async (options: Options): Promise<Figures> => {
  const cluster = await PgCluster.make()
  const closing: Array<() => Promise<unknown>> = [cluster.close]
  try {
    const address = await TcpProxy.start(cluster.primary.url)
    closing.push(address.close)
    const env = { DATABASE_URL: address.url, ROUTING_ADMIN_TOKENS: TOKEN }
    const registries = await Promise.all([startHost(env, options.compiled), startHost(env, options.compiled)])
    closing.push(...registries.map((host) => host.stop))
    const streams = await CuttingProxy.start(Number(new URL(registries[0]!.origin).port))
    closing.push(streams.close)
    const follower = await startHost({ FOLLOW_URL: streams.origin, FOLLOW_TOKEN: TOKEN }, options.compiled)
    closing.push(follower.stop)
    const processes = [...registries.map((host) => host.origin), follower.origin]

    const answers: Array<Answer> = []
    let writing = true
    let counter = 0
    const writers = Array.from({ length: WRITERS }, async (_, w) => {
      while (writing) {
        answers.push(await create(registries[w % registries.length]!.origin, `/fo/${counter++}`))
        await pause(WRITE_PAUSE_MS)
      }
    })

    await pause(options.beforeMillis)
    const killedAt = Date.now()
    await EmbeddedServer.stop(cluster.primary.control, "immediate")
    address.point(cluster.standby.url)
    await pause(options.standbyMillis)
    await EmbeddedServer.promote(cluster.standby.control)
    const promotedAt = Date.now()
    // The first create acknowledged after the promotion, once there is one, and when every process serves it.
    const caughtUp = (async () => {
      for (;;) {
        const first = answers.find((answer) => answer.status === 201 && answer.answeredAt >= promotedAt)
        if (first !== undefined) {
          for (;;) {
            const ids = await Promise.all(processes.map((origin) => served(origin, first.path)))
            if (ids.every((id) => id === first.id)) return Date.now() - promotedAt
            await pause(10)
          }
        }
        await pause(10)
      }
    })()
    await pause(options.afterMillis)
    writing = false
    await Promise.all(writers)
    const caughtUpMillis = await caughtUp

    const rows = (await PgCluster.query(cluster.standby.url, (client) =>
      client.query<{ id: string; path: string }>("SELECT id::text, path FROM route_registry_routes"))).rows
    const stored = new Set(rows.map((row) =>
      row.id
    ))
    const acknowledged = answers.filter((answer) =>
      answer.status === 201
    )
    const revisions = new Map<string, number>()
    for (const { revision } of acknowledged) revisions.set(revision!, (revisions.get(revision!) ?? 0) + 1)
    const statuses: Record<string, number> = {}
    for (const { status } of answers) statuses[status] = (statuses[status] ?? 0) + 1
    const refusals = answers.filter((answer) => answer.status !== 201 && answer.answeredAt >= killedAt)
    const firstRefusal = Math.min(...refusals.map((answer) => answer.answeredAt))
    const resumed = acknowledged.filter((answer) => answer.sentAt > firstRefusal)
    const recovered = acknowledged.filter((answer) => answer.answeredAt >= promotedAt)

    const stoppedAt = Date.now()
    let differences: ReadonlyArray<string> = []
    let lookedAt = stoppedAt
    for (;;) {
      differences = await differencesOf(processes, rows)
      if (differences.length === 0 || Date.now() - stoppedAt > 20_000) break
      await pause(250)
      lookedAt = Date.now()
    }
    const convergedMillis = lookedAt - stoppedAt
    const readiness = await Promise.all(
      registries.map((host) => fetch(`${host.origin}/readyz`).then((response) => response.json()))
    )
    return {
      acknowledged: acknowledged.length,
      found: acknowledged.filter((answer) => stored.has(answer.id!)).length,
      lost: acknowledged.filter((answer) => !stored.has(answer.id!)).length,
      reusedRevisions: [...revisions.values()].filter((count) => count > 1).length,
      statuses,
      refused: refusals.filter((answer) => answer.status === 503).length,
      gapMillis: resumed.length === 0 ? Number.NaN : Math.min(...resumed.map((a) => a.answeredAt)) - firstRefusal,
      recoveryMillis: recovered.length === 0
        ? Number.NaN
        : Math.min(...recovered.map((a) => a.answeredAt)) - promotedAt,
      caughtUpMillis,
      followerResets: streams.resets(),
      convergedMillis,
      differences,
      readiness
    }
  } finally {
    for (const close of closing.reverse()) await close().catch(() => undefined)
  }
}

/** One run's figures, as a line. */
export const describe = (figures: Figures) =>
  `${figures.acknowledged} acknowledged, ${figures.found} found on the new primary, ${figures.lost} lost, ` +
  `${figures.reusedRevisions} revisions answered twice, ${figures.refused} refused (503) during the gap, statuses ` +
  `${JSON.stringify(figures.statuses)}; gap ${figures.gapMillis} ms, first write ${figures.recoveryMillis} ms and ` +
  `every table ${figures.caughtUpMillis} ms after the promotion; follower resets ${figures.followerResets}; ` +
  `every table equal to the rows ${figures.convergedMillis} ms after the writes stopped ` +
  `(${figures.differences.length} differences)`

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const at = process.argv.indexOf("--runs")
  const runs = at === -1 ? 5 : Number(process.argv[at + 1])
  const all: Array<Figures> = []
  for (let run = 1; run <= runs; run++) {
    const figures = await failover({ standbyMillis: 2_500, beforeMillis: 3_000, afterMillis: 6_000, compiled: true })
    all.push(figures)
    console.log(`run ${run}: ${describe(figures)}`)
  }
  const median = (pick: (figures: Figures) => number) => {
    const sorted = all.map(pick).sort((a, b) => a - b)
    return sorted[Math.floor(sorted.length / 2)]
  }
  const sum = (pick: (figures: Figures) => number) => all.reduce((total, figures) => total + pick(figures), 0)
  console.log(
    `${runs} runs: ${sum((f) => f.acknowledged)} acknowledged, ${sum((f) => f.found)} found on the new primary, ` +
      `${sum((f) => f.lost)} lost, ${sum((f) => f.reusedRevisions)} revisions answered twice, ` +
      `${sum((f) => f.refused)} refused (503), ${sum((f) => f.statuses["500"] ?? 0)} answered 500; median gap ` +
      `${median((f) => f.gapMillis)} ms, median first write after the promotion ${
        median((f) => f.recoveryMillis)
      } ms ` +
      `(max ${Math.max(...all.map((f) => f.recoveryMillis))} ms), median every table ${
        median((f) => f.caughtUpMillis)
      } ms; follower resets ${sum((f) => f.followerResets)}`
  )
  const clean = all.every((f) => f.lost === 0 && f.reusedRevisions === 0 && f.differences.length === 0)
  process.exit(clean ? 0 : 1)
}
