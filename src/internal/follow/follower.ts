/**
 * A follower: a route table kept equal to another registry's by reading its change stream, with no store of its own.
 * It applies the stream's events in order as they arrive, keeps a memory index of the same routes for listings (the
 * memory store's), records each change it applies in its own replay ring (so its own change stream serves them onward: a
 * relay), and reconnects by itself, resuming from the last event it applied.
 *
 * Each event's id is the registry's cursor (internal/table/replayRing.ts): the follower takes each route's revision from
 * it (its ETags are the registry's), and its ring records each change under the registry's store and revision, so
 * a relay passes the registry's cursors on unchanged and a follower moves between relays and the registry freely.
 *
 * After a `reset` (or on a stream opened without a cursor) the routes of the snapshot are collected while the table
 * keeps routing as it was; at `ready` the table takes them at once, and loses every route the snapshot did not name,
 * so it ends equal to the registry, and the ring begins again at the snapshot's revision. The first snapshot, which
 * nothing routes with until its `ready`, goes into the table as it arrives: the follower holds it once
 * (docs/scaling-out.md, "A follower's memory").
 *
 * @internal
 */
import type { Context } from "effect"
import { Deferred, Duration, Effect, Schedule } from "effect"
import * as RouteRepository from "../../RouteRepository.js"
import * as Memory from "../store/memoryIndex.js"
import * as Apply from "./apply.js"
import * as Client from "./client.js"
import { confirm, isHealthy, logLoss, settle } from "./health.js"
import * as Heartbeat from "./heartbeat.js"
import * as Listing from "./listing.js"
import * as Log from "./log.js"
import type * as Sse from "./sse.js"
import { now, type Settings, type State, unsafeLog } from "./state.js"

type Store = Context.Tag.Service<RouteRepository.RouteRepository>

/**
 * The most characters of an event id the follower keeps as its cursor; an id must also be printable ASCII, since it
 * goes back in the `Last-Event-ID` header. Any other id is a protocol error.
 */
export const MAX_CURSOR_LENGTH = 1024

const ready = (state: State, id: string): string | undefined => {
  const cursor = Apply.cursorOf(id)
  if (cursor === undefined) return Apply.notACursor("a ready", id)
  if (state.snapshot !== undefined) {
    Apply.complete(state, state.snapshot, cursor)
    state.snapshot = undefined
  } else if (state.ring.store() !== cursor.store) {
    state.ring.begin(cursor.store, cursor.revision, Array.from(state.memory.byId.values()))
  } else {
    state.ring.advanced(cursor.revision)
  }
  state.routing = true
  state.source = "registry"
  const at = now(state)
  state.live = true
  state.liveSince = at
  confirm(state, at)
  const outage = state.outage
  if (outage !== undefined && !outage.back) {
    outage.back = true
    const away = Duration.format(Duration.millis(at - outage.since))
    unsafeLog(state, Effect.logInfo(`route table: following the registry again, after ${away}`))
  }
  Deferred.unsafeDone(state.started, Effect.void)
  return undefined
}

// An id goes back to the registry as `Last-Event-ID`: one `node:http` would refuse to send (a control character, one
// above U+00FF) or of unbounded length is not a cursor.
const PRINTABLE_ASCII = /^[\x21-\x7e]*$/

const checkId = (id: string): string | undefined =>
  id.length <= MAX_CURSOR_LENGTH && PRINTABLE_ASCII.test(id)
    ? undefined
    : `an event id that is not a cursor (printable ASCII, at most ${MAX_CURSOR_LENGTH} characters): ${
      JSON.stringify(id.slice(0, 100))
    }`

// A snapshot that takes too long is dropped, like one too large: a stream never holds a follower in one forever.
const checkSnapshotTime = (state: State, at: number): string | undefined => {
  const { snapshotTimeoutMillis } = state.settings
  return state.snapshot !== undefined && at - state.snapshot.since > snapshotTimeoutMillis
    ? `a snapshot that took more than ${snapshotTimeoutMillis} ms (snapshotTimeout)`
    : undefined
}

/** What a connection does with each event and heartbeat, in the order they arrive. */
export const sink = (state: State): Sse.Sink => ({
  event: (event) => {
    const at = now(state)
    const invalid = (event.id === "" ? undefined : checkId(event.id)) ?? checkSnapshotTime(state, at)
    if (invalid !== undefined) return invalid
    let failure: string | undefined
    switch (event.type) {
      case "upsert":
        failure = Apply.upsert(state, event.data, event.id)
        break
      case "delete":
        failure = Apply.remove(state, event.data, event.id)
        break
      case "batch":
        failure = Apply.batch(state, event.data, event.id)
        break
      case "ready":
        failure = ready(state, event.id)
        break
      case "reset":
        Apply.startSnapshot(state)
        state.live = false
        break
      case "expired":
        Listing.expired(state)
        break
        // Other types are for later versions of the stream.
    }
    if (failure !== undefined) return failure
    if (event.id !== "") state.cursor = event.id
    confirm(state, at)
    settle(state, at)
    if (state.live && event.id !== "") state.applied()
    if (state.routing && state.snapshot === undefined && event.id !== "") state.persist()
    return undefined
  },
  comment: (text) => {
    const at = now(state)
    const staleness = Heartbeat.staleness(text)
    state.upstreamConfirmedAt = staleness === undefined ? undefined : at - staleness
    confirm(state, at)
    settle(state, at)
    return checkSnapshotTime(state, at)
  }
})

