/**
 * A process's replay ring: the routes its change stream (`GET /v1/routing/changes`) serves as of one revision of
 * the store's change log, and the last changes after which, in revision order, for the stream to replay from a
 * cursor and to push as they happen.
 *
 * A cursor is `<store>.<revision>`: the store's identity (the same for every process on one Postgres database, drawn
 * per memory store) and a revision of its log in base 36. It means "every change up to this revision", so it is good
 * at every process on the store, and across their restarts: a process resumes it from its own last changes, or from
 * the store's log when it is older than those (docs/scaling-out.md). A cursor of another store is answered with a
 * reset, and so is one of an earlier release (`<epoch>.<seq>`, a 12-character epoch).
 *
 * The routes of a snapshot carry `<store>.<revision>.<route revision>`: the snapshot taken at `revision`, and the
 * revision of the route's last change (a follower's ETags are the registry's). Holding part of a snapshot is not
 * holding the routes as of any revision, so resuming from such a cursor is answered with a reset: a client never ends
 * with half a snapshot.
 *
 * Changes are recorded in increasing revision order; a change at or below the ring's revision is already in it,
 * and is ignored, so the same change heard twice is recorded once.
 *
 * @internal
 */
import { Either } from "effect"
import { InvalidOption } from "../../InvalidOption.js"
import * as Route from "../../Route.js"
import { positiveInteger } from "../optionChecks.js"

/**
 * The change set (docs/batches.md) a change is part of: its id, and the revision of its last change. A stream sends
 * the changes of one batch as one event, so a follower never holds part of it.
 */
export interface BatchMark {
  readonly id: string
  readonly end: number
  readonly description?: string | undefined
}

/** One change, at its revision. `text` is its JSON, made at most once however many streams send it. */
export type Change =
  | {
    readonly _tag: "Upsert"
    readonly revision: number
    readonly route: Route.StoredRoute
    readonly text: string
    readonly batch?: BatchMark | undefined
  }
  | {
    readonly _tag: "Delete"
    readonly revision: number
    readonly id: string
    readonly text: string
    readonly batch?: BatchMark | undefined
  }

/** Where a revision resumes from. */
export type Resume =
  /** The changes after it, oldest first (empty when it is current). */
  | { readonly _tag: "Changes"; readonly changes: ReadonlyArray<Change> }
  /** Older than the changes this ring keeps: from the store's log, if there is one, else from a snapshot. */
  | { readonly _tag: "Behind" }
  /** Ahead of this ring: a process ahead of this one issued it. */
  | { readonly _tag: "Ahead" }

/** What a client's cursor resumes from. */
export type Since =
  | Resume & { readonly revision: number }
  /** A cursor of this API this process cannot resume from (another store, an earlier release, half a snapshot). */
  | { readonly _tag: "Reset" }
  /** Not a cursor this API issued. */
  | { readonly _tag: "Invalid"; readonly reason: string }

/** The default number of changes a ring keeps. */
export const DEFAULT_CAPACITY = 10_000

/**
 * How a host sizes a ring: the options of `RouteTable.layerWith`, which re-exports them as `LayerOptions`.
 *
 * @since 0.4.0
 * @category models
 */
export interface CapacityOptions {
  /**
   * How many of the last changes the process keeps in memory, its replay ring, for the change stream
   * (`GET /v1/routing/changes`) to resume a client from. A client further behind (or coming from another process on
   * the store, or from before a restart) is sent the changes from the store's change log (`RouteRepository.logAfter`),
   * and a `reset` with the whole table only when the log no longer holds them, or the store keeps no log (a
   * follower's store reads the registry's: `RouteFollower`). A whole number from 1; default
   * `DEFAULT_REPLAY_CAPACITY`. Each change kept holds the route and its JSON, a few hundred bytes for an ordinary
   * route. Not the log's retention, which is the store's own `historyCapacity`.
   *
   * @since 0.5.0
   */
  readonly replayCapacity?: number | undefined
  /**
   * `replayCapacity` under its name before 0.5.0. Given with `replayCapacity`, the two must be equal, else the layer
   * fails with `InvalidOption`.
   *
   * @deprecated since 0.5.0, removed in 0.6.0: use `replayCapacity`
   */
  readonly historyCapacity?: number | undefined
}

