/**
 * One host process of the propagation benchmark (bench/propagation.ts): the Postgres store and a live route table on
 * the database in DATABASE_URL. It receives the whole plan of changes before the clock starts, makes its own share
 * at their times, and watches its table for the others' — no message passes between processes while it runs. Times
 * are wall-clock milliseconds with a fraction (`performance.timeOrigin + performance.now()`), comparable between
 * processes of one machine.
 */
import * as PgClient from "@effect/sql-pg/PgClient"
import { Effect, Layer, ManagedRuntime, Redacted } from "effect"
import { monitorEventLoopDelay } from "node:perf_hooks"
import * as PgRouteRepository from "route-registry/PgRouteRepository"
import * as Route from "route-registry/Route"
import * as RouteRepository from "route-registry/RouteRepository"
import * as RouteTable from "route-registry/RouteTable"
import type { Change } from "./plan.js"

export type Command =
  | { readonly type: "run"; readonly index: number; readonly start: number; readonly plan: ReadonlyArray<Change> }
  | { readonly type: "stop" }

/** When each of its own changes was acknowledged, and when each of the others' became routable here. */
export type Report =
  | { readonly type: "ready" }
  | {
    readonly type: "done"
    readonly acked: Record<number, number>
    readonly failed: ReadonlyArray<number>
    readonly seen: Record<number, number>
    /** The p99 and the longest delay of this process's event loop during the run, in ms. */
    readonly loopDelay: { readonly p99: number; readonly max: number }
  }

const now = () => performance.timeOrigin + performance.now()
const send = (report: Report) => process.send!(report)

const notifications = process.env.NOTIFICATIONS !== "0"
const client = PgClient.layer({ url: Redacted.make(process.env.DATABASE_URL!), maxConnections: 10 })
const store = PgRouteRepository.layer({ notifications }).pipe(Layer.provide(client))
const runtime = ManagedRuntime.make(RouteTable.layer.pipe(Layer.provide(store)))
const [repository, table] = await runtime.runPromise(
  Effect.all([RouteRepository.RouteRepository, RouteTable.RouteTable])
)

/** The route at a path: its one parameter given a value. */
const routeAt = (path: string) => {
  const found = RouteTable.lookup(table, "GET", path.replace(/:\w+/, "x"))
  return found._tag === "Found" ? found.route : undefined
}

const make = (change: Change): Effect.Effect<unknown, unknown> => {
  if (change.type === "create") {
    return Effect.flatMap(
      Route.decodeCreate({ method: "GET", path: change.path, handler: change.handler }),
      repository.create
    )
  }
  const id = routeAt(change.path)?.id
  if (id === undefined) return Effect.fail("the route is not in this process's table yet")
  return change.type === "delete"
    ? repository.remove(id)
    : repository.update(id, { handler: change.handler as Route.HandlerName })
}

const run = (index: number, start: number, plan: ReadonlyArray<Change>) => {
  const acked: Record<number, number> = {}
  const failed: Array<number> = []
  const seen: Record<number, number> = {}
  const own = plan.filter((change) => change.writer === index)
  const watched = plan.filter((change) => change.writer !== index)
  let made = 0
  const loop = monitorEventLoopDelay({ resolution: 5 })
  loop.enable()
  for (const change of own) {
    setTimeout(() => {
      void runtime.runPromiseExit(make(change)).then((exit) => {
        if (exit._tag === "Success") acked[change.key] = now()
        else failed.push(change.key)
        made++
      })
    }, start + change.at - now())
  }
  // The table is checked every millisecond for the changes already made: a sighting is late by at most that much.
  let next = 0
  const pending = new Set<Change>()
  const check = setInterval(() => {
    const elapsed = now() - start
    while (next < watched.length && watched[next]!.at <= elapsed) pending.add(watched[next++]!)
    for (const change of pending) {
      if ((routeAt(change.path)?.handler ?? null) !== change.handler) continue
      seen[change.key] = now()
      pending.delete(change)
    }
  }, 1)
  const end = plan.length === 0 ? 0 : plan[plan.length - 1]!.at
  const settle = setInterval(() => {
    const elapsed = now() - start
    if (made < own.length || elapsed < end + SETTLE_MILLIS) return
    clearInterval(settle)
    clearInterval(check)
    loop.disable()
    send({ type: "done", acked, failed, seen, loopDelay: { p99: loop.percentile(99) / 1e6, max: loop.max / 1e6 } })
  }, 50)
}

// How long after the last change a process keeps watching for it.
const SETTLE_MILLIS = notifications ? 2_000 : 3_000

process.on("message", (command: Command) => {
  if (command.type === "stop") void runtime.dispose().then(() => process.exit(0))
  else run(command.index, command.start, command.plan)
})
send({ type: "ready" })
