/**
 * The change stream (`GET /v1/routing/changes`) of one connection: Server-Sent Events of the table's changes, written
 * into whatever connection the adapter gives (`Sink`).
 *
 * A stream first catches up: the table's routes as of one change (a snapshot, when the client gives no cursor or one
 * this process cannot resume from), then the history's changes after that, written only as fast as the connection
 * sends them. Once it holds nothing more to send it subscribes to the history in the same step (so no change falls
 * between), writes `ready`, and from then on each change is written into the connection by the history's listener,
 * synchronously, as the table takes it: the registry never waits for a follower. A connection that holds more than its
 * bound of unsent bytes (a follower that stopped reading) is closed, and the follower resumes from its last cursor.
 *
 * @internal
 */
import { Either } from "effect"
import * as Route from "../../Route.js"
import type * as RouteTable from "../../RouteTable.js"
import * as Heartbeat from "../follow/heartbeat.js"
import * as History from "../table/history.js"
import type { Status } from "../table/liveTable.js"
import type { OpenBody, Sink } from "./exchange.js"

/** What a stream reads: the table and its history, kept together (the history records every change of the table). */
export interface Source {
  readonly table: RouteTable.Table<Route.StoredRoute>
  readonly history: History.History
  /** The most bytes a connection may hold unsent before it is closed. */
  readonly bufferBytes: number
  readonly heartbeats: Heartbeats
  /** The last snapshot taken, shared by the streams that start at the same change. */
  shared: WeakRef<Snapshot> | undefined
}

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

const event = (name: string, id: string, data: string) => `event: ${name}\nid: ${id}\ndata: ${data}\n\n`

const RESET = "event: reset\ndata: {}\n\n"

// Each change's event, encoded once for every stream that writes it: a registry with a thousand followers writes the
// same bytes a thousand times. An encoder's bytes have a buffer of their own (never Node's shared pool), so a transport
// that takes hold of a chunk's buffer takes only this event's.
const encoder = new TextEncoder()
const encoded = new WeakMap<History.Change, Uint8Array>()

const changeEvent = (change: History.Change, epoch: string): Uint8Array => {
  let bytes = encoded.get(change)
  if (bytes === undefined) {
    bytes = encoder.encode(
      event(change._tag === "Upsert" ? "upsert" : "delete", History.cursorOf(epoch, change.seq), change.text)
    )
    encoded.set(change, bytes)
  }
  return bytes
}

/** The table's routes as of `cursor`, with their JSON, made once for every stream that sends them. */
interface Snapshot {
  readonly cursor: string
  readonly routes: ReadonlyArray<Route.StoredRoute>
  readonly texts: Array<string | undefined>
}

// Taken in one step with the history's cursor: the table holds exactly the changes up to it.
const snapshotOf = (source: Source): Snapshot => {
  const cursor = source.history.cursor()
  const shared = source.shared?.deref()
  if (shared !== undefined && shared.cursor === cursor) return shared
  const routes = Array.from(source.table)
  const snapshot: Snapshot = { cursor, routes, texts: new Array(routes.length) }
  source.shared = new WeakRef(snapshot)
  return snapshot
}

// ---------------------------------------------------------------------------------------------------------------
// The query
// ---------------------------------------------------------------------------------------------------------------

/** The header an EventSource resumes with, after a lost connection, from the id of the last event it received. */
export const LAST_EVENT_ID = "last-event-id"

const checkCursor = (history: History.History, cursor: string): string | undefined => {
  const resumed = history.since(cursor)
  return resumed._tag === "Invalid" ? resumed.reason : undefined
}

/**
 * The cursor a stream resumes from (`undefined`: none, a snapshot), or every problem with the query: a parameter other
 * than `since`, `since` given twice, a `since` or a `Last-Event-ID` that is not a cursor this API issued.
 *
 * When both are given `Last-Event-ID` wins: an EventSource reconnects to the same URL, `since` and all, and says in
 * the header how far it got since.
 */
export const parseQuery = (
  history: History.History,
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
    const problem = checkCursor(history, since)
    if (problem !== undefined) issues.push({ path: "since", message: problem })
  }
  const header = lastEventId === undefined || lastEventId === "" ? undefined : lastEventId
  if (header !== undefined) {
    const problem = checkCursor(history, header)
    if (problem !== undefined) issues.push({ path: "Last-Event-ID", message: problem })
  }
  return issues.length > 0 ? Either.left(issues) : Either.right(header ?? since)
}

// ---------------------------------------------------------------------------------------------------------------
// Heartbeats: one timer for every open stream of a core
// ---------------------------------------------------------------------------------------------------------------

