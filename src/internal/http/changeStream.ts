/**
 * The change stream (`GET /v1/routing/changes`) of one connection: Server-Sent Events of the table's changes, written
 * into whatever connection the adapter gives (`Sink`).
 *
 * A stream first catches up: the replay ring's routes as of one revision (a snapshot, when the client gives no cursor or
 * one this process cannot resume from), or the store's log after the client's revision when it is older than what the
 * ring keeps (a relay's store reads it from the process it follows: `follow/log.ts`), then the ring's changes
 * after that, written only as fast as the connection sends them. A cursor
 * ahead of the ring (issued by a process that is ahead of this one) is held until the ring reaches it. Once it
 * holds nothing more to send it subscribes to the ring in the same step (so no change falls between), writes
 * `ready`, and from then on each change is written into the connection by the ring's listener, synchronously, as
 * the ring takes it: the registry never waits for a follower. A connection that holds more than its bound of unsent
 * bytes (a follower that stopped reading), or that does not take what it is sent while catching up within the stall
 * deadline, is closed, and the follower resumes from its last cursor. docs/scaling-out.md says what each bound costs.
 *
 * @internal
 */
import { Either } from "effect"
import * as Route from "../../Route.js"
import type { LogRead } from "../../RouteRepository.js"
import type * as RouteTable from "../../RouteTable.js"
import * as Alarms from "../alarms.js"
import * as Heartbeat from "../follow/heartbeat.js"
import * as ReplayRing from "../table/replayRing.js"
import type { OpenBody, Sink } from "./exchange.js"
import { endTurn, type LogReads, takeTurn } from "./logReads.js"
import { event, eventsOf, grouping, logEvents, RESET } from "./streamEvents.js"
import { type Heartbeats, join, leave, onExpiry, type Open } from "./streamTimers.js"

/** Reads the store's log after a revision (`RouteRepository.logAfter`), outside any fiber. */
export type ReadLog = (revision: number, limit: number) => Promise<LogRead>

/** What a stream reads: the table and its ring, kept together (the ring records every change of the table). */
export interface Source {
  readonly table: RouteTable.Table<Route.StoredRoute>
  readonly ring: ReplayRing.ReplayRing
  /** The store's log, when it keeps one: what resumes a cursor older than the ring's changes. */
  readonly log: ReadLog | undefined
  /** The most bytes a connection may hold unsent before it is closed. */
  readonly bufferBytes: number
  /** How long a stream catching up (or held) may go without its connection taking what it was sent. */
  readonly stallMillis: number
  /** The most streams one principal may hold open at once. */
  readonly streamsPerPrincipal: number
  /** The streams each principal holds open. */
  readonly principals: Map<string, number>
  /** The catch-ups reading the log now, and those waiting for their turn. */
  readonly logReads: LogReads
  readonly heartbeats: Heartbeats
  /** The last snapshot taken, shared by the streams that start at the same revision. */
  shared: WeakRef<Snapshot> | undefined
}

export { type LogReads, logReads, MAX_LOG_READS } from "./logReads.js"
export { type Heartbeats, heartbeats } from "./streamTimers.js"

// How many log entries a catch-up reads at a time.
const LOG_PAGE = 1000

/** The content type of the stream. */
export const CONTENT_TYPE = "text/event-stream"

/** The answer's headers: never cached, and never held back by a proxy that buffers answers (nginx). */
export const HEADERS: Readonly<Record<string, string>> = {
  "content-type": CONTENT_TYPE,
  "cache-control": "no-cache",
  "x-accel-buffering": "no"
}

// While catching up, events are written until the connection holds this much unsent, then again once it has sent it.
const CATCH_UP_BYTES = 64 * 1024

/** The ring's routes as of `revision`, with their JSON, made once for every stream that sends them. */
interface Snapshot {
  readonly store: string
  readonly revision: number
  readonly routes: ReadonlyArray<Route.StoredRoute>
  readonly texts: Array<string | undefined>
}

