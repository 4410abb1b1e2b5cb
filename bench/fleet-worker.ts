/**
 * One follower process of bench/fleet.ts: it holds many follower tables (`RouteFollower.layer`, the compiled
 * library) of one registry or relay, each with its own stream, and records when each change is applied in each table:
 * every table's replay ring tells its listeners of a change synchronously, right after the table took it, so the
 * time a listener sees is the time the change became routable there. Times are wall-clock milliseconds with a
 * fraction (`performance.timeOrigin + performance.now()`), comparable between the processes of one machine.
 *
 * Nothing passes between the processes while changes are made: after a run the benchmark sends each change's
 * acknowledgement time, and the process answers with the latency of every change in every table.
 */
import { Context, Effect, Exit, Layer, Redacted, Scope } from "effect"
import { monitorEventLoopDelay } from "node:perf_hooks"
import type * as Route from "route-registry/Route"
import * as RouteFollower from "route-registry/RouteFollower"
import * as RouteTable from "route-registry/RouteTable"
import { digest } from "./plan.js"

/** A change as the followers should apply it: the handler a create or update left, or the id a delete removed. */
export type Expected =
  | { readonly type: "upsert"; readonly handler: string; readonly ackedAt: number }
  | { readonly type: "delete"; readonly id: string; readonly ackedAt: number }

export type Command =
  | {
    readonly type: "follow"
    readonly url: string
    readonly token: string
    readonly tables: number
    /** Names the tables `<name>-<n>` in the registry's fleet; each its own default (host and process id) without. */
    readonly name?: string
  }
  /** Forget what was seen, and measure this process from now. */
  | { readonly type: "start" }
  | { readonly type: "collect"; readonly expected: ReadonlyArray<Expected> }
  /** How many tables hold the registry's revision `revision` (or later), and how many resets they took in all. */
  | { readonly type: "at"; readonly revision: number }
  | { readonly type: "stop" }

export type Report =
  | { readonly type: "ready" }
  | { readonly type: "following"; readonly millis: number }
  | { readonly type: "started" }
  | { readonly type: "at"; readonly current: number; readonly resets: number }
  | {
    readonly type: "collected"
    /** One latency (ms, from the acknowledgement to applied; 0 when applied before it) per change and table. */
    readonly latencies: Float64Array
    /** Changes some table never applied. */
    readonly missing: number
    /** Changes a table applied before the writer had the acknowledgement (counted as 0). */
    readonly early: number
    /** Each table's routes (id and handler), hashed: how many tables hold each. */
    readonly digests: Record<string, number>
    /** Tables not connected to their stream at the end. */
    readonly unreachable: number
    /** This process's CPU time since `start`, ms, and its event loop's delay p99 and max, ms. */
    readonly cpuMillis: number
    readonly loopDelay: { readonly p99: number; readonly max: number }
  }

const now = () => performance.timeOrigin + performance.now()
const send = (report: Report) => process.send!(report)

interface Follower {
  readonly table: RouteTable.Table<Route.StoredRoute>
  readonly status: () => RouteTable.Status
  /** When each handler, and each deletion (by id), was applied in this table. */
  readonly upserts: Map<string, number>
  readonly deletes: Map<string, number>
  readonly ring: RouteTable.ReplayRing["Type"]
}

// Snapshots taken after the first (the ring begins again with each): resets.
let resets = 0

const scope = Effect.runSync(Scope.make())
const followers: Array<Follower> = []

// Tables are built this many at a time, so that a thousand snapshots are not asked for in the same instant.
const CONCURRENCY = 50

const followOne = (url: string, token: string, name: string | undefined) =>
  Effect.map(
    Layer.buildWithScope(RouteFollower.layer({ url, token: Redacted.make(token), name }), scope),
    (context): Follower => {
      const follower: Follower = {
        table: Context.get(context, RouteTable.RouteTable),
        status: Context.get(context, RouteTable.TableStatus).unsafeGet,
        upserts: new Map(),
        deletes: new Map(),
        ring: Context.get(context, RouteTable.ReplayRing)
      }
      const listen = (change: Parameters<Parameters<typeof follower.ring.subscribe>[0]>[0]) => {
        if (change === undefined) {
          // A new snapshot: a reset. The ring dropped this listener; it listens again.
          resets++
          follower.ring.subscribe(listen)
        } else if (change._tag === "Upsert") {
          if (!follower.upserts.has(change.route.handler)) follower.upserts.set(change.route.handler, now())
        } else if (!follower.deletes.has(change.id)) {
          follower.deletes.set(change.id, now())
        }
      }
      follower.ring.subscribe(listen)
      return follower
    }
  )

const follow = async (url: string, token: string, tables: number, name: string | undefined) => {
  const started = now()
  const made = await Effect.runPromise(
    Effect.forEach(
      Array.from({ length: tables }),
      (_, i) => followOne(url, token, name === undefined ? undefined : `${name}-${i}`),
      { concurrency: CONCURRENCY }
    )
  )
  followers.push(...made)
  send({ type: "following", millis: now() - started })
}

let loop = monitorEventLoopDelay({ resolution: 5 })
let cpu = process.cpuUsage()

const start = () => {
  for (const follower of followers) {
    follower.upserts.clear()
    follower.deletes.clear()
  }
  loop.disable()
  loop = monitorEventLoopDelay({ resolution: 5 })
  loop.enable()
  cpu = process.cpuUsage()
  send({ type: "started" })
}

const collect = (expected: ReadonlyArray<Expected>) => {
  const used = process.cpuUsage(cpu)
  loop.disable()
  const latencies = new Float64Array(expected.length * followers.length)
  let count = 0
  let missing = 0
  let early = 0
  const digests: Record<string, number> = {}
  for (const follower of followers) {
    for (const change of expected) {
      const seen = change.type === "upsert" ? follower.upserts.get(change.handler) : follower.deletes.get(change.id)
      if (seen === undefined) {
        missing++
        continue
      }
      if (seen < change.ackedAt) early++
      latencies[count++] = Math.max(0, seen - change.ackedAt)
    }
    const key = digest(follower.table)
    digests[key] = (digests[key] ?? 0) + 1
  }
  send({
    type: "collected",
    latencies: latencies.subarray(0, count),
    missing,
    early,
    digests,
    unreachable: followers.filter((follower) => !follower.status().reachable).length,
    cpuMillis: (used.user + used.system) / 1e3,
    loopDelay: { p99: loop.percentile(99) / 1e6, max: loop.max / 1e6 }
  })
}

process.on("message", (command: Command) => {
  switch (command.type) {
    case "follow":
      void follow(command.url, command.token, command.tables, command.name)
      break
    case "start":
      start()
      break
    case "collect":
      collect(command.expected)
      break
    case "at":
      send({
        type: "at",
        current: followers.filter((follower) => follower.ring.revision() >= command.revision).length,
        resets
      })
      break
    case "stop":
      void Effect.runPromise(Scope.close(scope, Exit.void)).then(() => process.exit(0))
  }
})
send({ type: "ready" })
