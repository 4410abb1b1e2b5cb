/**
 * A follower: a route table kept equal to another registry's by reading its change stream, with no store of its own.
 * It applies the stream's events in order as they arrive, keeps a memory index of the same routes for listings (the
 * memory store's), records each change it applies in its own history (so its own change stream serves them onward: a
 * relay), and reconnects by itself, resuming from the last event it applied.
 *
 * Each event's id is the registry's cursor (internal/table/history.ts): the follower takes each route's revision from
 * it (its ETags are the registry's), and its history records each change under the registry's store and revision, so
 * a relay passes the registry's cursors on unchanged and a follower moves between relays and the registry freely.
 *
 * After a `reset` (or on a stream opened without a cursor) the routes of the snapshot are collected while the table
 * keeps routing as it was; at `ready` the table takes them at once, and loses every route the snapshot did not name,
 * so it ends equal to the registry, and the history begins again at the snapshot's revision.
 *
 * @internal
 */
import type { Clock, Context } from "effect"
import { Deferred, Duration, Effect, Queue, Schedule } from "effect"
import * as Route from "../../Route.js"
import * as RouteRepository from "../../RouteRepository.js"
import * as Memory from "../store/memoryIndex.js"
import * as History from "../table/history.js"
import type { Status } from "../table/liveTable.js"
import * as RouteTree from "../table/routeTree.js"
import * as Client from "./client.js"
import * as Decode from "./decode.js"
import * as Log from "./log.js"
import type * as Sse from "./sse.js"

type Store = Context.Tag.Service<RouteRepository.RouteRepository>

/** The follower's settings, checked. */
export interface Settings {
  readonly target: Client.Target
  /** The first wait before reconnecting, and the longest: each failure in a row doubles it up to the longest. */
  readonly retryInitialMillis: number
  readonly retryMaxMillis: number
}

/** When the table was last confirmed current, and whether the registry answers. */
interface Confirmed {
  at: number
  reachable: boolean
  error: string | undefined
}

export interface State {
  readonly tree: RouteTree.Tree<Route.StoredRoute>
  readonly memory: Memory.Memory
  readonly history: History.History
  /** The id of the last event applied, to resume from. */
  cursor: string | undefined
  /** While a snapshot is being read: its routes so far, by id, each with its revision. */
  snapshot: Map<string, Revised> | undefined
  /** `ready` arrived on this connection: every event since confirms the table current. */
  live: boolean
  readonly confirmed: Confirmed
  /** Since when the stream is lost, while it is (logged when it ends). */
  awaySince: number | undefined
  /** What to log, logged by a fiber of its own: the sink runs outside any fiber. */
  readonly log: Queue.Queue<Effect.Effect<void>>
  /** Told of the first `ready`. */
  readonly started: Deferred.Deferred<void, Client.Lost>
  /** The clock of the fiber that made the state, read by the sink, which runs outside any fiber. */
  readonly clock: Clock.Clock
}

export const makeState = (history: History.History): Effect.Effect<State> =>
  Effect.map(
    Effect.all([Queue.unbounded<Effect.Effect<void>>(), Deferred.make<void, Client.Lost>(), Effect.clock]),
    ([log, started, clock]) => ({
      tree: new RouteTree.Tree(),
      memory: Memory.emptyMemory(),
      history,
      cursor: undefined,
      snapshot: undefined,
      live: false,
      confirmed: { at: clock.unsafeCurrentTimeMillis(), reachable: false, error: undefined },
      awaySince: undefined,
      log,
      started,
      clock
    })
  )

// --- applying events -----------------------------------------------------------------------------------------------

/** A route of an event, with the revision its cursor gives it. */
interface Revised {
  readonly route: Decode.Decoded
  readonly revision: number
}

const parse = (data: string): unknown => {
  try {
    return JSON.parse(data)
  } catch {
    return undefined
  }
}

// Puts the route into the table at `revision`; the route as placed, or `undefined` when the table holds it already
// or cannot hold it.
const place = (state: State, { revision, route }: Revised): Route.StoredRoute | undefined => {
  if (RouteTree.get(state.tree, route.id)?.revision === revision) return undefined
  const { createdAt, handler, id, method, middleware, path } = route
  const stored = new Route.StoredRoute({ id, method, path, middleware, handler, createdAt, revision }, true)
  try {
    RouteTree.insertParsed(state.tree, stored, route.parsed)
  } catch (error) {
    // A route this process's table cannot hold (a registry on newer rules) is left out, its older version with it.
    unsafeLog(
      state,
      Effect.logError(
        `route table: the route ${route.id} (${route.method} ${route.path}) was skipped: ${String(error)}`
      )
    )
    unplace(state, route.id)
    return undefined
  }
  Memory.put(state.memory, stored)
  return stored
}

