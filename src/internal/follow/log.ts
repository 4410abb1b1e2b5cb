/**
 * A follower's change log: it keeps none (it holds the registry's routes, not its changes), so each page of
 * `GET /v1/routing/history` and `/{id}/history` it serves is read from the registry it follows, with the follower's
 * own read token, after the follower authenticated its caller and checked the query as for every read. The registry's
 * revisions and cursors pass through unchanged: they mean the same at every follower of it.
 *
 * Bounded: one request per page asked, answered within `LOG_TIMEOUT_MILLIS` and at most `MAX_LOG_PAGE_BYTES`; a
 * registry that cannot be reached, refuses the token or answers anything else fails the read with `StoreUnavailable`
 * (the API's `503 store_unavailable`, with `Retry-After`).
 *
 * @internal
 */
import { Duration, Effect, Either, ParseResult, Redacted, Schema } from "effect"
import * as Http from "node:http"
import * as Https from "node:https"
import * as Route from "../../Route.js"
import type * as RouteRepository from "../../RouteRepository.js"
import { StoreUnavailable } from "../store/errors.js"
import { encodeCursor } from "../store/historyCursor.js"
import * as Client from "./client.js"

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