// Taken in one step with the ring's revision: its routes are exactly those as of it.
const snapshotOf = (source: Source, store: string): Snapshot => {
  const revision = source.ring.revision()
  const shared = source.shared?.deref()
  if (shared !== undefined && shared.store === store && shared.revision === revision) return shared
  const routes = Array.from(source.ring.routes().values())
  const snapshot: Snapshot = { store, revision, routes, texts: new Array(routes.length) }
  source.shared = new WeakRef(snapshot)
  return snapshot
}

// ---------------------------------------------------------------------------------------------------------------
// The query
// ---------------------------------------------------------------------------------------------------------------

/** The header an EventSource resumes with, after a lost connection, from the id of the last event it received. */
export const LAST_EVENT_ID = "last-event-id"

/** Why a cursor is refused. */
export const NOT_ISSUED = "is not a cursor this API issued: resume from the id of the last event received"

const checkCursor = (cursor: string): string | undefined =>
  ReplayRing.parse(cursor) === undefined ? NOT_ISSUED : undefined

/**
 * The revision `cursor` names when it is of this ring's store and ahead of the ring: held until the ring
 * gets there, unless the store itself never got there (then no process issued it, and it is refused).
 */
export const aheadOf = (ring: ReplayRing.ReplayRing, cursor: string): number | undefined => {
  const parsed = ReplayRing.parse(cursor)
  return typeof parsed === "object" && parsed.store === ring.store() && parsed.revision > ring.revision()
    ? parsed.revision
    : undefined
}

/**
 * The cursor a stream resumes from (`undefined`: none, a snapshot), or every problem with the query: a parameter other
 * than `since`, `since` given twice, a `since` or a `Last-Event-ID` that is not a cursor this API issued.
 *
 * When both are given `Last-Event-ID` wins: an EventSource reconnects to the same URL, `since` and all, and says in
 * the header how far it got since.
 */
export const parseQuery = (
  raw: string,
  lastEventId: string | undefined
): Either.Either<string | undefined, ReadonlyArray<Route.FieldIssue>> => {
  const issues: Array<Route.FieldIssue> = []
  const reported = new Set<string>()
  let since: string | undefined
  for (const [name, value] of new URLSearchParams(raw)) {
    if (reported.has(name)) continue
    if (name !== "since") {
      issues.push({
        path: name,
        message: name === "access_token"
          ? "is not a parameter: tokens in the query never authenticate; send \"Authorization: Bearer <token>\""
          : "is not a parameter of the change stream: use since"
      })
    } else if (since !== undefined) {
      issues.push({ path: name, message: "is given more than once: give it at most once" })
    } else {
      since = value
      continue
    }
    reported.add(name)
  }
  if (since !== undefined && !reported.has("since")) {
    const problem = checkCursor(since)
    if (problem !== undefined) issues.push({ path: "since", message: problem })
  }
  const header = lastEventId === undefined || lastEventId === "" ? undefined : lastEventId
  if (header !== undefined) {
    const problem = checkCursor(header)
    if (problem !== undefined) issues.push({ path: "Last-Event-ID", message: problem })
  }
  return issues.length > 0 ? Either.left(issues) : Either.right(header ?? since)
}

// ---------------------------------------------------------------------------------------------------------------
// One stream
// ---------------------------------------------------------------------------------------------------------------

/**
 * Closes every stream open on `source`: a host shutting down, whose server would otherwise wait for connections that
 * never end. Their followers reconnect elsewhere, or here once the host is back, and resume.
 */
export const closeAll = (source: Source): void => {
  for (const stream of Array.from(source.heartbeats.streams)) stream.cut()
}

/**
 * The body of the stream that resumes from `since` (no cursor: from a snapshot), for `principal`. `since` was checked
 * to be a cursor this API issued; what it resumes from is decided when the stream opens. `undefined` when the
 * principal holds as many streams open as it may; an open stream counts until it stops.
 */