const unplace = (state: State, id: string): boolean => {
  if (RouteTree.get(state.tree, id) === undefined) return false
  RouteTree.remove(state.tree, id)
  Memory.drop(state.memory, id)
  return true
}

const put = (state: State, revised: Revised): void => {
  const stored = place(state, revised)
  if (stored !== undefined) state.history.upserted(stored, revised.revision, revised.route.text)
  else if (RouteTree.get(state.tree, revised.route.id) === undefined) {
    state.history.deleted(revised.route.id, revised.revision)
  }
}

const drop = (state: State, id: string, revision: number): void => {
  if (unplace(state, id)) state.history.deleted(id, revision)
}

const unsafeLog = (state: State, log: Effect.Effect<void>): void => {
  Queue.unsafeOffer(state.log, log)
}

// The snapshot is complete: the table takes it whole, in one step no request sees half of, and the history begins
// again with it.
const takeSnapshot = (state: State, snapshot: Map<string, Revised>, at: History.Cursor): void => {
  for (const id of Array.from(RouteTree.ids(state.tree))) if (!snapshot.has(id)) unplace(state, id)
  for (const revised of snapshot.values()) place(state, revised)
  state.history.begin(at.store, at.revision, Array.from(state.memory.byId.values()))
}

// The registry's cursor an event carries: its route's revision (a snapshot's event: the third part).
const cursorOf = (id: string): History.Cursor | undefined => {
  const cursor = History.parse(id)
  return typeof cursor === "object" ? cursor : undefined
}

const notACursor = (type: string, id: string) =>
  `${type} event whose id is not a cursor of this API: ${JSON.stringify(id.slice(0, 200))}`

const upsert = (state: State, data: string, id: string): string | undefined => {
  const cursor = cursorOf(id)
  if (cursor === undefined) return notACursor("an upsert", id)
  const json = parse(data)
  const route = Decode.decodeUpsert(json, data)
  if (route === undefined) {
    const routeId = (json as { id?: unknown } | undefined)?.id
    if (typeof routeId !== "string") return `an upsert that is not a route: ${data.slice(0, 200)}`
    unsafeLog(
      state,
      Effect.logError(`route table: the route ${routeId} was skipped: it is not a route this process can hold`)
    )
    if (state.snapshot === undefined) drop(state, routeId, cursor.revision)
    else state.snapshot.delete(routeId)
    return undefined
  }
  const revised = { route, revision: cursor.routeRevision ?? cursor.revision }
  if (state.snapshot === undefined) put(state, revised)
  else state.snapshot.set(route.id, revised)
  return undefined
}

const remove = (state: State, data: string, eventId: string): string | undefined => {
  const cursor = cursorOf(eventId)
  if (cursor === undefined) return notACursor("a delete", eventId)
  const id = (parse(data) as { id?: unknown } | undefined)?.id
  if (typeof id !== "string") return `a delete that names no id: ${data.slice(0, 200)}`
  if (state.snapshot === undefined) drop(state, id, cursor.revision)
  else state.snapshot.delete(id)
  return undefined
}

const ready = (state: State, id: string): string | undefined => {
  const cursor = cursorOf(id)
  if (cursor === undefined) return notACursor("a ready", id)
  if (state.snapshot !== undefined) {
    takeSnapshot(state, state.snapshot, cursor)
    state.snapshot = undefined
  } else if (state.history.store() !== cursor.store) {
    state.history.begin(cursor.store, cursor.revision, Array.from(state.memory.byId.values()))
  } else {
    state.history.advanced(cursor.revision)
  }
  state.live = true
  if (state.awaySince !== undefined) {
    const away = Duration.format(Duration.millis(state.clock.unsafeCurrentTimeMillis() - state.awaySince))
    state.awaySince = undefined
    unsafeLog(state, Effect.logInfo(`route table: following the registry again, after ${away}`))
  }
  Deferred.unsafeDone(state.started, Effect.void)
  return undefined
}

/** What a connection does with each event and heartbeat, in the order they arrive. */
export const sink = (state: State): Sse.Sink => ({
  event: (event) => {
    let failure: string | undefined
    switch (event.type) {
      case "upsert":
        failure = upsert(state, event.data, event.id)
        break
      case "delete":
        failure = remove(state, event.data, event.id)
        break
      case "ready":
        failure = ready(state, event.id)
        break
      case "reset":
        state.snapshot = new Map()
        state.live = false
        break
        // Other types are for later versions of the stream.
    }
    if (failure !== undefined) return failure
    if (event.id !== "") state.cursor = event.id
    if (state.live) state.confirmed.at = state.clock.unsafeCurrentTimeMillis()
    return undefined
  },
  comment: () => {
    if (state.live) state.confirmed.at = state.clock.unsafeCurrentTimeMillis()
  }
})

