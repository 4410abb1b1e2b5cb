/**
 * Calling the routing API with its typed client, derived from `RoutingApi`: payloads are encoded and checked by the
 * same Schemas as the server's, and every problem document arrives as a typed error.
 *
 *   ROUTING_URL=http://127.0.0.1:3000 ROUTING_TOKEN=<admin token> npx tsx examples/client.ts
 */
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import * as FetchHttpClient from "@effect/platform/FetchHttpClient"
import * as HttpApiClient from "@effect/platform/HttpApiClient"
import * as HttpClient from "@effect/platform/HttpClient"
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import { Config, Console, Effect, Schema } from "effect"
import type { Redacted } from "effect"
import * as Route from "route-registry/Route"
import * as RoutingApi from "route-registry/RoutingApi"
import * as Env from "./env.js"

/** Creates a route, reads it back, then creates one of the same method and shape to show the 409. */
export const demo = (baseUrl: string, token: Redacted.Redacted<string>) =>
  Effect.gen(function*() {
    const client = yield* HttpApiClient.make(RoutingApi.RoutingApi, {
      baseUrl,
      // The bearer scheme is documented by the API but applied here: the token is the caller's to choose.
      transformClient: HttpClient.mapRequest(HttpClientRequest.bearerToken(token))
    })
    // Decoding first gives every rule's message at once, before anything is sent.
    const payload = yield* Route.decodeCreate({ method: "GET", path: "/users/:id", handler: "Users#show" })
    const created = yield* client.routing.create({ payload })
    const found = yield* client.routing.get({ path: { id: created.id } })
    // The same method and shape again: the 409 arrives as a typed error, the problem document decoded by its schema
    // (one per code; RouteConflictProblem carries the id of the route in the way).
    const conflict = yield* client.routing.create({ payload }).pipe(
      Effect.catchIf(Schema.is(RoutingApi.RouteConflictProblem), Effect.succeed)
    )
    return { created, found, conflict }
  }).pipe(Effect.provide(FetchHttpClient.layer))

if (Env.isMain(import.meta.url)) {
  Effect.gen(function*() {
    const baseUrl = yield* Config.string("ROUTING_URL").pipe(Config.withDefault("http://127.0.0.1:3000"))
    const token = yield* Config.redacted("ROUTING_TOKEN")
    yield* Console.log(yield* demo(baseUrl, token))
  }).pipe(NodeRuntime.runMain)
}
