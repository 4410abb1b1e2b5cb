/**
 * What the security suites share: a sample route, and the request core called directly, without an adapter.
 */
import { Effect, Logger, LogLevel, Redacted } from "effect"
import * as Authenticator from "route-registry/Authenticator"
import * as Route from "route-registry/Route"
import type * as RoutingHandler from "route-registry/RoutingHandler"
import { ADMIN } from "./httpContract.js"

export const sample = { method: "GET", path: "/users/:id", middleware: ["auth"], handler: "UsersController#show" }

export const staticTokens = Authenticator.makeStaticTokens([
  { token: Redacted.make(ADMIN), scopes: ["routes:read", "routes:write"] }
])

export const coreRequest = (method: "GET" | "POST"): RoutingHandler.Request => ({
  method,
  path: method === "POST" ? "/v1/routing" : `/v1/routing/${Route.makeRouteId(0)}`,
  query: "",
  header: (name) =>
    name === "authorization" ? `Bearer ${ADMIN}` : name === "content-type" ? "application/json" : undefined,
  body: () => Effect.succeed(new TextEncoder().encode(JSON.stringify(sample)))
})

export const runCore = (handler: RoutingHandler.RoutingHandler, request: RoutingHandler.Request) =>
  Effect.runPromise(Logger.withMinimumLogLevel(handler.handle(request)!, LogLevel.None))
