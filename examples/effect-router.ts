/**
 * Mounting the routing API in an Effect host: its router combined with the host's own.
 *
 *   npx tsx examples/effect-router.ts    # PORT (default 3003), HOST, ROUTING_ADMIN_TOKENS, ROUTING_READ_TOKENS
 */
// The specific modules, not the package entry, which would load cluster, rpc, sql and more (EFFECT-NOTES).
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import * as HttpRouter from "@effect/platform/HttpRouter"
import * as HttpServer from "@effect/platform/HttpServer"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import { Effect, Layer } from "effect"
import * as Http from "node:http"
import * as RoutingHttpApp from "route-registry/RoutingHttpApp"
import * as Env from "./env.js"

const hostRouter = HttpRouter.empty.pipe(
  HttpRouter.get("/health", HttpServerResponse.unsafeJson({ status: "ok" }))
)

/** The host's server on `listen`; it needs the routing API's services (a store and an authenticator). */
export const ServerLive = (
  listen: { readonly port: number; readonly host: string },
  options?: RoutingHttpApp.Options
) =>
  Layer.unwrapEffect(
    Effect.map(RoutingHttpApp.router(options), (routing) => HttpServer.serve(HttpRouter.concat(hostRouter, routing)))
  ).pipe(
    // provideMerge keeps HttpServer in the output, so whoever builds the layer can ask for its address.
    Layer.provideMerge(NodeHttpServer.layer(() => Http.createServer(), listen))
  )

if (Env.isMain(import.meta.url)) {
  // runMain interrupts the program on SIGINT and SIGTERM: the server stops accepting and the layer is released.
  ServerLive({ port: Env.port(3003), host: Env.host() }).pipe(
    HttpServer.withLogAddress,
    Layer.provide(Env.services()),
    Layer.launch,
    NodeRuntime.runMain
  )
}
