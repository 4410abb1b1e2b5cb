/**
 * A follower's change log: it keeps none (it holds the registry's routes, not its changes), so each page of
 * `GET /v1/routing/history` and `/{id}/history` it serves is read from the registry it follows, with the follower's
 * own read token, after the follower authenticated its caller and checked the query as for every read. The registry's
 * revisions and cursors pass through unchanged: they mean the same at every follower of it.
 *
 * The log after a revision (`after`, the follower's `RouteRepository.logAfter`), which a relay's change stream reads
 * for a cursor older than the relay's replay ring, as a registry's reads its store's: a catch-up stream from the process
 * followed (`GET /v1/routing/changes` from that cursor), read up to its `ready` or a page's worth of changes, then
 * closed. That process sends exactly what its own stream would (from its log, or its own upstream when it is a relay
 * too), and a `reset` only when it cannot resume the cursor itself, which the read gives as an incomplete log.
 *
 * Bounded: one request per page asked, answered within `LOG_TIMEOUT_MILLIS` and at most `MAX_LOG_PAGE_BYTES` (a
 * catch-up page ends early there; each of its events is bounded by `maxEventBytes`); a registry that cannot be reached,
 * refuses the token or answers anything else fails the read with `StoreUnavailable` (the API's
 * `503 store_unavailable`, with `Retry-After`; a change stream reading it closes, and its client resumes).
 *
 * @internal
 */
import { Deferred, Duration, Effect, Either, ParseResult, Redacted, Schema } from "effect"
import * as Http from "node:http"
import * as Https from "node:https"
import * as Route from "../../Route.js"
import type * as RouteRepository from "../../RouteRepository.js"
import { StoreUnavailable } from "../store/errors.js"
import { encodeCursor } from "../store/historyCursor.js"
import { optionalOf } from "../store/rules.js"
import * as ReplayRing from "../table/replayRing.js"
import * as Client from "./client.js"
import * as Decode from "./decode.js"
import type * as Sse from "./sse.js"

/** How long the registry may take to answer one page. */
export const LOG_TIMEOUT_MILLIS = 10_000

/**
 * The most bytes one page may take: 200 entries (the largest page) of two routes each at their longest fields are
 * well under it.
 */
export const MAX_LOG_PAGE_BYTES = 8 * 1024 * 1024

/** Where the registry's log is read, and with what token. */
export interface Target {
  /** `<registry>/v1/routing/history`. */
  readonly url: URL
  readonly token: Redacted.Redacted
}

/** Where a catch-up reads the process followed: its change stream, with no name (it is no member of the fleet). */
export interface Upstream {
  readonly history: Target
  readonly changes: Client.Target
}

const Entry = Schema.Struct({
  revision: Schema.Int,
  at: Schema.Date,
  actor: Schema.NullOr(Schema.String),
  action: Schema.Literal("create", "update", "delete", "restore"),
  routeId: Schema.String,
  before: Schema.NullOr(Route.Route),
  after: Schema.NullOr(Route.Route),
  restoredFrom: Schema.optional(Schema.Int)
})

const Page = Schema.parseJson(Schema.Struct({ items: Schema.Array(Entry), nextCursor: Schema.NullOr(Schema.String) }))

const unavailable = (reason: string) => new StoreUnavailable({ reason: `the followed registry's log: ${reason}` })

const urlOf = (target: Target, query: RouteRepository.HistoryQuery): URL => {
  const url = new URL(target.url)
  url.searchParams.set("limit", String(query.limit))
  if (query.before !== undefined) url.searchParams.set("cursor", encodeCursor(query.before))
  if (query.routeId !== undefined) url.searchParams.set("routeId", query.routeId)
  if (query.actor !== undefined) url.searchParams.set("actor", query.actor)
  if (query.action !== undefined) url.searchParams.set("action", query.action)
  return url
}

