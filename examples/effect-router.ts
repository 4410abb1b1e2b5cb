/**
 * Mounting the routing API in an Effect host: its router combined with the host's own, and the router serving the
 * stored routes with the host's handlers (`HttpApp`s) and middleware: a small users API. Create a route through the
 * API and it serves at once:
 *
 *   curl -X POST localhost:3003/v1/routing -H "authorization: Bearer $TOKEN" -H "content-type: application/json" \
 *     -d '{"method":"GET","path":"/users/:id","middleware":["auth"],"handler":"showUser"}'
 *   curl localhost:3003/users/1 -H "authorization: Bearer anything"
 *
 *   npx tsx examples/effect-router.ts    # PORT (default 3003), HOST, ROUTING_ADMIN_TOKENS, ROUTING_READ_TOKENS
 */
// The specific modules, not the package entry, which would load cluster, rpc, sql and more (EFFECT-NOTES).
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import type * as HttpApp from "@effect/platform/HttpApp"
import * as HttpRouter from "@effect/platform/HttpRouter"
import * as HttpServer from "@effect/platform/HttpServer"
import type * as HttpServerError from "@effect/platform/HttpServerError"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import { Effect, Layer } from "effect"
import * as Http from "node:http"
import * as AdminHttpApp from "route-registry/AdminHttpApp"
import * as RouterHttpApp from "route-registry/RouterHttpApp"
import * as RouteTable from "route-registry/RouteTable"
import * as Env from "./env.js"

const hostRouter = HttpRouter.empty.pipe(
  HttpRouter.get("/health", HttpServerResponse.unsafeJson({ status: "ok" }))
)

const users: ReadonlyArray<{ readonly id: string; readonly name: string }> = [
  { id: "1", name: "Ada Lovelace" },
  { id: "2", name: "Grace Hopper" }
]

/** The host's functions for the stored routes, by the names routes give them. */
export const functions: RouterHttpApp.Functions<never, never> = {
  handlers: {
    listUsers: HttpServerResponse.unsafeJson(users),
    showUser: Effect.map(RouterHttpApp.Match, ({ params }) => {
      const user = users.find((user) => user.id === params.id)
      return user === undefined
        ? HttpServerResponse.unsafeJson({ error: `no user ${params.id}` }, { status: 404 })
        : HttpServerResponse.unsafeJson(user)
    })
  },
  middleware: {
    // Answers 401 itself, so the handler never runs, when the request carries no credentials.
    auth: (app) =>
      Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) =>
        request.headers.authorization === undefined
          ? Effect.succeed(HttpServerResponse.unsafeJson({ error: "sign in first" }, { status: 401 }))
          : app)
  }
}

/**
 * The host's server on `listen`, a `node:http` server made with `server` (its timeouts); it needs the routing API's
 * services (a store and an authenticator). The API and the router share one store and one table: a route created
 * through the API serves before its 201 is sent; both take `options.bodyTimeoutMillis`.
 */
export const ServerLive = (
  listen: { readonly port: number; readonly host: string },
  options?: AdminHttpApp.Options,
  server: Http.ServerOptions = {}
) =>
  Layer.unwrapEffect(
    Effect.gen(function*() {
      const routing = yield* AdminHttpApp.router(options)
      const storedRoutes = yield* RouterHttpApp.make(functions, { bodyTimeoutMillis: options?.bodyTimeoutMillis })
      // The host's routes and the API first; what they do not serve goes to the stored routes, and what no stored
      // route serves to the server's own 404.
      const first: HttpApp.Default<HttpServerError.RouteNotFound, HttpServerRequest.HttpServerRequest> = HttpRouter
        .concat(hostRouter, routing)
      const app = Effect.catchTag(first, "RouteNotFound", () => storedRoutes)
      return HttpServer.serve(app)
    })
  ).pipe(
    // The table over the store, and the store decorated so every change made through the API is in the table
    // before it is acknowledged. Building it loads the table: the server listens once it is loaded.
    Layer.provide(RouteTable.layer),
    // provideMerge keeps HttpServer in the output, so whoever builds the layer can ask for its address.
    Layer.provideMerge(NodeHttpServer.layer(() => Http.createServer(server), listen))
  )

if (Env.isMain(import.meta.url)) {
  // runMain interrupts the program on SIGINT and SIGTERM: the server stops accepting and the layer is released.
  const timeouts = Env.timeouts()
  ServerLive(
    { port: Env.port(3003), host: Env.host() },
    { bodyTimeoutMillis: timeouts.bodyMillis },
    Env.serverOptions(timeouts)
  ).pipe(
    HttpServer.withLogAddress,
    Layer.provide(Env.services()),
    Layer.launch,
    NodeRuntime.runMain
  )
}
