/**
 * The fleet of one process: the followers connected to its change stream, directly or through relays, and where each
 * stands (docs/scaling-out.md, "The fleet"). A follower that names itself when it opens the stream (`Follower-Name`)
 * joins; it reports the revision it applied, with its own followers' entries when it is a relay, on a request of its
 * own tied to its stream; it leaves when the stream closes, and stays listed as gone for `LEFT_MILLIS`.
 *
 * One fleet per replay ring (`of`): the routing API built over a ring records its followers there, and the
 * follower that feeds that ring (a relay) reads it to pass its followers on upward. Everything the outside can grow
 * is bounded: names, entries per report, reports per second, followers kept after they left.
 *
 * @internal
 */
import type { Clock } from "effect"
import * as Limits from "../limits.js"
import type { Source } from "../table/liveTable.js"
import * as ReplayRing from "../table/replayRing.js"

export type { Source }

/** One follower as the fleet lists it; times in epoch milliseconds, `null` before its first report. */
export interface Entry {
  readonly name: string
  readonly address: string
  readonly via: string | null
  readonly connectedAt: number
  readonly appliedRevision: number | null
  readonly reportedAt: number | null
  readonly connected: boolean
  /** (v5) Where its table came from, as its last report said; `null` before a report that says. */
  readonly source: Source | null
}

/** A follower connected to this process: one open change stream. */
interface Member {
  readonly stream: string
  /** The principal that opened the stream: only it reports on it. */
  readonly principal: string
  readonly name: string
  readonly address: string
  readonly connectedAt: number
  appliedRevision: number | null
  source: Source | null
  reportedAt: number | null
  /** Its own followers, as it last reported them, each with `via` set. */
  downstream: ReadonlyArray<Entry>
  /** Reports it may still send this second (a token bucket). */
  allowance: number
  refilledAt: number
}

/** How many followers, relayed ones included, the fleet lists at once (docs/scaling-out.md, "The fleet's bounds"). */
export interface Bounds {
  readonly perProcess: number
  readonly perPrincipal: number
}

export interface Fleet {
  readonly clock: Clock.Clock
  readonly bounds: Bounds
  readonly members: Map<string, Member>
  /** The stream of each connected follower's name: a name is connected once. */
  readonly names: Map<string, string>
  /** The connected followers, relayed ones included, in all and per principal: what the bounds are checked on. */
  count: number
  readonly counts: Map<string, number>
  /** The highest revision this process has issued that the fleet has seen: a report above it is refused. */
  highest: number
  /** Counts every change (a join, a report, a leave, the gone dropped): what a kept reading is checked against. */
  version: number
  /** Followers gone in the last `LEFT_MILLIS`, oldest first, at most `MAX_LEFT`, each with when it left. */
  readonly left: Array<{ readonly entry: Entry; readonly at: number }>
  /** Told of every change: a join, a report, a leave (the waiters, and a relay's reporter). */
  readonly listeners: Set<() => void>
}

// --- bounds (docs/scaling-out.md lists them) ------------------------------------------------------------------------

/** The longest follower name, and the characters it may hold (a host name and a process id fit). */
export const MAX_NAME_LENGTH = 128
export const NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._:@-]*$/
/** The most entries one report carries (a relay's followers, and theirs). */
export const MAX_ENTRIES = 10_000
/** The largest report body. */
export const MAX_REPORT_BYTES = 4 * 1024 * 1024
/** Reports one stream may send per second, in a burst or spread out. */
export const REPORTS_PER_SECOND = 10
/** How long a follower that left stays listed, and how many such are kept at most. */
export const LEFT_MILLIS = 5 * 60_000
export const MAX_LEFT = 1_000
/** The longest an address may be (an address a relay reports included). */
export const MAX_ADDRESS_LENGTH = 256
/** The most followers, relayed ones included, connected to one process at once, and through one principal's tokens. */
export const BOUNDS: Bounds = {
  perProcess: Limits.FLEET_FOLLOWERS_PER_PROCESS,
  perPrincipal: Limits.FLEET_FOLLOWERS_PER_PRINCIPAL
}

/** The problem with a follower name, or `undefined` for a good one. */
export const checkName = (name: string): string | undefined =>
  name.length === 0 || name.length > MAX_NAME_LENGTH
    ? `must be 1 to ${MAX_NAME_LENGTH} characters (got ${name.length})`
    : NAME_PATTERN.test(name)
    ? undefined
    : `must be letters, digits and . _ : @ - starting with a letter or digit (got ${JSON.stringify(name)})`

// --- revisions ------------------------------------------------------------------------------------------------------

/**
 * The revision an event id of the change stream (a cursor) stands for, `undefined` for a cursor in the middle of a
 * snapshot (its routes are not applied until `ready`). The one place that reads a revision out of a cursor: a
 * follower's applied revision and a process's latest both come from here.
 */
export const revisionOf = (cursor: string): number | undefined => {
  const parsed = ReplayRing.parse(cursor)
  return typeof parsed === "object" && parsed.routeRevision === undefined ? parsed.revision : undefined
}

