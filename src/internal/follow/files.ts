/**
 * A follower's files (docs/resilience.md): the last-known-good snapshot it starts from and keeps writing, and the bootstrap
 * file it routes from on a first start while its registry cannot be reached.
 *
 * @internal
 */
import type { Scope } from "effect"
import { Deferred, Effect, Either } from "effect"
import type * as Route from "../../Route.js"
import * as Memory from "../store/memoryIndex.js"
import * as BootstrapFile from "../table/bootstrapFile.js"
import * as ReplayRing from "../table/replayRing.js"
import * as RouteTree from "../table/routeTree.js"
import * as SnapshotFile from "../table/snapshotFile.js"
import * as Health from "./health.js"
import type * as FollowState from "./state.js"

// Routes taken into a table nobody routes with yet, so no request sees it in part.
const placeAll = (
  state: FollowState.State,
  routes: Iterable<Route.StoredRoute>,
  parsed?: (i: number) => unknown
): void => {
  let i = 0
  for (const route of routes) {
    const path = parsed?.(i++)
    if (path === undefined) RouteTree.insert(state.tree, route)
    else RouteTree.insertParsed(state.tree, route, path as never)
    Memory.put(state.memory, route)
  }
}

/**
 * Routes from a last-known-good snapshot at once: the table as of its revision, confirmed current at its
 * `confirmedAt`, resumed from its cursor (the registry sends only the changes since, or a `reset` when it cannot).
 */
export const fromSnapshot = (state: FollowState.State, snapshot: SnapshotFile.Snapshot): void => {
  const { entries, header } = snapshot
  placeAll(state, entries.map((entry) => entry.route), (i) => entries[i]!.parsed)
  state.ring.begin(header.store, header.revision, entries.map((entry) => entry.route))
  state.cursor = ReplayRing.cursorOf(header.store, header.revision)
  state.routing = true
  state.source = "snapshot"
  state.confirmed.at = Date.parse(header.confirmedAt)
  Deferred.unsafeDone(state.started, Effect.void)
}

/**
 * Routes from a bootstrap file, until the registry's first `ready` replaces it whole; `false`, changing nothing, when
 * the registry's first snapshot is already arriving (its routes are going into the table: never a mix of both).
 */
export const fromBootstrap = (state: FollowState.State, routes: ReadonlyArray<Route.StoredRoute>): boolean => {
  if (state.routing || state.snapshot !== undefined) return false
  placeAll(state, routes)
  state.routing = true
  state.source = "bootstrap"
  Deferred.unsafeDone(state.started, Effect.void)
  return true
}

/** The table to write as a snapshot now, or `undefined` while it is not one of the registry's complete tables. */
export const capture = (state: FollowState.State): SnapshotFile.Content | undefined => {
  const store = state.ring.store()
  if (!state.routing || state.snapshot !== undefined || state.source === "bootstrap" || store === undefined) {
    return undefined
  }
  return {
    kind: "follower",
    store,
    revision: state.ring.revision(),
    confirmedAt: Health.status(state).confirmedAt ?? new Date(state.confirmed.at),
    routes: Array.from(state.memory.byId.values())
  }
}

/** Keeps each route's line as the registry sent it, for the snapshot writes: before the first route arrives. */
export const keepLines = (state: FollowState.State): void => {
  state.keepLine = SnapshotFile.keepLine
}

/** Routes from the snapshot at `file` when it is valid; otherwise names it in a warning and starts without it. */
export const startFromSnapshot = (state: FollowState.State, file: string): Effect.Effect<void> =>
  Effect.flatMap(SnapshotFile.read(file, "follower"), (read) => {
    if (Either.isLeft(read)) return SnapshotFile.refused(file, read.left)
    const { header } = read.right
    fromSnapshot(state, read.right)
    return Effect.logInfo(
      `route table: routing from the snapshot ${file} (${header.routes} routes, revision ${header.revision}, ` +
        `confirmed current at ${header.confirmedAt}) until the registry answers`
    )
  })

/** Writes the table to `file` at most once per `SnapshotFile.INTERVAL_MILLIS` while it changes, and at the end. */
export const keepSnapshot = (state: FollowState.State, file: string): Effect.Effect<void, never, Scope.Scope> =>
  Effect.gen(function*() {
    const writer = yield* SnapshotFile.writer(file, () => capture(state))
    state.persist = writer.changed
    // What the follower applied before the writer was there: its first table (a snapshot it started from is on disk).
    if (state.source !== "snapshot") writer.changed()
    yield* Effect.addFinalizer(() => writer.final)
    yield* Effect.forkScoped(writer.run)
  })

/**
 * Routes from the bootstrap file at `file`, or says why it cannot; when the registry's first routes began to arrive
 * meanwhile, waits for them instead.
 */
export const startFromBootstrap = (state: FollowState.State, file: string): Effect.Effect<void, string> =>
  Effect.flatMap(BootstrapFile.read(file, state.clock.unsafeCurrentTimeMillis()), (read) => {
    if (Either.isLeft(read)) return Effect.fail(`the bootstrap file ${file}: ${read.left}`)
    if (!fromBootstrap(state, read.right)) {
      return Effect.mapError(Deferred.await(state.started), (lost) => lost.reason)
    }
    return Effect.logWarning(
      `route table: the registry did not answer in time; routing from the bootstrap file ${file} ` +
        `(${read.right.length} routes) until it does`
    )
  })
