/**
 * The routing API as an Effect `HttpApi`: the machine-readable contract. `openApi` is its OpenAPI 3.1 document,
 * and `HttpApiClient.make(RoutingApi)` its typed client. Every error is an RFC 9457 problem document, one schema
 * per problem code.
 *
 * @since 0.1.0
 */
import * as HttpApi from "@effect/platform/HttpApi"
import * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import * as HttpApiMiddleware from "@effect/platform/HttpApiMiddleware"
import * as HttpApiSchema from "@effect/platform/HttpApiSchema"
import * as HttpApiSecurity from "@effect/platform/HttpApiSecurity"
import * as OpenApi from "@effect/platform/OpenApi"
import { Schema } from "effect"
import { endpoint, everyEndpoint, problems } from "./internal/http/apiEndpoints.js"
import {
  BatchBody,
  BatchResult,
  ChangeEvents,
  ChangesParams,
  DryRunParams,
  HistoryPage,
  HistoryParams,
  IfMatch,
  IfNoneMatch,
  LastEventId,
  ListParams,
  Match,
  MatchParams,
  NotModified,
  RestoreBody,
  RouteHistoryParams,
  RoutePage
} from "./internal/http/apiSchemas.js"
import { Fleet, FollowerName, FollowerReport, FollowersParams } from "./internal/http/fleetSchemas.js"
import { transform } from "./internal/http/openApi.js"
import { FLEET_FOLLOWERS_PER_PRINCIPAL, FLEET_FOLLOWERS_PER_PROCESS } from "./internal/limits.js"
import * as Route from "./Route.js"

export * from "./internal/http/apiProblems.js"
export * from "./internal/http/apiSchemas.js"
export * from "./internal/http/fleetSchemas.js"

const RouteIdParam = Schema.Struct({
  id: Schema.String.annotations({
    description: "The route's id. A string that is no route's id, even one that could never be, is answered 404."
  })
})

/**
 * Documents the bearer scheme; the check itself is the library's (see `Authenticator`).
 *
 * @since 0.1.0
 */
export class BearerAuth extends HttpApiMiddleware.Tag<BearerAuth>()("route-registry/RoutingApi/BearerAuth", {
  security: { bearer: HttpApiSecurity.bearer }
}) {}

/**
 * @since 0.1.0
 */