/** The latest revision `ring` holds: what this process's followers catch up to. */
export const latestRevision = (ring: ReplayRing.ReplayRing): number => ring.revision()

// --- one fleet per replay ring ---------------------------------------------------------------------------------------

const fleets = new WeakMap<ReplayRing.ReplayRing, Fleet>()

/** The fleet of the followers of `ring`'s stream, made on first use with `clock` and `bounds`. */
export const of = (ring: ReplayRing.ReplayRing, clock: Clock.Clock, bounds: Bounds = BOUNDS): Fleet => {
  let fleet = fleets.get(ring)
  if (fleet === undefined) {
    fleet = {
      clock,
      bounds,
      members: new Map(),
      names: new Map(),
      count: 0,
      counts: new Map(),
      highest: 0,
      version: 0,
      left: [],
      listeners: new Set()
    }
    fleets.set(ring, fleet)
  }
  return fleet
}

const changed = (fleet: Fleet): void => {
  fleet.version++
  for (const listener of Array.from(fleet.listeners)) listener()
}

/** Calls `listener` after every change of the fleet until the returned function is called. */
export const subscribe = (fleet: Fleet, listener: () => void): () => void => {
  fleet.listeners.add(listener)
  return () => fleet.listeners.delete(listener)
}

const now = (fleet: Fleet) => fleet.clock.unsafeCurrentTimeMillis()

const prune = (fleet: Fleet, at: number): void => {
  const left = fleet.left
  let gone = 0
  while (gone < left.length && (at - left[gone]!.at >= LEFT_MILLIS || left.length - gone > MAX_LEFT)) gone++
  if (gone === 0) return
  left.splice(0, gone)
  fleet.version++
}

// --- joining, reporting, leaving -----------------------------------------------------------------------------------

/** A new stream id: 128 random bits in hexadecimal. */
export const newStreamId = (): string =>
  Array.from(crypto.getRandomValues(new Uint8Array(16)), (byte) => byte.toString(16).padStart(2, "0")).join("")

/** Why a follower was not taken into the fleet, or its report not taken. */
export type Refused =
  | { readonly _tag: "UnknownStream" }
  | { readonly _tag: "TooFrequent"; readonly retryAfterMillis: number }
  | { readonly _tag: "NameTaken"; readonly name: string }
  | { readonly _tag: "TooMany"; readonly bound: "perProcess" | "perPrincipal"; readonly limit: number }
  | { readonly _tag: "Unissued"; readonly path: string; readonly revision: number; readonly highest: number }

// `more` followers more for `principal`, or the bound that would be passed.
const exceeds = (fleet: Fleet, principal: string, more: number): Refused | undefined => {
  if (more <= 0) return undefined
  const { perPrincipal, perProcess } = fleet.bounds
  if (fleet.count + more > perProcess) return { _tag: "TooMany", bound: "perProcess", limit: perProcess }
  return (fleet.counts.get(principal) ?? 0) + more > perPrincipal
    ? { _tag: "TooMany", bound: "perPrincipal", limit: perPrincipal }
    : undefined
}

const recount = (fleet: Fleet, principal: string, delta: number): void => {
  fleet.count += delta
  const count = (fleet.counts.get(principal) ?? 0) + delta
  if (count === 0) fleet.counts.delete(principal)
  else fleet.counts.set(principal, count)
}

/** Why `name` could not join for `principal` now, or `undefined`: checked before the stream is answered. */
export const refusesJoin = (fleet: Fleet, principal: string, name: string): Refused | undefined =>
  fleet.names.has(name) ? { _tag: "NameTaken", name } : exceeds(fleet, principal, 1)

/**
 * A follower opened a stream: it is listed from now on (and its earlier, gone self no more). `false`, and not listed,
 * when it may not join (its name connected meanwhile, or a bound reached): it follows unlisted.
 */
export const join = (
  fleet: Fleet,
  member: { readonly stream: string; readonly principal: string; readonly name: string; readonly address: string }
): boolean => {
  if (refusesJoin(fleet, member.principal, member.name) !== undefined) return false
  const at = now(fleet)
  const gone = fleet.left.findIndex(({ entry }) => entry.name === member.name && entry.via === null)
  if (gone !== -1) fleet.left.splice(gone, 1)
  fleet.members.set(member.stream, {
    ...member,
    connectedAt: at,
    appliedRevision: null,
    source: null,
    reportedAt: null,
    downstream: [],
    allowance: REPORTS_PER_SECOND,
    refilledAt: at
  })
  fleet.names.set(member.name, member.stream)
  recount(fleet, member.principal, 1)
  changed(fleet)
  return true
}

const ownEntry = (member: Member): Entry => ({
  name: member.name,
  address: member.address,
  via: null,
  connectedAt: member.connectedAt,
  appliedRevision: member.appliedRevision,
  source: member.source,
  reportedAt: member.reportedAt,
  connected: true
})