/** One open stream, as its core's timer and its shutdown see it. */
interface Open {
  readonly beat: (text: string) => void
  readonly cut: () => void
}

/**
 * The open streams of one core, each sent a heartbeat every interval by one timer, running while any is open. A
 * heartbeat is a comment line that keeps idle connections from timing out and says whether this process's table is
 * current (`status`, the table's; `heartbeat.ts`).
 */
export interface Heartbeats {
  readonly intervalMillis: number
  readonly status: (() => Status) | undefined
  readonly streams: Set<Open>
  timer: ReturnType<typeof setInterval> | undefined
}

export const heartbeats = (intervalMillis: number, status?: () => Status): Heartbeats => ({
  intervalMillis,
  status,
  streams: new Set(),
  timer: undefined
})

const beat = (heartbeats: Heartbeats) => {
  const text = Heartbeat.of(heartbeats.status?.())
  for (const stream of heartbeats.streams) stream.beat(text)
}

const join = (heartbeats: Heartbeats, stream: Open) => {
  heartbeats.streams.add(stream)
  if (heartbeats.timer === undefined) {
    heartbeats.timer = setInterval(beat, heartbeats.intervalMillis, heartbeats)
    // Open streams never keep a process alive on their own: its server does.
    heartbeats.timer.unref?.()
  }
}

const leave = (heartbeats: Heartbeats, stream: Open) => {
  heartbeats.streams.delete(stream)
  if (heartbeats.streams.size === 0 && heartbeats.timer !== undefined) {
    clearInterval(heartbeats.timer)
    heartbeats.timer = undefined
  }
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
 * The body of the stream that resumes from `since` (no cursor: from a snapshot). `since` was checked to be a cursor
 * this API issued; what it resumes from is decided when the stream opens.
 */
export const body = (source: Source, since: string | undefined): OpenBody => ({
  open: (sink) => open(source, since, sink)
})

const open = (source: Source, since: string | undefined, sink: Sink): () => void => {
  const { bufferBytes, history } = source
  const epoch = history.epoch
  let unsubscribe: (() => void) | undefined
  let stopped = false

  const stop = () => {
    if (stopped) return
    stopped = true
    unsubscribe?.()
    leave(source.heartbeats, opened)
  }
  const cut = () => {
    stop()
    sink.close()
  }
  // Writes whole events; a connection that holds more than its bound is cut, and never fails the writer.
  const send = (chunk: string | Uint8Array) => {
    if (stopped) return
    try {
      sink.write(chunk)
      if (sink.buffered() > bufferBytes) cut()
    } catch {
      cut()
    }
  }
  const opened: Open = { beat: send, cut }

  // From `cursor` on, the history's changes, as fast as the connection takes them; then live.
  const catchUp = (cursor: string): void => {
    if (stopped) return
    const resumed = history.since(cursor)
    if (resumed._tag !== "Changes") return cut() // pruned while this stream caught up: it resumes with a reset
    const changes = resumed.changes
    if (changes.length === 0) return live(cursor)
    let at = 0
    const next = (): void => {
      while (at < changes.length && !stopped && sink.buffered() < CATCH_UP_BYTES) {
        send(changeEvent(changes[at++]!, epoch))
      }
      if (stopped) return
      if (at < changes.length) return sink.drained(next)
      catchUp(History.cursorOf(epoch, changes[changes.length - 1]!.seq))
    }
    next()
  }

  // Called in the step that found nothing more to send: every later change reaches the listener. A heartbeat first
  // tells the follower, as it becomes live, whether this process is current itself.
  const live = (cursor: string) => {
    unsubscribe = history.subscribe((change) => send(changeEvent(change, epoch)))
    send(
      Heartbeat.of(source.heartbeats.status?.()) + event("ready", cursor, `{"routes":${source.table.tree.byId.size}}`)
    )
  }

  const snapshot = () => {
    const taken = snapshotOf(source)
    const { routes, texts } = taken
    let at = 0
    const next = (): void => {
      while (at < routes.length && !stopped && sink.buffered() < CATCH_UP_BYTES) {
        const text = texts[at] ??= Route.toJson(routes[at]!)
        at++
        send(event("upsert", History.snapshotCursorOf(taken.cursor, at), text))
      }
      if (stopped) return
      if (at < routes.length) return sink.drained(next)
      catchUp(taken.cursor)
    }
    next()
  }

  join(source.heartbeats, opened)
  const resumed = since === undefined ? undefined : history.since(since)
  if (resumed === undefined) snapshot()
  else if (resumed._tag === "Changes") catchUp(since!)
  else {
    send(RESET)
    snapshot()
  }
  return stop
}
