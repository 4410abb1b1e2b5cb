/**
 * Calling the routing API with its typed client, derived from `RoutingApi`: payloads are encoded and checked by the
 * same Schemas as the server's, and every problem document arrives as a typed error. Each run works under a path
 * prefix of its own and deletes what it created, so it can run again and again against the same server.
 *
 *   ROUTING_URL=http://127.0.0.1:3000 ROUTING_TOKEN=<admin token> npx tsx examples/client.ts
 */
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import * as FetchHttpClient from "@effect/platform/FetchHttpClient"
import * as HttpApiClient from "@effect/platform/HttpApiClient"
import * as HttpClient from "@effect/platform/HttpClient"
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import { Console, Effect, Redacted, Schema } from "effect"
import * as Route from "route-registry/Route"
import * as RoutingApi from "route-registry/RoutingApi"
import * as Env from "./env.js"

/**
 * Creates a route, reads it back, creates one of the same method and shape to show the 409, lists the run's routes,
 * adds a middleware to the route (only if nobody changed it meanwhile: `If-Match`), then deletes it.
 */
export const demo = (baseUrl: string, token: Redacted.Redacted<string>) =>
  Effect.gen(function*() {
    const client = yield* HttpApiClient.make(RoutingApi.RoutingApi, {
      baseUrl,
      // The bearer scheme is documented by the API but applied here: the token is the caller's to choose.
      transformClient: HttpClient.mapRequest(HttpClientRequest.bearerToken(token))
    })
    const prefix = `/demo-${crypto.randomUUID().slice(0, 8)}/`
    // Decoding first gives every rule's message at once, before anything is sent.
    const payload = yield* Route.decodeCreate({ method: "GET", path: `${prefix}users/:id`, handler: "Users#show" })
    // `withResponse` gives the HTTP response too, for its ETag: the version of the route to change.
    const [created, response] = yield* client.routing.create({ payload, withResponse: true })
    const found = yield* client.routing.get({ path: { id: created.id }, headers: {} })
    // The same method and shape again: the 409 arrives as a typed error, the problem document decoded by its schema
    // (one per code; RouteConflictProblem carries the id of the route in the way).
    const conflict = yield* client.routing.create({ payload }).pipe(
      Effect.catchIf(Schema.is(RoutingApi.RouteConflictProblem), Effect.succeed)
    )
    const page = yield* client.routing.list({ urlParams: { pathPrefix: prefix, limit: 10 } })
    const patch = yield* Schema.decodeUnknown(Route.PatchRoute)({ middleware: ["auth"] })
    const [updated, updatedResponse] = yield* client.routing.update({
      path: { id: created.id },
      headers: { "if-match": response.headers["etag"] },
      payload: patch,
      withResponse: true
    })
    yield* client.routing.delete({ path: { id: created.id }, headers: { "if-match": updatedResponse.headers["etag"] } })
    return { created, found, conflict, page, updated }
  }).pipe(Effect.provide(FetchHttpClient.layer))

if (Env.isMain(import.meta.url)) {
  const token = process.env.ROUTING_TOKEN || Env.fail("set ROUTING_TOKEN to a token with routes:read and routes:write")
  const baseUrl = process.env.ROUTING_URL || "http://127.0.0.1:3000"
  Effect.flatMap(demo(baseUrl, Redacted.make(token)), Console.log).pipe(NodeRuntime.runMain)
}