/**
 * The capacity a host asked for, with the default, or the error naming the option. The old name alone still works;
 * both at once must agree, since one of them would otherwise be silently ignored.
 */
export const capacityOf = (options: CapacityOptions): Either.Either<number, InvalidOption> => {
  const { historyCapacity, replayCapacity } = options
  if (replayCapacity !== undefined && historyCapacity !== undefined && replayCapacity !== historyCapacity) {
    return Either.left(
      new InvalidOption({
        option: "historyCapacity",
        message: `historyCapacity is the deprecated name of replayCapacity, and the two differ (replayCapacity ${
          String(replayCapacity)
        }, historyCapacity ${String(historyCapacity)}): give replayCapacity alone`
      })
    )
  }
  const option = replayCapacity === undefined && historyCapacity !== undefined ? "historyCapacity" : "replayCapacity"
  const capacity = replayCapacity ?? historyCapacity ?? DEFAULT_CAPACITY
  const invalid = positiveInteger(option, capacity, "changes")
  return invalid === undefined ? Either.right(capacity) : Either.left(invalid)
}

/** What a ring tells a listener: a change recorded, or `undefined` when it began again (`begin`). */
export type Listener = (change: Change | undefined) => void

export interface ReplayRing {
  readonly capacity: number
  /** The store the ring follows; `undefined` until it began. */
  readonly store: () => string | undefined
  /** The revision the ring holds the routes as of. */
  readonly revision: () => number
  /** The routes as of `revision()`, by id. */
  readonly routes: () => ReadonlyMap<string, Route.StoredRoute>
  /** What a client's cursor resumes from. */
  readonly since: (cursor: string) => Since
  /** What a revision of this ring's store resumes from. */
  readonly resume: (revision: number) => Resume
  /**
   * Calls `listener` with each change recorded from now on, synchronously, until the returned function is called;
   * with `undefined` when the ring begins again, after which the listener is dropped.
   */
  readonly subscribe: (listener: Listener) => () => void
  /** Calls `reached` once the ring holds `revision` (at once when it does), unless the returned function is called. */
  readonly whenAt: (revision: number, reached: () => void) => () => void
  /**
   * Starts again from `routes` as of `revision` of `store`, forgetting every change: the ring's first routes, or
   * a follower's new snapshot. Subscribers are told (with `undefined`) and dropped.
   */
  readonly begin: (store: string, revision: number, routes: Iterable<Route.StoredRoute>) => void
  /**
   * Records a route as its change at `revision` left it. `text`, when given, is `Route.toJson(route)` already made
   * (a follower's event data): it must be exactly that, since the stream serves it as the route's JSON.
   */
  readonly upserted: (route: Route.StoredRoute, revision: number, text?: string, batch?: BatchMark) => void
  /** Records the removal of a route at `revision`. */
  readonly deleted: (id: string, revision: number, batch?: BatchMark) => void
  /** Moves to `revision` with no change between (a follower's `ready`). */
  readonly advanced: (revision: number) => void
}

const STORE_PATTERN = /^[0-9a-f]{16}$/
const LEGACY_EPOCH_PATTERN = /^[0-9a-z]{12}$/
const REVISION_PATTERN = /^(?:0|[1-9a-z][0-9a-z]{0,10})$/

/** A cursor, read. */
export interface Cursor {
  readonly store: string
  readonly revision: number
  /** The revision of the route a snapshot's event carries; `undefined` for a change's cursor. */
  readonly routeRevision: number | undefined
}

/** The cursor read, `"legacy"` for one of an earlier release, `undefined` for one this API never issued. */
export const parse = (cursor: string): Cursor | "legacy" | undefined => {
  const parts = cursor.split(".")
  if (parts.length < 2 || parts.length > 3 || !parts.slice(1).every((part) => REVISION_PATTERN.test(part))) {
    return undefined
  }
  if (LEGACY_EPOCH_PATTERN.test(parts[0]!)) return "legacy"
  if (!STORE_PATTERN.test(parts[0]!)) return undefined
  const revision = parseInt(parts[1]!, 36)
  if (!Number.isSafeInteger(revision)) return undefined
  return { store: parts[0]!, revision, routeRevision: parts[2] === undefined ? undefined : parseInt(parts[2], 36) }
}

