/**
 * How a follower applies the events of a change stream to its table, its memory index and its replay ring: routes at the
 * registry's revisions, read from each event's cursor; a snapshot collected until its `ready` (the first one straight
 * into the table, which nothing routes with yet), then taken whole.
 *
 * @internal
 */
import { Effect } from "effect"
import * as Route from "../../Route.js"
import * as Memory from "../store/memoryIndex.js"
import { optionalOf } from "../store/rules.js"
import * as ReplayRing from "../table/replayRing.js"
import * as RouteTree from "../table/routeTree.js"
import * as Decode from "./decode.js"
import { now, type Revised, type Snapshot, type State, unsafeLog } from "./state.js"

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
  const { createdAt, description, enabled, handler, id, method, middleware, path, split, tags, when } = route
  const stored = new Route.StoredRoute(
    {
      id,
      method,
      path,
      middleware,
      handler,
      createdAt,
      ...optionalOf({ enabled, split, description, tags, when }),
      revision
    },
    true
  )
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

const put = (state: State, revised: Revised, batch?: ReplayRing.BatchMark): void => {
  const stored = place(state, revised)
  if (stored !== undefined) {
    state.keepLine(stored, revised.route.text)
    state.ring.upserted(stored, revised.revision, revised.route.text, batch)
  } else if (RouteTree.get(state.tree, revised.route.id) === undefined) {
    state.ring.deleted(revised.route.id, revised.revision, batch)
  }
}

const drop = (state: State, id: string, revision: number, batch?: ReplayRing.BatchMark): void => {
  if (unplace(state, id)) state.ring.deleted(id, revision, batch)
}

// Routing from a snapshot file, the follower is sent every route again: the registry could not resume from it.
const SNAPSHOT_REPLACED = Effect.logWarning(
  "route table: the registry cannot resume from the snapshot's revision (a snapshot of another store, or older than " +
    "its change log holds); taking the registry's table in one step"
)

export const startSnapshot = (state: State): void => {
  if (state.source === "snapshot") unsafeLog(state, SNAPSHOT_REPLACED)
  const since = now(state)
  state.snapshot = state.routing ? { held: new Map(), since, bytes: 0 } : { kept: new Set(), since, bytes: 0 }
}

// The snapshot is complete: the table takes it whole, in one step no request sees half of, and the ring begins
// again with it. Losing routes this way (a registry that restarted empty, or was pointed at another database) is worth
// a warning with the counts.
const takeSnapshot = (state: State, snapshot: Map<string, Revised>): void => {
  const before = state.tree.byId.size
  let removed = 0
  for (const id of Array.from(RouteTree.ids(state.tree))) {
    if (!snapshot.has(id) && unplace(state, id)) removed++
  }
  for (const revised of snapshot.values()) place(state, revised)
  const after = state.tree.byId.size
  if (after < before) {
    unsafeLog(
      state,
      Effect.logWarning(
        `route table: the registry sent every route again (a reset) and the table shrank: ${before} routes before, ` +
          `${after} after, ${removed} removed`
      )
    )
  }
}

// Into the snapshot being read, within its bounds (routes, and the bytes of their JSON: a route sent twice counts
// twice); a protocol error past them.
const collect = (state: State, snapshot: Snapshot, revised: Revised, bytes: number): string | undefined => {
  const { maxSnapshotBytes, maxSnapshotRoutes } = state.settings
  const ids = snapshot.held ?? snapshot.kept
  const id = revised.route.id
  if (ids.size >= maxSnapshotRoutes && !ids.has(id)) {
    return `a snapshot of more than ${maxSnapshotRoutes} routes (maxSnapshotRoutes)`
  }
  snapshot.bytes += bytes
  if (snapshot.bytes > maxSnapshotBytes) {
    return `a snapshot of more than ${maxSnapshotBytes} bytes of routes (maxSnapshotBytes)`
  }
  if (snapshot.held !== undefined) {
    snapshot.held.set(id, revised)
  } else {
    place(state, revised)
    snapshot.kept.add(id)
  }
  return undefined
}