/**
 * The stream closed: the follower, and every follower it relayed that was connected, are listed as gone from now on
 * (those it already listed as gone leave with it: when they left is the relay's to know).
 */
export const leave = (fleet: Fleet, stream: string): void => {
  const member = fleet.members.get(stream)
  if (member === undefined) return
  fleet.members.delete(stream)
  fleet.names.delete(member.name)
  recount(fleet, member.principal, -1 - member.downstream.length)
  const at = now(fleet)
  for (const entry of [ownEntry(member), ...member.downstream.filter((relayed) => relayed.connected)]) {
    fleet.left.push({ entry: { ...entry, connected: false }, at })
  }
  prune(fleet, at)
  changed(fleet)
}

/** What a report says: the revision the follower applied, and its own followers as its fleet lists them. */
export interface Report {
  readonly stream: string
  readonly appliedRevision: number
  readonly source?: Source | undefined
  readonly followers: ReadonlyArray<Entry>
}

// The first revision of `report` above `highest`, with where it is, or `undefined`.
const unissued = (report: Report, highest: number): Refused | undefined => {
  if (report.appliedRevision > highest) {
    return { _tag: "Unissued", path: "appliedRevision", revision: report.appliedRevision, highest }
  }
  const at = report.followers.findIndex((entry) => entry.appliedRevision !== null && entry.appliedRevision > highest)
  return at === -1
    ? undefined
    : {
      _tag: "Unissued",
      path: `followers[${at}].appliedRevision`,
      revision: report.followers[at]!.appliedRevision!,
      highest
    }
}

/**
 * Takes a report from `principal`, whose process has issued revisions up to `latest`: a stream that is not open here,
 * or not opened by `principal`, is unknown; a revision above any this process issued is refused; one that sent more
 * than `REPORTS_PER_SECOND` is told when to try again; a subtree that would take the principal's or the process's
 * followers past their bound is refused. A refused report changes nothing.
 */
export const report = (fleet: Fleet, principal: string, report: Report, latest: number): Refused | undefined => {
  const member = fleet.members.get(report.stream)
  if (member === undefined || member.principal !== principal) return { _tag: "UnknownStream" }
  fleet.highest = Math.max(fleet.highest, latest)
  const invalid = unissued(report, fleet.highest)
  if (invalid !== undefined) return invalid
  const at = now(fleet)
  member.allowance = Math.min(
    REPORTS_PER_SECOND,
    member.allowance + ((at - member.refilledAt) * REPORTS_PER_SECOND) / 1000
  )
  member.refilledAt = at
  if (member.allowance < 1) {
    return { _tag: "TooFrequent", retryAfterMillis: Math.ceil(((1 - member.allowance) * 1000) / REPORTS_PER_SECOND) }
  }
  const delta = report.followers.length - member.downstream.length
  const tooMany = exceeds(fleet, principal, delta)
  if (tooMany !== undefined) return tooMany
  member.allowance -= 1
  member.appliedRevision = report.appliedRevision
  member.source = report.source ?? null
  member.reportedAt = at
  member.downstream = report.followers.map((entry) => entry.via === null ? { ...entry, via: member.name } : entry)
  recount(fleet, principal, delta)
  changed(fleet)
  return undefined
}

// --- reading -------------------------------------------------------------------------------------------------------

/** Drops the followers gone for `LEFT_MILLIS`: before each reading of the fleet. */
export const refresh = (fleet: Fleet): void => prune(fleet, now(fleet))

/** Every follower, connected or gone in the last `LEFT_MILLIS`, in no order (`fleetPage.ts` sorts them). */
export const entries = (fleet: Fleet): Array<Entry> => {
  refresh(fleet)
  const all: Array<Entry> = []
  for (const member of fleet.members.values()) all.push(ownEntry(member), ...member.downstream)
  for (const { entry } of fleet.left) all.push(entry)
  return all
}

const time = (millis: number | null) => millis === null ? "null" : `"${new Date(millis).toISOString()}"`

/** An entry as `GET /v1/routing/followers` answers it, and as a relay reports it upward. */
export const entryJson = (entry: Entry): string =>
  `{"name":"${entry.name}","address":${JSON.stringify(entry.address)},"via":${
    entry.via === null ? "null" : `"${entry.via}"`
  },"connectedAt":${time(entry.connectedAt)},"appliedRevision":${entry.appliedRevision},"reportedAt":${
    time(entry.reportedAt)
  },"connected":${entry.connected},"source":${entry.source === null ? "null" : `"${entry.source}"`}}`

/** `true` when every connected follower, relayed ones included, has applied `revision` or a later one. */
export const holds = (fleet: Fleet, revision: number): boolean => {
  for (const member of fleet.members.values()) {
    if (member.appliedRevision === null || member.appliedRevision < revision) return false
    for (const entry of member.downstream) {
      if (entry.connected && (entry.appliedRevision === null || entry.appliedRevision < revision)) return false
    }
  }
  return true
}
