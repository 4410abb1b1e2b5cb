/**
 * The fleet read a page at a time (docs/scaling-out.md, "Reading the fleet"): `GET /v1/routing/followers` answers at
 * most `MAX_LIMIT` followers, in the fleet's order (by name), with counts of the whole fleet and a cursor to the next
 * page, so an answer's size never grows with what followers report. The fleet's sorted list is kept until the fleet
 * changes: a dashboard or a CLI reading it again pays for one pass, not a sort.
 *
 * @internal
 */
import * as Fleet from "./fleet.js"

/** The most followers one page holds, and the page of a query that names no `limit`. */
export const MAX_LIMIT = 1000

/** Where a page starts: after the follower of this key (its fields in the fleet's order). */
type Key = readonly [name: string, connected: boolean, connectedAt: number, via: string | null, address: string]

const keyOf = (entry: Fleet.Entry): Key => [entry.name, entry.connected, entry.connectedAt, entry.via, entry.address]

const text = (a: string, b: string): number => a < b ? -1 : a > b ? 1 : 0

// By name, then the connected one first, then the earliest to connect, then by relay and address: a total order, so
// that a page ends where the next begins.
const compare = (a: Key, b: Key): number =>
  text(a[0], b[0]) || Number(b[1]) - Number(a[1]) || a[2] - b[2] || text(a[3] ?? "", b[3] ?? "") ||
  text(a[4], b[4])

/** The cursor of the page after `entry`: its key, as base64url JSON. */
export const cursorOf = (entry: Fleet.Entry): string => Buffer.from(JSON.stringify(keyOf(entry))).toString("base64url")

/** The key a cursor names, or `undefined` for a text that is not a cursor of this API. */
export const parseCursor = (cursor: string): Key | undefined => {
  if (cursor.length > 1024 || !/^[A-Za-z0-9_-]+$/.test(cursor)) return undefined
  try {
    const key: unknown = JSON.parse(Buffer.from(cursor, "base64url").toString("utf8"))
    return Array.isArray(key) && key.length === 5 && typeof key[0] === "string" && typeof key[1] === "boolean" &&
        Number.isSafeInteger(key[2]) && (key[3] === null || typeof key[3] === "string") && typeof key[4] === "string"
      ? key as unknown as Key
      : undefined
  } catch {
    return undefined
  }
}

/** What a page asks: where it starts, how many, and whether only the followers behind `revision`. */
export interface Query {
  readonly after: Key | undefined
  readonly limit: number
  readonly behindOnly: boolean
  /** The revision a follower is behind of when below it: the query's, else the process's latest. */
  readonly revision: number
}

/** The whole fleet's counts: every follower listed, those connected, and those connected and behind. */
export interface Counts {
  readonly followers: number
  readonly connected: number
  readonly behind: number
}

export interface Page {
  readonly items: ReadonlyArray<Fleet.Entry>
  /** The page's last follower, when more follow it. */
  readonly last: Fleet.Entry | undefined
  readonly counts: Counts
}

/** `true` when `entry` is connected and has not applied `revision`. */
export const isBehind = (entry: Fleet.Entry, revision: number): boolean =>
  entry.connected && (entry.appliedRevision === null || entry.appliedRevision < revision)

interface Sorted {
  readonly version: number
  readonly entries: ReadonlyArray<Fleet.Entry>
}

const sorted = new WeakMap<Fleet.Fleet, Sorted>()

// The fleet sorted, from the last read while the fleet has not changed since.
const sortedOf = (fleet: Fleet.Fleet): ReadonlyArray<Fleet.Entry> => {
  Fleet.refresh(fleet) // drops the gone first, which counts as a change
  const kept = sorted.get(fleet)
  if (kept !== undefined && kept.version === fleet.version) return kept.entries
  const entries = Fleet.entries(fleet).map((entry) => ({ entry, key: keyOf(entry) })).sort((a, b) =>
    compare(a.key, b.key)
  )
    .map(({ entry }) => entry)
  sorted.set(fleet, { version: fleet.version, entries })
  return entries
}

/** One page of the fleet, and the whole fleet's counts. */
export const page = (fleet: Fleet.Fleet, query: Query): Page => {
  const entries = sortedOf(fleet)
  let connected = 0
  let behind = 0
  const items: Array<Fleet.Entry> = []
  let more = false
  for (const entry of entries) {
    if (entry.connected) connected++
    const lags = isBehind(entry, query.revision)
    if (lags) behind++
    if (more || (query.behindOnly && !lags)) continue
    if (query.after !== undefined && compare(keyOf(entry), query.after) <= 0) continue
    if (items.length === query.limit) more = true
    else items.push(entry)
  }
  return {
    items,
    last: more ? items[items.length - 1] : undefined,
    counts: { followers: entries.length, connected, behind }
  }
}

/** The counts as the answer carries them. */
export const countsJson = (counts: Counts): string =>
  `{"followers":${counts.followers},"connected":${counts.connected},"behind":${counts.behind}}`