// A route the snapshot being read no longer names (deleted while it was sent, or one this process cannot hold).
const uncollect = (state: State, snapshot: Snapshot, id: string): void => {
  if (snapshot.held !== undefined) {
    snapshot.held.delete(id)
  } else {
    unplace(state, id)
    snapshot.kept.delete(id)
  }
}

// The snapshot is complete, as of the cursor of its `ready`.
export const complete = (state: State, snapshot: Snapshot, at: ReplayRing.Cursor): void => {
  if (snapshot.held !== undefined) takeSnapshot(state, snapshot.held)
  else {
    // What a stream cut before the first `ready` had put into the table, and this snapshot does not name.
    for (const id of Array.from(RouteTree.ids(state.tree))) if (!snapshot.kept.has(id)) unplace(state, id)
  }
  state.ring.begin(at.store, at.revision, Array.from(state.memory.byId.values()))
}

// The registry's cursor an event carries: its route's revision (a snapshot's event: the third part).
export const cursorOf = (id: string): ReplayRing.Cursor | undefined => {
  const cursor = ReplayRing.parse(id)
  return typeof cursor === "object" ? cursor : undefined
}

export const notACursor = (type: string, id: string) =>
  `${type} event whose id is not a cursor of this API: ${JSON.stringify(id.slice(0, 200))}`

export const upsert = (state: State, data: string, id: string): string | undefined => {
  const cursor = cursorOf(id)
  if (cursor === undefined) return notACursor("an upsert", id)
  return upsertAt(state, parse(data), data, cursor.revision, cursor.routeRevision ?? cursor.revision)
}

// A route at `revision` (a snapshot's: its own revision; `at`, the event's), within `batch` if any.
const upsertAt = (
  state: State,
  json: unknown,
  data: string,
  at: number,
  revision: number,
  batch?: ReplayRing.BatchMark
): string | undefined => {
  const route = Decode.decodeUpsert(json, data)
  if (route === undefined) {
    const routeId = (json as { id?: unknown } | undefined)?.id
    if (typeof routeId !== "string") return `an upsert that is not a route: ${data.slice(0, 200)}`
    unsafeLog(
      state,
      Effect.logError(`route table: the route ${routeId} was skipped: it is not a route this process can hold`)
    )
    if (state.snapshot === undefined) drop(state, routeId, at, batch)
    else uncollect(state, state.snapshot, routeId)
    return undefined
  }
  const revised = { route, revision }
  if (state.snapshot !== undefined) return collect(state, state.snapshot, revised, Buffer.byteLength(data))
  put(state, revised, batch)
  return undefined
}

export const remove = (state: State, data: string, eventId: string): string | undefined => {
  const cursor = cursorOf(eventId)
  if (cursor === undefined) return notACursor("a delete", eventId)
  const id = (parse(data) as { id?: unknown } | undefined)?.id
  if (typeof id !== "string") return `a delete that names no id: ${data.slice(0, 200)}`
  return removeAt(state, id, cursor.revision)
}

const removeAt = (state: State, id: string, revision: number, batch?: ReplayRing.BatchMark): undefined => {
  if (state.snapshot === undefined) drop(state, id, revision, batch)
  else uncollect(state, state.snapshot, id)
  return undefined
}

/**
 * A change set's event (docs/batches.md): every change of it applied in this one step, so no request is routed with
 * part of it; its cursor is the batch's last revision.
 */
export const batch = (state: State, data: string, eventId: string): string | undefined => {
  const cursor = cursorOf(eventId)
  if (cursor === undefined) return notACursor("a batch", eventId)
  const parsed = Decode.parseBatch(data)
  if (typeof parsed === "string") return parsed
  const mark = { id: parsed.batch, end: cursor.revision, description: parsed.description }
  for (const item of parsed.events) {
    const failure = item.event === "upsert"
      ? upsertAt(state, item.data, JSON.stringify(item.data), item.revision, item.revision, mark)
      : removeAt(state, (item.data as { readonly id: string }).id, item.revision, mark)
    if (failure !== undefined) return failure
  }
  return undefined
}
