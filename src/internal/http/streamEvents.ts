/**
 * The change stream's events (`GET /v1/routing/changes`), as Server-Sent Events: a change's, a change set's (one event
 * for all its changes), a page of the store's log netted. A change's and a batch's bytes are encoded once for every
 * stream that writes them.
 *
 * @internal
 */
import * as Route from "../../Route.js"
import type { LogRead } from "../../RouteRepository.js"
import * as ReplayRing from "../table/replayRing.js"

/** An event named `name` with the cursor `id`. */
export const event = (name: string, id: string, data: string): string => `event: ${name}\nid: ${id}\ndata: ${data}\n\n`

/** The event telling a client to drop its table: the whole table follows. */
export const RESET = "event: reset\ndata: {}\n\n"

// Each change's event, encoded once for every stream that writes it: a registry with a thousand followers writes the
// same bytes a thousand times. An encoder's bytes have a buffer of their own (never Node's shared pool), so a transport
// that takes hold of a chunk's buffer takes only this event's.
const encoder = new TextEncoder()
const encoded = new WeakMap<ReplayRing.Change, Uint8Array>()

const changeEvent = (change: ReplayRing.Change, store: string): Uint8Array => {
  let bytes = encoded.get(change)
  if (bytes === undefined) {
    bytes = encoder.encode(
      event(change._tag === "Upsert" ? "upsert" : "delete", ReplayRing.cursorOf(store, change.revision), change.text)
    )
    encoded.set(change, bytes)
  }
  return bytes
}

/** One change of a batch event, as its `events` list carries it. */
interface BatchItem {
  readonly upsert: boolean
  readonly revision: number
  readonly text: string
}

// The event of a change set (docs/batches.md): its changes in one event, whose cursor is its last revision, so a
// follower applies all of them in one step or none.
const batchText = (store: string, batch: ReplayRing.BatchMark, items: ReadonlyArray<BatchItem>): string => {
  const revision = items[items.length - 1]!.revision
  const events = items.map((item) =>
    `{"event":"${item.upsert ? "upsert" : "delete"}","revision":${item.revision},"data":${item.text}}`
  )
  return event(
    "batch",
    ReplayRing.cursorOf(store, revision),
    `{"batch":${JSON.stringify(batch.id)},` +
      (batch.description === undefined ? "" : `"description":${JSON.stringify(batch.description)},`) +
      `"revision":${revision},"events":[${events.join(",")}]}`
  )
}

// A batch's event, encoded once for every stream that writes it (kept by its last change, for the same first one).
const encodedBatches = new WeakMap<
  ReplayRing.Change,
  { readonly first: ReplayRing.Change; readonly bytes: Uint8Array }
>()

const batchEvent = (changes: ReadonlyArray<ReplayRing.Change>, store: string): Uint8Array => {
  const first = changes[0]!
  const last = changes[changes.length - 1]!
  const kept = encodedBatches.get(last)
  if (kept !== undefined && kept.first === first) return kept.bytes
  const items = changes.map((change) => ({
    upsert: change._tag === "Upsert",
    revision: change.revision,
    text: change.text
  }))
  const bytes = encoder.encode(batchText(store, first.batch!, items))
  encodedBatches.set(last, { first, bytes })
  return bytes
}

/**
 * Takes changes in revision order and gives their events: a change of no batch at once, a batch's changes as one event
 * once its last one came (or, should a batch end early, the next change of another).
 */
export const grouping = (store: string, emit: (event: Uint8Array) => void) => {
  let group: Array<ReplayRing.Change> = []
  const flush = () => {
    if (group.length > 0) emit(batchEvent(group, store))
    group = []
  }
  return {
    take: (change: ReplayRing.Change) => {
      if (group.length > 0 && change.batch?.id !== group[0]!.batch!.id) flush()
      if (change.batch === undefined) return emit(changeEvent(change, store))
      group.push(change)
      if (change.revision >= change.batch.end) flush()
    },
    flush
  }
}

/** The events of `changes`, every batch among them as one. */
export const eventsOf = (changes: ReadonlyArray<ReplayRing.Change>, store: string): Array<Uint8Array> => {
  const events: Array<Uint8Array> = []
  const { flush, take } = grouping(store, (bytes) => events.push(bytes))
  for (const change of changes) take(change)
  flush()
  return events
}

// Each route's last change among `entries` (oldest first, none of a batch), as events, in the order of those changes:
// sent in that order, every event's cursor still means "every change up to here", since a route changed again later is
// sent again later.
const netEvents = (store: string, entries: LogRead["entries"]): Array<string> => {
  const last = new Map<string, LogRead["entries"][number]>()
  for (const entry of entries) {
    last.delete(entry.routeId)
    last.set(entry.routeId, entry)
  }
  return Array.from(last.values(), (entry) => {
    const cursor = ReplayRing.cursorOf(store, entry.revision)
    return entry.after === null
      ? event("delete", cursor, `{"id":${JSON.stringify(entry.routeId)}}`)
      : event("upsert", cursor, Route.toJson(entry.after))
  })
}

/** The events of a page of the log: runs of changes of no batch netted, and each batch as one event. */
export const logEvents = (store: string, entries: LogRead["entries"]): Array<string> => {
  const events: Array<string> = []
  let from = 0
  while (from < entries.length) {
    const batch = entries[from]!.batch
    let to = from + 1
    while (to < entries.length && entries[to]!.batch === batch) to++
    const part = entries.slice(from, to)
    if (batch === undefined) events.push(...netEvents(store, part))
    else {
      events.push(batchText(
        store,
        { id: batch, end: part[part.length - 1]!.revision, description: part[0]!.batchDescription },
        part.map((entry) => ({
          upsert: entry.after !== null,
          revision: entry.revision,
          text: entry.after === null ? `{"id":${JSON.stringify(entry.routeId)}}` : Route.toJson(entry.after)
        }))
      ))
    }
    from = to
  }
  return events
}