// A new connection: the stream starts with a snapshot when it is opened without a cursor (and with `reset` when the
// registry cannot resume from it); what a cut connection had collected of a snapshot is dropped. The process followed
// counts as current until a heartbeat says otherwise (one comes before `ready`, from this library's registries).
const opened = (state: State) => (stream: string | undefined) => {
  state.stream = stream
  Listing.opened(state, stream)
  if (state.cursor === undefined) Apply.startSnapshot(state)
  else state.snapshot = undefined
  state.live = false
  state.liveSince = undefined
  state.upstreamConfirmedAt = undefined
  state.confirmed.error = undefined
}

// --- reading the store ---------------------------------------------------------------------------------------------

const readOnly = (operation: string) => Effect.fail(new RouteRepository.ReadOnlyStore({ operation }, true))

/**
 * The follower's store: reads from its memory index, writes refused with `ReadOnlyStore`.
 */
export const store = (state: State): Store =>
  RouteRepository.RouteRepository.of({
    create: () => readOnly("create"),
    update: () => readOnly("update"),
    remove: () => readOnly("remove"),
    findById: (id) =>
      Effect.suspend(() => {
        const route = state.memory.byId.get(id)
        return route === undefined
          ? Effect.fail(new RouteRepository.RouteNotFound({ id }, true))
          : Effect.succeed(route)
      }),
    list: (query) => Effect.sync(() => Memory.listMemory(state.memory, query))
  })

/**
 * The follower's change log, the registry's it follows (`log`): after a revision, read through a catch-up stream from
 * the process followed, so a relay resumes a cursor older than its ring as a registry does from its store's log.
 */
export const changeLog = (state: State, log: Log.Target): Context.Tag.Service<RouteRepository.ChangeLog> => {
  const upstream: Log.Upstream = { history: log, changes: { ...state.settings.target, name: undefined } }
  return {
    history: (query) => Log.history(log, query),
    logAfter: (revision, limit) => Log.after(upstream, state.ring.store(), revision, limit)
  }
}

/** The follower's store read at once, from its memory index. */
export const memoryRead = (state: State): Context.Tag.Service<RouteRepository.MemoryRead> => ({
  unsafeFindById: (id) => state.memory.byId.get(id)
})

// --- following -----------------------------------------------------------------------------------------------------

/**
 * The waits between connections: an exponential backoff from `retryInitialMillis`, capped at `retryMaxMillis`, with
 * "full jitter" (each wait a uniform draw from zero to the bound), so that followers cut off together do not come back
 * together.
 */
export const backoff = (
  settings: Pick<Settings, "retryInitialMillis" | "retryMaxMillis">
): Schedule.Schedule<unknown> =>
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

const CURSOR_FIELD = /^(?:since|last-event-id)$/i

/** A `400` that names the cursor (`since` or `Last-Event-ID`): the registry will never resume from it. */
export const refusesCursor = (lost: Client.Lost): boolean =>
  lost.status === 400 &&
  (lost.fields?.some((field) => CURSOR_FIELD.test(field)) === true || /last-event-id/i.test(lost.reason))

// One connection, to its end: its loss, or the defect that ended it, taken for a loss and logged. Opened unlisted,
// the next one tries the name again.
const connection = (state: State, sinkOf: Sse.Sink): Effect.Effect<Client.Lost> => {
  return Effect.flip(Client.connect(Listing.target(state), state.cursor, opened(state), sinkOf)).pipe(
    Effect.ensuring(Effect.sync(() => (state.unlisted = false))),
    Effect.catchAllDefect((defect) =>
      Effect.as(
        Effect.logError("route table: a connection to the registry failed unexpectedly; reconnecting", defect),
        new Client.Lost({ reason: `an unexpected error: ${String(defect)}` })
      )
    )
  )
}

// What a lost connection leaves: the table no longer live, and a cursor the registry refuses dropped.
const lose = (state: State, lost: Client.Lost): Effect.Effect<void> => {
  const at = now(state)
  settle(state, at)
  state.live = false
  state.liveSince = undefined
  state.confirmed.error = lost.reason
  if (lost.protocol === true) state.broken = true
  if (state.cursor === undefined || !refusesCursor(lost)) return Effect.void
  state.cursor = undefined
  return Effect.logWarning(
    `route table: the registry refused the cursor to resume from (${lost.reason}); starting again from every route`
  )
}

/**
 * Follows the registry until interrupted. Before the first `ready`, a refusal that another try will not change ends
 * it, failing `state.started`; after it, every loss is retried, for as long as the follower lives.
 */
export const follow = (state: State): Effect.Effect<void> =>
  Effect.gen(function*() {
    const sinkOf = sink(state)
    const retry = yield* Schedule.driver(backoff(state.settings))
    while (true) {
      const cursor = state.cursor
      const wasUnlisted = state.unlisted
      const lost = yield* connection(state, sinkOf)
      if (!wasUnlisted && Listing.unlist(state, lost)) continue
      // A stream that stayed healthy: the backoff starts again from its first wait.
      if (isHealthy(state, now(state))) yield* retry.reset
      yield* lose(state, lost)
      const started = yield* Deferred.isDone(state.started)
      if (!started && isFatal(lost) && !(cursor !== undefined && state.cursor === undefined)) {
        yield* Deferred.fail(state.started, lost)
        return
      }
      if (started) yield* logLoss(state, lost)
      yield* Effect.orDie(retry.next(undefined)) // the backoff never ends
    }
  })
