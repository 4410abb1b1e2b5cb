/**
 * One host process of the propagation benchmark (bench/propagation.ts): the Postgres store and a live route table on
 * the database in DATABASE_URL, driven over IPC. It makes the changes it is told to make and says when each was
 * acknowledged; it watches its own table for the changes it is told to expect and says when each became routable.
 * Times are wall-clock milliseconds with a fraction (`performance.timeOrigin + performance.now()`), comparable
 * between processes of one machine.
 */
import * as PgClient from "@effect/sql-pg/PgClient"
import { Effect, Layer, ManagedRuntime, Redacted } from "effect"
import * as PgRouteRepository from "route-registry/PgRouteRepository"
import * as Route from "route-registry/Route"
import * as RouteRepository from "route-registry/RouteRepository"
import * as RouteTable from "route-registry/RouteTable"

/** What the orchestrator sends. A change names the route by its path; `handler` is what it sets. */
export type Command =
  | { readonly type: "create"; readonly key: number; readonly path: string; readonly handler: string }
  | { readonly type: "update"; readonly key: number; readonly path: string; readonly handler: string }
  | { readonly type: "delete"; readonly key: number; readonly path: string }
  | { readonly type: "expect"; readonly key: number; readonly path: string; readonly handler: string | null }
  | { readonly type: "stop" }

/** What a worker answers: ready once its table is loaded, then acknowledgements and sightings. */
export type Report =
  | { readonly type: "ready" }
  | { readonly type: "acked"; readonly key: number; readonly at: number; readonly ok: boolean }
  | { readonly type: "seen"; readonly key: number; readonly at: number }

const now = () => performance.timeOrigin + performance.now()
const send = (report: Report) => process.send!(report)

const notifications = process.env.NOTIFICATIONS !== "0"
const client = PgClient.layer({ url: Redacted.make(process.env.DATABASE_URL!), maxConnections: 10 })
const store = PgRouteRepository.layer({ notifications }).pipe(Layer.provide(client))
const runtime = ManagedRuntime.make(RouteTable.layer.pipe(Layer.provide(store)))
const [repository, table] = await runtime.runPromise(
  Effect.all([RouteRepository.RouteRepository, RouteTable.RouteTable])
)

/** The path's request: its one parameter given a value. */
const target = (path: string) => path.replace(/:\w+/, "x")
const handlerAt = (path: string): string | null => {
  const found = RouteTable.lookup(table, "GET", target(path))
  return found._tag === "Found" ? found.route.handler : null
}

// The changes this process waits to see. Its table is checked every millisecond while any is pending: a sighting is
// late by at most that much.
const expected = new Map<number, { readonly path: string; readonly handler: string | null }>()
setInterval(() => {
  for (const [key, { handler, path }] of expected) {
    if (handlerAt(path) !== handler) continue
    expected.delete(key)
    send({ type: "seen", key, at: now() })
  }
}, 1)

const idOf = (path: string) => {
  const found = RouteTable.lookup(table, "GET", target(path))
  return found._tag === "Found" ? found.route.id : undefined
}

const change = (command: Exclude<Command, { type: "expect" | "stop" }>): Effect.Effect<unknown, unknown> => {
  switch (command.type) {
    case "create":
      return Effect.flatMap(
        Route.decodeCreate({ method: "GET", path: command.path, handler: command.handler }),
        repository.create
      )
    case "update": {
      const id = idOf(command.path)
      return id === undefined
        ? Effect.fail("unknown")
        : repository.update(id, { handler: command.handler as Route.HandlerName })
    }
    case "delete": {
      const id = idOf(command.path)
      return id === undefined ? Effect.fail("unknown") : repository.remove(id)
    }
  }
}

process.on("message", (command: Command) => {
  if (command.type === "stop") {
    void runtime.dispose().then(() => process.exit(0))
  } else if (command.type === "expect") {
    expected.set(command.key, { path: command.path, handler: command.handler })
  } else {
    void runtime.runPromiseExit(change(command)).then((exit) =>
      send({ type: "acked", key: command.key, at: now(), ok: exit._tag === "Success" })
    )
  }
})
send({ type: "ready" })