export const body = (
  source: Source,
  since: string | undefined,
  principal: string,
  expiresAt?: Date | undefined
): OpenBody | undefined =>
  (source.principals.get(principal) ?? 0) >= source.streamsPerPrincipal ? undefined : {
    open: (sink) => {
      source.principals.set(principal, (source.principals.get(principal) ?? 0) + 1)
      return open(source, since, sink, expiresAt, () => {
        const left = source.principals.get(principal)! - 1
        if (left === 0) source.principals.delete(principal)
        else source.principals.set(principal, left)
      })
    }
  }

// How often a stream that sent `expired` looks whether its client has it all.
const EXPIRED_POLL_MILLIS = 20

/** The event that ends a stream whose credential expired: the client signs in again, or gets a fresh token. */
export const EXPIRED = "event: expired\ndata: {}\n\n"

const open = (
  source: Source,
  since: string | undefined,
  sink: Sink,
  expiresAt: Date | undefined,
  release: () => void
): () => void => {
  const { bufferBytes, ring } = source
  let unsubscribe: (() => void) | undefined
  // A timer or a wait to cancel when the stream stops.
  let pending: (() => void) | undefined
  let stopped = false
  let unexpire = () => {}
  // The credential expired: nothing is written after `expired`.
  let ending = false

  const stop = () => {
    if (stopped) return
    stopped = true
    unexpire()
    unsubscribe?.()
    pending?.()
    pending = undefined
    leave(source.heartbeats, opened)
    release()
  }
  const cut = () => {
    stop()
    sink.close()
  }
  // Writes whole events; a connection that holds more than its bound is cut, and never fails the writer.
  const send = (chunk: string | Uint8Array) => {
    if (stopped || ending) return
    try {
      sink.write(chunk)
      if (sink.buffered() > bufferBytes) cut()
    } catch {
      cut()
    }
  }
  const opened: Open = { beat: send, cut }

  // Waits for `resume` to be called (by the connection draining, the ring moving), at most the stall deadline.
  const waitFor = (start: (resume: () => void) => (() => void) | void, resume: () => void) => {
    const stall = Alarms.after(source.heartbeats.runtime, source.stallMillis, cut)
    let done = false
    let cancel: (() => void) | void = undefined
    const cancelling = () => {
      done = true
      stall()
      cancel?.()
    }
    cancel = start(() => {
      if (done || stopped) return
      done = true
      stall()
      if (pending === cancelling) pending = undefined
      resume()
    })
    // Resumed at once, it may already wait for something else: that is what the stream cancels when it stops.
    if (!done) pending = cancelling
  }
  const drained = (resume: () => void) => waitFor((go) => sink.drained(go), resume)

  // Writes `events` as fast as the connection takes them, then calls `done`.
  const write = (events: ReadonlyArray<string | Uint8Array>, done: () => void) => {
    let at = 0
    const next = (): void => {
      while (at < events.length && !stopped && sink.buffered() < CATCH_UP_BYTES) send(events[at++]!)
      if (stopped) return
      if (at < events.length) return drained(next)
      done()
    }
    next()
  }

  // From `revision` of `store` on: the ring's changes, the log's, or (ahead) once the ring is there; then live.
  const catchUp = (store: string, revision: number): void => {
    if (stopped) return
    if (ring.store() !== store) return cut() // the ring began again: the client resumes, with a reset
    const resumed = ring.resume(revision)
    switch (resumed._tag) {
      case "Ahead":
        return waitFor((go) => ring.whenAt(revision, go), () => catchUp(store, revision))
      case "Behind": // pruned while this stream caught up: it resumes, from the log or with a reset
        return source.log === undefined ? cut() : fromLog(store, revision, false)
      case "Changes": {
        const changes = resumed.changes
        if (changes.length === 0) return live(store, revision)
        return write(eventsOf(changes, store), () => catchUp(store, changes[changes.length - 1]!.revision))
      }
    }
  }

  // One page of the store's log after `revision`, netted, in turn with the other streams reading the log. `first`:
  // nothing was sent yet, so a reset can still come first.
  const fromLog = (store: string, revision: number, first: boolean): void => {
    const read = source.log!
    takeTurn(source.logReads, () => {
      if (stopped) return endTurn(source.logReads)
      read(revision, LOG_PAGE).then(
        (page) => {
          endTurn(source.logReads)
          if (stopped) return
          if (!page.complete || page.store !== store) return first ? reset() : cut()
          const last = page.entries[page.entries.length - 1]
          // Nothing after `revision` up to the log's newest: on from there, or the ring's revision when behind it.
          if (last === undefined) return catchUp(store, Math.max(revision, Math.min(page.revision, ring.revision())))
          write(logEvents(store, page.entries), () => catchUp(store, last.revision))
        },
        () => {
          endTurn(source.logReads)
          cut() // the store cannot be read: the client resumes from its cursor, here or elsewhere
        }
      )
    })
  }

  // Called in the step that found nothing more to send: every later change reaches the listener. A heartbeat first
  // tells the follower, as it becomes live, whether this process is current itself.
  const live = (store: string, revision: number) => {
    const events = grouping(store, send)
    unsubscribe = ring.subscribe((change) => change === undefined ? cut() : events.take(change))
    send(
      Heartbeat.of(source.heartbeats.status?.()) + event(
        "ready",
        ReplayRing.cursorOf(store, revision),
        `{"routes":${ring.routes().size},"revision":${revision}}`
      )
    )
  }

  const snapshot = () => {
    const store = ring.store()
    if (store === undefined) return cut()
    const taken = snapshotOf(source, store)
    const { routes, texts } = taken
    const cursor = ReplayRing.cursorOf(store, taken.revision)
    let at = 0
    // One write of whole events, about `CATCH_UP_BYTES`, a turn: one system call for hundreds of events, and a
    // connection whose buffers take everything (a client that stopped reading, over loopback) holds the process for
    // one such write a turn, not for all the buffers take.
    const next = (): void => {
      if (sink.buffered() < CATCH_UP_BYTES) {
        let chunk = ""
        while (at < routes.length && chunk.length < CATCH_UP_BYTES) {
          const route = routes[at]!
          const text = texts[at] ??= Route.toJson(route)
          at++
          chunk += event("upsert", ReplayRing.snapshotCursorOf(cursor, route), text)
        }
        if (chunk !== "") send(chunk)
      }
      if (stopped) return
      if (at < routes.length) return drained(next)
      catchUp(store, taken.revision)
    }
    next()
  }

  const reset = () => {
    send(RESET)
    snapshot()
  }

  join(source.heartbeats, opened)
  // A stream never outlives its credential: it says so, writes nothing more, and ends once the client has it (or at
  // the stall deadline: closing drops what the connection holds).
  unexpire = onExpiry(source.heartbeats.runtime, expiresAt, () => {
    send(EXPIRED)
    ending = true
    unsubscribe?.()
    pending?.()
    const runtime = source.heartbeats.runtime
    const clock = Alarms.clockOf(runtime)
    const deadline = clock.unsafeCurrentTimeMillis() + source.stallMillis
    const settle = () => {
      if (stopped) return
      if (sink.buffered() === 0 || clock.unsafeCurrentTimeMillis() > deadline) return cut()
      pending = Alarms.after(runtime, EXPIRED_POLL_MILLIS, settle)
    }
    settle()
  })
  if (stopped) return stop
  const resumed = since === undefined ? undefined : ring.since(since)
  if (resumed === undefined) snapshot()
  else if (resumed._tag === "Reset" || resumed._tag === "Invalid") reset()
  else if (resumed._tag === "Behind" && source.log === undefined) reset()
  else if (resumed._tag === "Behind") fromLog(ring.store()!, resumed.revision, true)
  else catchUp(ring.store()!, resumed.revision)
  return stop
}
