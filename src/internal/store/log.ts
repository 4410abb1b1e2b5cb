/**
 * The memory store's change log: entries in revision order, bounded by a capacity, with an index by route. Appending
 * drops the oldest entry past the capacity in O(1) (amortised), so pruning never costs a write more than that.
 *
 * @internal
 */
import type * as Route from "../../Route.js"
import type { Action, HistoryEntry, HistoryPage, HistoryQuery } from "../../RouteRepository.js"

/** Entries in ascending revision order from `start`: the ones before it were dropped, and are cut off in bulk. */
interface Run {
  items: Array<HistoryEntry>
  start: number
}

export interface Log {
  readonly capacity: number
  readonly all: Run
  readonly byRoute: Map<string, Run>
}

export const make = (capacity: number): Log => ({ capacity, all: { items: [], start: 0 }, byRoute: new Map() })

const size = (run: Run) => run.items.length - run.start

// Drops the oldest entry of a run; once half of it is dropped, the array is cut, so each entry is moved at most once.
const shift = (run: Run): HistoryEntry => {
  const entry = run.items[run.start++]!
  if (run.start * 2 >= run.items.length) {
    run.items = run.items.slice(run.start)
    run.start = 0
  }
  return entry
}

/** Appends an entry, and drops the oldest when the log holds more than its capacity. */
export const append = (log: Log, entry: HistoryEntry): void => {
  log.all.items.push(entry)
  const own = log.byRoute.get(entry.routeId)
  if (own === undefined) log.byRoute.set(entry.routeId, { items: [entry], start: 0 })
  else own.items.push(entry)
  if (size(log.all) <= log.capacity) return
  const dropped = shift(log.all)
  const run = log.byRoute.get(dropped.routeId)!
  // A route's only entry (every created route's at first) goes with its run, without cutting the run's array first.
  if (size(run) === 1) log.byRoute.delete(dropped.routeId)
  else shift(run)
}

/** The position in a run of the first entry at or after `revision`. */
const firstFrom = (run: Run, revision: number): number => {
  let low = run.start
  let high = run.items.length
  while (low < high) {
    const middle = (low + high) >>> 1
    if (run.items[middle]!.revision < revision) low = middle + 1
    else high = middle
  }
  return low
}

/** The entry at `revision`, if the log still holds it. */
export const at = (log: Log, revision: number): HistoryEntry | undefined => {
  const entry = log.all.items[firstFrom(log.all, revision)]
  return entry?.revision === revision ? entry : undefined
}

/**
 * The entries after `revision`, oldest first, at most `limit` and the rest of a batch the last of them begins; `complete` is `false` when entries after it were
 * dropped (the oldest held is past the revision after it). `newest` is the store's newest revision.
 */
export const after = (
  log: Log,
  revision: number,
  limit: number,
  newest: number
): { readonly entries: Array<HistoryEntry>; readonly complete: boolean } => {
  const all = log.all
  const from = firstFrom(all, revision + 1)
  const oldest = all.items[all.start]
  // A batch is never cut: a reader holds all of it or none (docs/batches.md).
  const end = limit === 0 ? undefined : all.items[Math.min(from + limit, all.items.length) - 1]?.batchEnd
  return {
    entries: all.items.slice(from, end === undefined ? from + limit : firstFrom(all, end + 1)),
    complete: revision >= newest || oldest === undefined || oldest.revision <= revision + 1
  }
}

/** `true` when the log holds an entry of the route. */
export const holds = (log: Log, routeId: string): boolean => log.byRoute.has(routeId)

/**
 * One page, newest first: a binary search to the cursor, then a walk back along the route's entries (with `routeId`)
 * or all of them, skipping those the other filters refuse.
 */
export const page = (log: Log, query: HistoryQuery): HistoryPage => {
  const run = query.routeId === undefined ? log.all : log.byRoute.get(query.routeId)
  if (run === undefined) return { items: [], hasMore: false }
  const items: Array<HistoryEntry> = []
  const from = query.before === undefined ? run.items.length : firstFrom(run, query.before)
  for (let i = from - 1; i >= run.start; i--) {
    const entry = run.items[i]!
    if (query.actor !== undefined && entry.actor !== query.actor) continue
    if (query.action !== undefined && entry.action !== query.action) continue
    if (query.batch !== undefined && entry.batch !== query.batch) {
      // A batch's entries are consecutive: past them, nothing older matches.
      if (items.length > 0) break
      continue
    }
    if (items.length === query.limit) return { items, hasMore: true }
    items.push(entry)
  }
  return { items, hasMore: false }
}

/** An entry of the change at `revision`. */
export const entry = (
  revision: number,
  millis: number,
  actor: string | null,
  action: Action,
  routeId: string,
  before: Route.Route | null,
  after: Route.Route | null,
  restoredFrom?: number
): HistoryEntry =>
  // Two literals rather than a spread, which builds the entry property by property on every change.
  restoredFrom === undefined
    ? { revision, at: new Date(millis), actor, action, routeId, before, after }
    : { revision, at: new Date(millis), actor, action, routeId, before, after, restoredFrom }
