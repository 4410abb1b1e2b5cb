/**
 * The routing API's payloads, parameters and headers, as `RoutingApi` declares and re-exports them.
 *
 * @internal
 */
import * as HttpApiSchema from "@effect/platform/HttpApiSchema"
import { Schema } from "effect"
import * as Route from "../../Route.js"
import * as Limits from "../limits.js"

/**
 * `304 Not Modified` to a get sent with `If-None-Match`: the caller's copy is current. The typed client fails with
 * it, so a caller that sent the header catches it by tag (`Effect.catchTag("NotModified", …)`).
 *
 * @since 0.2.0
 */
export class NotModified extends HttpApiSchema.EmptyError<NotModified>()({ tag: "NotModified", status: 304 }) {}

/**
 * One page of a listing: routes in ascending id order, and the cursor of the next page (`null` on the last page).
 *
 * @since 0.2.0
 */
export const RoutePage = Schema.Struct({
  items: Schema.Array(Route.Route),
  nextCursor: Schema.NullOr(Schema.String).annotations({
    description: "Pass it as cursor to get the next page, with the same filters; null exactly when no route follows."
  })
}).annotations({ identifier: "RoutePage" })

/**
 * The query of a listing. Every parameter is optional; the filters combine with AND. Values are decoded as
 * `URLSearchParams` decodes them (`+` is a space).
 *
 * @since 0.2.0
 */
export const ListParams = Schema.Struct({
  limit: Schema.optional(
    Schema.NumberFromString.pipe(Schema.int(), Schema.between(1, Limits.MAX_PAGE_SIZE)).annotations({
      jsonSchema: {
        type: "integer",
        minimum: 1,
        maximum: Limits.MAX_PAGE_SIZE,
        default: Limits.DEFAULT_PAGE_SIZE,
        description: "Most routes in the page, written in decimal digits only (no sign, exponent or fraction)."
      }
    })
  ),
  cursor: Schema.optional(Schema.String.annotations({
    description: "The nextCursor of a previous page, unchanged; it works with any filters. Any other value is refused."
  })),
  method: Schema.optional(Route.HttpMethod.annotations({ description: "Only routes with exactly this method." })),
  pathPrefix: Schema.optional(
    Schema.String.pipe(Schema.startsWith("/"), Schema.maxLength(Route.MAX_PATH_LENGTH)).annotations({
      title: "Path prefix",
      description: "Only routes whose path starts with this string, compared byte for byte (% and _ are literal)."
    })
  ),
  handler: Schema.optional(Route.HandlerName.annotations({ description: "Only routes with exactly this handler." })),
  middleware: Schema.optional(
    Route.MiddlewareName.annotations({ description: "Only routes whose middleware list contains this name." })
  ),
  q: Schema.optional(
    Schema.String.pipe(Schema.minLength(1), Schema.maxLength(Limits.MAX_SEARCH_LENGTH)).annotations({
      description: "Only routes whose path, handler, one of whose middleware names, description or one of whose tags " +
        "contains this text, compared byte for byte."
    })
  ),
  enabled: Schema.optional(
    Schema.Literal("true", "false").annotations({
      description: "Only enabled routes (true) or only disabled ones (false)."
    })
  ),
  tag: Schema.optional(Route.Tag.annotations({ description: "Only routes carrying this tag." }))
})

const tagList = "* or a comma-separated list of entity tags, as ETag printed them"

/**
 * `If-Match` on an update or a delete: when it names no current tag of the route, the answer is 412 and nothing
 * changes.
 *
 * @since 0.2.0
 */
export const IfMatch = Schema.Struct({
  "if-match": Schema.optional(Schema.String.annotations({
    description: `Change the route only if its current ETag is one of these (${tagList}); otherwise 412.`
  }))
})

/**
 * `If-None-Match` on a get: when it names the route's current tag, the answer is 304 without a body.
 *
 * @since 0.2.0
 */
export const IfNoneMatch = Schema.Struct({
  "if-none-match": Schema.optional(Schema.String.annotations({
    description: `Answer 304 without a body if the route's current ETag is one of these (${tagList}).`
  }))
})

/**
 * The change stream as the API describes it: Server-Sent Events, text that does not end while the client listens.
 *
 * @since 0.4.0
 */
export const ChangeEvents = Schema.String.pipe(
  HttpApiSchema.withEncoding({ kind: "Text", contentType: "text/event-stream" })
).annotations({
  identifier: "ChangeEvents",
  description: "Server-Sent Events: upsert (data: a route, as a get answers it), delete (data: {\"id\"}), ready " +
    "(data: {\"routes\": n}) and reset (data: {}); upsert, delete and ready carry an id, the cursor to resume from. " +
    "A comment line (:) is sent at least every 15 s."
})