// The body of a 200 answer, at most MAX_LOG_PAGE_BYTES; anything else fails with why.
const fetchText = (url: URL, token: Redacted.Redacted): Effect.Effect<string, StoreUnavailable> =>
  Effect.async<string, StoreUnavailable>((resume) => {
    const client = url.protocol === "https:" ? Https : Http
    const request = client.get(url, {
      headers: { accept: "application/json", authorization: `Bearer ${Redacted.value(token)}` }
    })
    let done = false
    const end = (effect: Effect.Effect<string, StoreUnavailable>) => {
      if (done) return
      done = true
      request.destroy()
      resume(effect)
    }
    request.on("error", (error) => end(Effect.fail(unavailable(error.message))))
    request.on("response", (response) => {
      if (response.statusCode !== 200) {
        return Client.refused(response, (lost) => end(Effect.fail(unavailable(lost.reason))))
      }
      const chunks: Array<Buffer> = []
      let size = 0
      response.on("data", (chunk: Buffer) => {
        size += chunk.length
        if (size > MAX_LOG_PAGE_BYTES) {
          return end(Effect.fail(unavailable(`a page larger than ${MAX_LOG_PAGE_BYTES} bytes`)))
        }
        chunks.push(chunk)
      })
      response.on("end", () => end(Effect.succeed(Buffer.concat(chunks).toString("utf8"))))
      response.on("error", (error) => end(Effect.fail(unavailable(error.message))))
    })
    return Effect.sync(() => {
      done = true
      request.destroy()
    })
  }).pipe(
    Effect.timeoutFail({
      duration: Duration.millis(LOG_TIMEOUT_MILLIS),
      onTimeout: () => unavailable(`no answer within ${LOG_TIMEOUT_MILLIS} ms`)
    })
  )

/** One page of the registry's log, as the store's `history` gives it. */
export const history = (
  target: Target,
  query: RouteRepository.HistoryQuery
): Effect.Effect<RouteRepository.HistoryPage, StoreUnavailable> =>
  fetchText(urlOf(target, query), target.token).pipe(
    Effect.flatMap((text) =>
      Either.match(Schema.decodeUnknownEither(Page)(text), {
        onLeft: (error) =>
          Effect.fail(
            unavailable(`an answer that is not a page of the log: ${ParseResult.TreeFormatter.formatErrorSync(error)}`)
          ),
        onRight: (page) => Effect.succeed({ items: page.items, hasMore: page.nextCursor !== null })
      })
    )
  )

// What a catch-up stream has read so far.
interface Read {
  readonly entries: Array<RouteRepository.HistoryEntry>
  bytes: number
}

type Outcome = { readonly complete: boolean; readonly revision: number } | string

// A catch-up stream's change as a log entry: the stream carries the route after it (or its removal) and its revision,
// not who made it or what it replaced, which a change stream never sends on.
const entryOf = (type: string, data: string, revision: number, at: Date): RouteRepository.HistoryEntry | string => {
  let json: unknown
  try {
    json = JSON.parse(data)
  } catch {
    return `an event whose data is not JSON: ${data.slice(0, 200)}`
  }
  const id = (json as { id?: unknown } | null)?.id
  if (typeof id !== "string") return `an event that names no route: ${data.slice(0, 200)}`
  // A route this process cannot hold is left out of its table, so its followers are told it is gone, as it is here.
  const route = type === "upsert" ? Decode.decodeUpsert(json, data) : undefined
  const after = route === undefined ? null : new Route.Route(
    {
      id: route.id,
      method: route.method,
      path: route.path,
      middleware: route.middleware,
      handler: route.handler,
      createdAt: route.createdAt,
      ...optionalOf(route)
    },
    true
  )
  return { revision, at, actor: null, action: after === null ? "delete" : "update", routeId: id, before: null, after }
}

// A batch event's changes as log entries, each naming the batch (docs/batches.md: the wire form).
const batchEntries = (data: string, end: number, at: Date): Array<RouteRepository.HistoryEntry> | string => {
  const batch = Decode.parseBatch(data)
  if (typeof batch === "string") return batch
  const entries: Array<RouteRepository.HistoryEntry> = []
  for (const item of batch.events) {
    const entry = entryOf(item.event, JSON.stringify(item.data), item.revision, at)
    if (typeof entry === "string") return entry
    entries.push({
      ...entry,
      batch: batch.batch,
      batchEnd: end,
      ...(batch.description === undefined ? {} : { batchDescription: batch.description })
    })
  }
  return entries
}