// A new connection: the stream starts with a snapshot when it is opened without a cursor (and with `reset` when the
// registry cannot resume from it); what a cut connection had collected of a snapshot is dropped.
const opened = (state: State) => () => {
  state.snapshot = state.cursor === undefined ? new Map() : undefined
  state.live = false
  state.confirmed.reachable = true
  state.confirmed.error = undefined
}

// --- reading the store ---------------------------------------------------------------------------------------------

const readOnly = (operation: string) => Effect.fail(new RouteRepository.ReadOnlyStore({ operation }, true))

/**
 * The follower's store: reads from its memory index, the change log from the registry it follows (`log`), writes
 * and restores refused with `ReadOnlyStore`.
 */
export const store = (state: State, log: Log.Target): Store =>
  RouteRepository.RouteRepository.of({
    readOnly: true,
    history: (query) => Log.history(log, query),
    create: () => readOnly("create"),
    createIdempotent: () => readOnly("create"),
    update: () => readOnly("update"),
    remove: () => readOnly("remove"),
    unsafeFindById: (id) => state.memory.byId.get(id),
    findById: (id) =>
      Effect.suspend(() => {
        const route = state.memory.byId.get(id)
        return route === undefined
          ? Effect.fail(new RouteRepository.RouteNotFound({ id }, true))
          : Effect.succeed(route)
      }),
    list: (query) => Effect.sync(() => Memory.listMemory(state.memory, query))
  })

export const status = (state: State): Status => ({
  following: "stream",
  reachable: state.confirmed.reachable,
  confirmedAt: new Date(state.confirmed.at),
  stalenessMillis: Math.max(0, state.clock.unsafeCurrentTimeMillis() - state.confirmed.at),
  error: state.confirmed.error
})

// --- following -----------------------------------------------------------------------------------------------------

/**
 * The waits between connections: an exponential backoff from `retryInitialMillis`, capped at `retryMaxMillis`, with
 * "full jitter" (each wait a uniform draw from zero to the bound), so that followers cut off together do not come back
 * together.
 */
export const backoff = (settings: Settings): Schedule.Schedule<unknown> =>
  Schedule.exponential(Duration.millis(settings.retryInitialMillis)).pipe(
    Schedule.union(Schedule.spaced(Duration.millis(settings.retryMaxMillis))),
    Schedule.jitteredWith({ min: 0, max: 1 })
  )

/**
 * Refusals that another try will not change, at start-up: the token (401, 403), the URL (404, 400), the method (405).
 * A registry that is down, overloaded or restarting (5xx, 408, 429) or unreachable is tried again.
 */
export const isFatal = (lost: Client.Lost): boolean =>
  lost.status !== undefined && lost.status >= 400 && lost.status < 500 && lost.status !== 408 && lost.status !== 429

/**
 * Follows the registry until interrupted. Before the first `ready`, a refusal that another try will not change ends
 * it, failing `state.started`; after it, every loss is retried, for as long as the follower lives.
 */
export const follow = (state: State, settings: Settings): Effect.Effect<void> =>
  Effect.gen(function*() {
    const confirmed = state.confirmed
    const sinkOf = sink(state)
    const retry = yield* Schedule.driver(backoff(settings))
    while (true) {
      const lost = yield* Effect.flip(Client.connect(settings.target, state.cursor, opened(state), sinkOf))
      const wasLive = state.live
      state.live = false
      confirmed.reachable = false
      confirmed.error = lost.reason
      const started = yield* Deferred.isDone(state.started)
      if (!started && isFatal(lost)) {
        yield* Deferred.fail(state.started, lost)
        return
      }
      // A connection that reached `ready` was healthy: the backoff starts again from its first wait.
      if (wasLive) yield* retry.reset
      // An outage is logged when it starts and when it ends (at `ready`), not at every try.
      if (started && state.awaySince === undefined) {
        state.awaySince = state.clock.unsafeCurrentTimeMillis()
        yield* Effect.logWarning(
          `route table: lost the registry's change stream (${lost.reason}); routing on with the table confirmed ` +
            `current at ${new Date(confirmed.at).toISOString()}, reconnecting`
        )
      }
      yield* Effect.orDie(retry.next(undefined)) // the backoff never ends
    }
  })

/** Writes what the follower logs. */
export const logger = (state: State): Effect.Effect<never> => Effect.forever(Effect.flatten(Queue.take(state.log)))