/**
 * The query of the change stream: at most the cursor to resume from.
 *
 * @since 0.4.0
 */
export const ChangesParams = Schema.Struct({
  since: Schema.optional(Schema.String.annotations({
    description: "The id of the last event received, to resume after it; without it, the stream starts with every " +
      "route. A cursor this process cannot resume from is answered with a reset event; one this API never issued " +
      "is refused."
  }))
})

/**
 * The header an EventSource resumes with; it wins over `since`.
 *
 * @since 0.4.0
 */
export const LastEventId = Schema.Struct({
  "last-event-id": Schema.optional(Schema.String.annotations({
    description: "The id of the last event received (an EventSource sends it when it reconnects); it wins over since."
  }))
})

/**
 * The question of `GET /v1/routing/match`: a request's method and target.
 *
 * @since 0.4.0
 */
export const MatchParams = Schema.Struct({
  method: Route.HttpMethod.annotations({ description: "The request's method, as the router receives it." }),
  path: Schema.String.pipe(Schema.startsWith("/")).annotations({
    description: "The request's target: its path, optionally with a query string (which query conditions read), as " +
      "the router receives it (percent-escapes included: send % as %25, + as %2B and & as %26 in this parameter)."
  }),
  host: Schema.optional(Schema.String.annotations({
    description: "The request's Host (a port is ignored), which host conditions read."
  })),
  header: Schema.optional(
    Schema.Union(Schema.String, Schema.Array(Schema.String)).annotations({
      description: "A request header as name:value, which header conditions read; repeat it for each header (at most " +
        "32)."
    })
  ),
  key: Schema.optional(Schema.String.annotations({
    description: "The key a route's split would read from the request (its header's, cookie's or query " +
      "parameter's value): the answer then gives the split's choice for it. Empty or left out: no key."
  }))
})

/**
 * The answer of `GET /v1/routing/match`: the decision of this process's table (`outcome`, and for a route the route
 * and its parameters), the methods routes serve the path with (`allow`), and every other route whose pattern matches
 * the path with why it does not serve the request.
 *
 * @since 0.4.0
 */
export const Match = Schema.Struct({
  outcome: Schema.Literal("route", "method_not_allowed", "not_found", "bad_path"),
  route: Schema.NullOr(Route.Route),
  params: Schema.NullOr(Schema.Record({ key: Schema.String, value: Schema.String })),
  allow: Schema.Array(Schema.String),
  servedByHost: Schema.optional(Schema.String.annotations({
    description: "Present only for a path the host serves itself: the path it declares that takes this one " +
      "(\"/docs\", or \"/static/*\" for a path and everything below it). The outcome is then not_found, whatever " +
      "the method: no stored route serves the path, the host does."
  })),
  split: Schema.optional(
    Schema.Struct({
      key: Schema.NullOr(Schema.String),
      bucket: Schema.NullOr(Schema.Int.pipe(Schema.between(0, 9_999))),
      handler: Schema.String
    }).annotations({
      description: "Present only beside a route with a split: the handler a request carrying `key` (no override) " +
        "reaches, and the key's bucket; key and bucket null when no key was given."
    })
  ),
  candidates: Schema.Array(Schema.Struct({
    route: Route.Route,
    reason: Schema.String,
    condition: Schema.optional(Schema.String.annotations({
      description: "Present when the route's conditions alone kept it from serving: the one the request fails " +
        "(when.host, when.headers[0], when.query[1], as the route's when lists them)."
    }))
  }))
}).annotations({
  identifier: "Match",
  description: "route and params are null unless outcome is route. allow is sorted, with HEAD wherever GET is; " +
    "empty for not_found and bad_path. candidates come the most specific first, each with a sentence saying why it " +
    "does not serve: another method, or the segment and the rule of precedence by which the serving route beats it " +
    "(for a path the host serves itself, every stored route matching it, because the host serves it)."
})

/**
 * `dryRun=true` on a write: checked and answered as the write would be, but nothing is stored (no revision, no log
 * entry, no change event, no `Registry-Revision`).
 *
 * @since 0.4.0
 */
export const DryRunParams = Schema.Struct({
  dryRun: Schema.optional(
    Schema.Literal("true").annotations({
      description: "true: check and answer the write exactly as it would be, but store nothing (no revision, no log " +
        "entry, no change event). Any other value is 400 invalid_query."
    })
  )
})