// Reads a catch-up stream's events into `read` until `done` is told how it ended: its `ready`, a `reset` (or anything
// but the changes after the cursor), `limit` changes, or a page's worth of bytes.
const reader = (
  store: string,
  limit: number,
  at: Date,
  read: Read,
  done: (outcome: Outcome) => void
): Sse.Sink => {
  let finished = false
  const finish = (outcome: Outcome) => {
    finished = true
    done(outcome)
    return undefined
  }
  return {
    comment: () => undefined,
    event: ({ data, id, type }) => {
      if (finished) return undefined
      if (type === "reset") return finish({ complete: false, revision: 0 })
      if (type !== "upsert" && type !== "delete" && type !== "ready" && type !== "batch") return undefined
      const cursor = ReplayRing.parse(id)
      if (typeof cursor !== "object") return finish(`an event whose id is not a cursor: ${id.slice(0, 200)}`)
      // Another store's, or a snapshot's: the process followed no longer resumes this cursor.
      if (cursor.store !== store || cursor.routeRevision !== undefined) {
        return finish({ complete: false, revision: cursor.revision })
      }
      if (type === "ready") return finish({ complete: true, revision: cursor.revision })
      const entries = type === "batch"
        ? batchEntries(data, cursor.revision, at)
        : entryOf(type, data, cursor.revision, at)
      if (typeof entries === "string") return finish(entries)
      if (Array.isArray(entries)) read.entries.push(...entries)
      else read.entries.push(entries)
      read.bytes += data.length
      return read.entries.length >= limit || read.bytes >= MAX_LOG_PAGE_BYTES
        ? finish({ complete: true, revision: cursor.revision })
        : undefined
    }
  }
}

/**
 * The log after `revision` of `store` (the store the follower follows), as `RouteRepository.logAfter` gives it: read
 * from the process followed by a catch-up stream. Each entry is a change the stream sends (each route's last change
 * within a page, as a registry's stream nets its log), with the route after it, `actor` and `before` `null`, `action`
 * `update` or `delete`, and `at` when it was read. With `limit` 0, only the newest revision, from the registry's log.
 */
export const after = (
  upstream: Upstream,
  store: string | undefined,
  revision: number,
  limit: number
): Effect.Effect<RouteRepository.LogRead, StoreUnavailable> => {
  if (store === undefined) return Effect.fail(unavailable("the follower has not loaded the routes yet"))
  if (limit === 0) {
    return Effect.map(history(upstream.history, { limit: 1 }), (page) => ({
      store,
      revision: page.items[0]?.revision ?? 0,
      entries: [],
      complete: true
    }))
  }
  return Effect.gen(function*() {
    const at = new Date(yield* Effect.clockWith((clock) => clock.currentTimeMillis))
    const read: Read = { entries: [], bytes: 0 }
    const ended = yield* Deferred.make<Outcome>()
    const sink = reader(store, limit, at, read, (outcome) => Deferred.unsafeDone(ended, Effect.succeed(outcome)))
    const outcome = yield* Effect.raceFirst(
      Effect.mapError(
        Client.connect(upstream.changes, ReplayRing.cursorOf(store, revision), () => {}, sink),
        (lost) => unavailable(lost.reason)
      ),
      Deferred.await(ended)
    ).pipe(
      Effect.timeoutFail({
        duration: Duration.millis(LOG_TIMEOUT_MILLIS),
        onTimeout: () => unavailable(`no catch-up within ${LOG_TIMEOUT_MILLIS} ms`)
      }),
      // The changes that arrived whole before the stream was lost are good: the next read goes on after the last one.
      Effect.catchAll((error): Effect.Effect<Outcome, StoreUnavailable> => {
        const last = read.entries.at(-1)
        return last === undefined ? Effect.fail(error) : Effect.succeed({ complete: true, revision: last.revision })
      })
    )
    if (typeof outcome === "string") return yield* Effect.fail(unavailable(outcome))
    return {
      store,
      revision: outcome.complete ? outcome.revision : revision,
      entries: outcome.complete ? read.entries : [],
      complete: outcome.complete
    }
  })
}