export class RoutingGroup extends HttpApiGroup.make("routing")
  .add(
    endpoint("list")
      .setUrlParams(ListParams)
      .addSuccess(RoutePage)
      .pipe(problems("list"))
      .annotate(OpenApi.Summary, "List routes")
      .annotate(
        OpenApi.Description,
        "Needs the routes:read scope. Answers one page of routes in ascending id order (creation order). " +
          "A parameter given twice, an unknown parameter or a value breaking its rule is 400 invalid_query, " +
          "every problem listed."
      )
  )
  .add(
    endpoint("changes")
      .setUrlParams(ChangesParams)
      .setHeaders(Schema.Struct({ ...LastEventId.fields, ...FollowerName.fields }))
      .addSuccess(ChangeEvents)
      .pipe(problems("changes"))
      .annotate(OpenApi.Summary, "Follow every change")
      .annotate(
        OpenApi.Description,
        "Needs the routes:read scope. Answers text/event-stream and stays open: without a cursor, one upsert " +
          "per route, then ready, then every change as it happens; with a cursor, the changes after it, then " +
          "ready, then every change (a reset first, then every route, when this process no longer holds them). " +
          "Any query parameter but since is 400 invalid_query. With Follower-Name and the fleet:report scope the " +
          "stream joins the fleet (a name connected already is 409 follower_name_taken, a fleet at its bounds 429 " +
          "too_many_followers); without the scope it is served unlisted. A stream opened with a credential that " +
          "expires ends then, with an expired event."
      )
  )
  .add(
    endpoint("followers")
      .setUrlParams(FollowersParams)
      .addSuccess(Fleet)
      .pipe(problems("followers"))
      .annotate(OpenApi.Summary, "Where every follower stands")
      .annotate(
        OpenApi.Description,
        "Needs the routes:read scope. Answers this process's latest revision and every follower connected to it, " +
          "directly or through relays, with the revision each applied, and those that left in the last 5 minutes; " +
          "sorted by name, at most 1000 a page. With revision (and wait, seconds up to 60), answers as soon as every " +
          "connected follower applied it, or when the wait is over, with complete. With limit, cursor or behind, or " +
          "when more pages follow, also the whole fleet's counts and nextCursor (and a Link to the next page). A bad " +
          "parameter is 400 invalid_query."
      )
  )
  .add(
    endpoint("report")
      .setPayload(FollowerReport)
      .addSuccess(HttpApiSchema.NoContent)
      .pipe(problems("report"))
      .annotate(OpenApi.Summary, "Report the revision a follower applied")
      .annotate(
        OpenApi.Description,
        "Needs the routes:read and fleet:report scopes of the token that opened the stream. A follower that opened " +
          "the change stream with Follower-Name reports the revision it applied, naming the stream's Follower-Stream, " +
          "with its own followers when it is a relay (at most 10,000 entries, 4 MiB, 10 reports a second). A revision " +
          "above any this process issued is 400 invalid_report; a subtree past the fleet's bounds " +
          `(${FLEET_FOLLOWERS_PER_PRINCIPAL.toLocaleString("en-US")} followers per principal, ` +
          `${FLEET_FOLLOWERS_PER_PROCESS.toLocaleString("en-US")} per process) is 429 too_many_followers. 204.`
      )
  )
  .add(
    endpoint("match")
      .setUrlParams(MatchParams)
      .addSuccess(Match)
      .pipe(problems("match"))
      .annotate(OpenApi.Summary, "Which route serves a request")
      .annotate(
        OpenApi.Description,
        "Needs the routes:read scope. Answers the decision this process's route table makes for the request, as " +
          "its router makes it (normalising, HEAD served by GET, precedence), with every other route whose pattern " +
          "matches the path and why it does not serve. A missing or invalid method or path, or any other " +
          "parameter, is 400 invalid_query; a process that keeps no route table answers 404 not_found."
      )
  )
  .add(
    endpoint("create")
      .setPayload(Route.CreateRoute)
      .addSuccess(Route.Route, { status: 201 })
      .pipe(problems("create"))
      .annotate(OpenApi.Summary, "Create a route")
      .annotate(
        OpenApi.Description,
        "Needs the routes:write scope, or routes:write:<prefix> for a route under that prefix. Answers 201 with the stored route, its Location and its ETag. " +
          "With an Idempotency-Key, a retry gets the first answer again instead of creating twice. Every write " +
          "answers Registry-Revision, its change's revision (not on a dry run)."
      )
  )
  .add(
    endpoint("batch")
      .setUrlParams(DryRunParams)
      .setPayload(BatchBody)
      .addSuccess(BatchResult)
      .pipe(problems("batch"))
      .annotate(OpenApi.Summary, "Apply a change set")
      .annotate(
        OpenApi.Description,
        "Needs the routes:write scope, or routes:write:<prefix> for every route an operation touches, before and " +
          "after. Applies 1 to 5,000 creates, updates and deletes all or nothing, conflicts judged on the state " +
          "after the whole batch; a refused operation answers as it would alone, errors naming operations[<i>], and " +
          "nothing changes. 200 with one result per operation and Registry-Revision, the batch's last revision. " +
          "With an Idempotency-Key, a retry gets the first answer again instead of applying twice. " +
          "The body limit is its own (4 MiB by default)."
      )
  )
  .add(
    endpoint("history")
      .setUrlParams(HistoryParams)
      .addSuccess(HistoryPage)
      .pipe(problems("history"))
      .annotate(OpenApi.Summary, "Read the change log")
      .annotate(
        OpenApi.Description,
        "Needs the routes:read scope. Answers a page of the change log, newest first, with a Link to the next."
      )
  )
  .add(
    endpoint("routeHistory")
      .setPath(RouteIdParam)
      .setUrlParams(RouteHistoryParams)
      .addSuccess(HistoryPage)
      .pipe(problems("routeHistory"))
      .annotate(OpenApi.Summary, "Read one route's change log")
      .annotate(
        OpenApi.Description,
        "Needs the routes:read scope. A deleted route's history stays readable; 404 only when the log holds " +
          "nothing of the id."
      )
  )
  .add(
    endpoint("restore")
      .setPath(RouteIdParam)
      .setUrlParams(DryRunParams)
      .setHeaders(IfMatch)
      .setPayload(RestoreBody)
      .addSuccess(Route.Route)
      .addSuccess(Route.Route, { status: 201 })
      .pipe(problems("restore"))
      .annotate(OpenApi.Summary, "Restore a route to a revision")
      .annotate(
        OpenApi.Description,
        "Needs the routes:write scope, or routes:write:<prefix> for a route under that prefix. Makes the route what it was right after the change at that revision of its " +
          "log: 200 for a route still stored (If-Match honoured), 201 with a new id for a deleted one. Answers " +
          "Registry-Revision, the revision of the restore."
      )
  )
  .add(
    endpoint("get")
      .setPath(RouteIdParam)
      .setHeaders(IfNoneMatch)
      .addSuccess(Route.Route)
      .addError(NotModified)
      .pipe(problems("get"))
      .annotate(OpenApi.Summary, "Get a route by id")
      .annotate(
        OpenApi.Description,
        "Needs the routes:read scope. Answers the route with its ETag, or 304 when If-None-Match names that tag."
      )
  )
  .add(
    endpoint("update")
      .setPath(RouteIdParam)
      .setHeaders(IfMatch)
      .setPayload(Route.PatchRoute)
      .addSuccess(Route.Route)
      .pipe(problems("update"))
      .annotate(OpenApi.Summary, "Update a route")
      .annotate(
        OpenApi.Description,
        "Needs the routes:write scope, or routes:write:<prefix> for a route under that prefix. The fields given replace the stored ones; id and createdAt never change. " +
          "Answers the whole updated route with its new ETag; a patch that changes nothing keeps the ETag. " +
          "Registry-Revision and ?dryRun=true as on create."
      )
  )
  .add(
    endpoint("delete")
      .setPath(RouteIdParam)
      .setHeaders(IfMatch)
      .addSuccess(HttpApiSchema.NoContent)
      .pipe(problems("delete"))
      .annotate(OpenApi.Summary, "Delete a route")
      .annotate(
        OpenApi.Description,
        "Needs the routes:write scope, or routes:write:<prefix> for a route under that prefix. Answers 204 without a body; its method and shape are free again at once. " +
          "Registry-Revision and ?dryRun=true as on create."
      )
  )
  .pipe(everyEndpoint)
  .middleware(BearerAuth)
  .annotate(OpenApi.Description, "Route definitions: create, read, list, update and delete them.")
{}

/**
 * @since 0.1.0
 */
export class RoutingApi extends HttpApi.make("route-registry")
  .add(RoutingGroup)
  .annotate(OpenApi.Title, "Route registry")
  .annotate(OpenApi.Version, "1")
  .annotate(
    OpenApi.Description,
    "Stores route definitions: an HTTP method and a path pattern bound to ordered middleware names and a handler. " +
      "Every request needs a bearer token; every error is an RFC 9457 problem document with a stable code."
  )
  .annotate(OpenApi.Transform, transform)
{}

/**
 * The OpenAPI 3.1 document of the API.
 *
 * @since 0.1.0
 */
export const openApi: OpenApi.OpenAPISpec = OpenApi.fromApi(RoutingApi)