/** The cursor of `revision` of `store`. */
export const cursorOf = (store: string, revision: number): string => `${store}.${revision.toString(36)}`

/** The cursor of a route of the snapshot taken at `cursor`. */
export const snapshotCursorOf = (cursor: string, route: Route.StoredRoute): string =>
  `${cursor}.${route.revision.toString(36)}`

const INVALID: Since = {
  _tag: "Invalid",
  reason: "is not a cursor this API issued: resume from the id of the last event received"
}

// Its JSON is made when a stream first sends it, not when it is recorded: a registry that nobody follows never makes it.
class Upsert {
  readonly _tag = "Upsert"
  #text: string | undefined
  constructor(
    readonly revision: number,
    readonly route: Route.StoredRoute,
    text: string | undefined,
    readonly batch: BatchMark | undefined
  ) {
    this.#text = text
  }
  get text(): string {
    return this.#text ??= Route.toJson(this.route)
  }
}

const upsertOf = (route: Route.StoredRoute, revision: number, text: string | undefined, batch?: BatchMark): Change =>
  new Upsert(revision, route, text, batch)

const deleteOf = (id: string, revision: number, batch?: BatchMark): Change => ({
  _tag: "Delete",
  revision,
  id,
  text: `{"id":${JSON.stringify(id)}}`,
  batch
})

/** A ring keeping the last `capacity` changes (at least 1). */
export const make = (capacity: number = DEFAULT_CAPACITY): ReplayRing => {
  let store: string | undefined
  let revision = 0
  // The revision the oldest change kept follows: a revision from it on resumes from the kept changes.
  let floor = 0
  // The kept changes in revision order from `start` (those before it were dropped, and are cut off in bulk).
  let kept: Array<Change> = []
  let start = 0
  const routes = new Map<string, Route.StoredRoute>()
  let listeners = new Set<Listener>()
  const waiters = new Set<{ readonly revision: number; readonly reached: () => void }>()

  const wake = () => {
    for (const waiter of waiters) {
      if (waiter.revision > revision) continue
      waiters.delete(waiter)
      waiter.reached()
    }
  }

  const record = (change: Change): void => {
    if (store === undefined || change.revision <= revision) return
    revision = change.revision
    if (change._tag === "Upsert") routes.set(change.route.id, change.route)
    else routes.delete(change.id)
    kept.push(change)
    if (kept.length - start > capacity) {
      floor = kept[start++]!.revision
      if (start * 2 >= kept.length) {
        kept = kept.slice(start)
        start = 0
      }
    }
    for (const listener of listeners) listener(change)
    wake()
  }

  const resume = (from: number): Resume => {
    if (from > revision) return { _tag: "Ahead" }
    if (from < floor) return { _tag: "Behind" }
    let low = start
    let high = kept.length
    while (low < high) {
      const middle = (low + high) >>> 1
      if (kept[middle]!.revision <= from) low = middle + 1
      else high = middle
    }
    return { _tag: "Changes", changes: kept.slice(low) }
  }

  return {
    capacity,
    store: () => store,
    revision: () => revision,
    routes: () => routes,
    resume,
    since: (cursor) => {
      const parsed = parse(cursor)
      if (parsed === undefined) return INVALID
      if (parsed === "legacy" || parsed.store !== store || parsed.routeRevision !== undefined) return { _tag: "Reset" }
      return { ...resume(parsed.revision), revision: parsed.revision }
    },
    subscribe: (listener) => {
      listeners.add(listener)
      return () => listeners.delete(listener)
    },
    whenAt: (at, reached) => {
      const waiter = { revision: at, reached }
      waiters.add(waiter)
      wake()
      return () => waiters.delete(waiter)
    },
    begin: (from, at, initial) => {
      store = from
      revision = at
      floor = at
      kept = []
      start = 0
      routes.clear()
      for (const route of initial) routes.set(route.id, route)
      const told = listeners
      listeners = new Set()
      for (const listener of told) listener(undefined)
      wake()
    },
    upserted: (route, at, text, batch) => record(upsertOf(route, at, text, batch)),
    deleted: (id, at, batch) => record(deleteOf(id, at, batch)),
    advanced: (at) => {
      if (store === undefined || at <= revision) return
      revision = at
      wake()
    }
  }
}