/**
 * One entry of the change log: the change at `revision`, who made it, and the route before and after it.
 *
 * @since 0.4.0
 */
export const HistoryEntry = Schema.Struct({
  revision: Schema.Int.annotations({
    description: "The change's revision: increasing in the order changes took effect."
  }),
  at: Schema.String.annotations({ description: "When the change took effect, RFC 3339 UTC with milliseconds." }),
  actor: Schema.NullOr(Schema.String).annotations({ description: "The principal that made it, or null." }),
  action: Schema.Literal("create", "update", "delete", "restore"),
  routeId: Route.RouteId,
  before: Schema.NullOr(Route.Route),
  after: Schema.NullOr(Route.Route),
  restoredFrom: Schema.optional(Schema.Int.annotations({ description: "The revision a restore went back to." })),
  batch: Schema.optional(Schema.String.annotations({ description: "The change set the change was part of." })),
  batchDescription: Schema.optional(
    Schema.String.annotations({ description: "The description of the change set, when it was given one." })
  )
}).annotations({ identifier: "HistoryEntry" })

/**
 * One page of the change log, newest first.
 *
 * @since 0.4.0
 */
export const HistoryPage = Schema.Struct({
  items: Schema.Array(HistoryEntry),
  nextCursor: Schema.NullOr(Schema.String)
}).annotations({ identifier: "HistoryPage" })

const historyFilters = {
  limit: Schema.optional(
    Schema.NumberFromString.pipe(Schema.int(), Schema.between(1, 200)).annotations({
      jsonSchema: { type: "integer", minimum: 1, maximum: 200, default: 50, description: "Most entries in the page." }
    })
  ),
  cursor: Schema.optional(Schema.String.annotations({ description: "The nextCursor of a previous page, unchanged." })),
  actor: Schema.optional(Schema.String.annotations({ description: "Only entries of changes this principal made." })),
  batch: Schema.optional(Schema.String.annotations({ description: "Only the entries of this change set." })),
  action: Schema.optional(
    Schema.Literal("create", "update", "delete", "restore").annotations({
      description: "Only entries of this kind of change."
    })
  )
}

/**
 * The query of `GET /v1/routing/history`.
 *
 * @since 0.4.0
 */
export const HistoryParams = Schema.Struct({
  ...historyFilters,
  routeId: Schema.optional(Route.RouteId.annotations({ description: "Only entries of this route." }))
})

/**
 * The query of `GET /v1/routing/{id}/history`.
 *
 * @since 0.4.0
 */
export const RouteHistoryParams = Schema.Struct(historyFilters)

/**
 * The body of a restore: the revision of the route's log to go back to.
 *
 * @since 0.4.0
 */
export const RestoreBody = Schema.Struct({ revision: Schema.Int.pipe(Schema.positive()) })

const ETagField = Schema.String.annotations({ description: "An ETag of the route, as If-Match takes it." })

/**
 * One operation of a change set.
 *
 * @since 0.5.0
 */
export const BatchOperation = Schema.Union(
  Schema.Struct({ op: Schema.Literal("create"), route: Route.CreateRoute }),
  Schema.Struct({
    op: Schema.Literal("update"),
    id: Route.RouteId,
    patch: Route.PatchRoute,
    ifMatch: Schema.optional(ETagField)
  }),
  Schema.Struct({ op: Schema.Literal("delete"), id: Route.RouteId, ifMatch: Schema.optional(ETagField) })
).annotations({ identifier: "BatchOperation" })

/**
 * The body of `POST /v1/routing/batch`.
 *
 * @since 0.5.0
 */
export const BatchBody = Schema.Struct({
  operations: Schema.Array(BatchOperation).pipe(Schema.minItems(1), Schema.maxItems(5_000)),
  description: Schema.optional(Schema.String.pipe(Schema.maxLength(1_024)))
}).annotations({ identifier: "BatchBody" })

/**
 * What a change set did: one result per operation, in order (`batch` and the revisions `null` on a dry run).
 *
 * @since 0.5.0
 */
export const BatchResult = Schema.Struct({
  batch: Schema.NullOr(Schema.String).annotations({
    description: "The batch's id: GET /v1/routing/history?batch=<id>."
  }),
  revision: Schema.NullOr(Schema.Int).annotations({ description: "The revision of the batch's last change." }),
  results: Schema.Array(Schema.Struct({
    status: Schema.Literal(201, 200, 204),
    route: Schema.NullOr(Route.Route),
    etag: Schema.NullOr(Schema.String),
    revision: Schema.NullOr(Schema.Int)
  }))
}).annotations({ identifier: "BatchResult" })
