/**
 * The admin API (the routing API, `/v1/routing`) as a Node request listener `(req, res, next?)`, for `node:http`,
 * Express and Fastify. It works on Node's `req` and `res` directly: no per-request platform machinery stands between
 * the socket and the core. Named `NodeListener` before 0.4.0 (a deprecated alias still).
 *
 * @since 0.4.0
 */
import type { Layer } from "effect"
import { Cause, Effect, Exit } from "effect"
import type { IncomingMessage, ServerResponse } from "node:http"
import * as AdapterLayer from "./internal/http/adapterLayer.js"
import * as ListQuery from "./internal/http/listQuery.js"
import * as Runner from "./internal/http/runner.js"
import * as Target from "./internal/http/target.js"
import * as Body from "./internal/transport/body.js"
import * as NodeHeaders from "./internal/transport/nodeHeaders.js"
import * as NodeResponse from "./internal/transport/nodeResponse.js"
import * as NodeTransport from "./internal/transport/nodeTransport.js"
import type { InvalidOption } from "./InvalidOption.js"
import * as RoutingHandler from "./RoutingHandler.js"

/**
 * A Node request listener. With `next` (Express, Connect), a request outside `/v1/routing` is passed on; without
 * it (plain `node:http`), it is answered `404` with the problem code `not_found`.
 *
 * @since 0.1.0
 */
export interface Listener {
  (req: IncomingMessage, res: ServerResponse, next?: (error?: unknown) => void): void
  /**
   * Ends every change stream open now (`GET /v1/routing/changes`), whose followers resume from their cursors: call it
   * when shutting down, as `server.close()` waits for open connections. `dispose` calls it first.
   *
   * @since 0.4.0
   */
  readonly closeStreams: () => void
}

/**
 * A listener that owns its services; `dispose` releases them (closing, for instance, a database pool).
 *
 * @since 0.1.0
 */
export interface DisposableListener extends Listener {
  readonly dispose: () => Promise<void>
}

/**
 * @since 0.1.0
 */
export type Options = RoutingHandler.Options

class NodeRequest implements RoutingHandler.Request {
  constructor(readonly req: IncomingMessage, readonly res: ServerResponse, readonly path: string) {}
  get method() {
    return this.req.method ?? "GET"
  }
  get query() {
    return ListQuery.queryOf(this.req.url ?? "")
  }
  get base() {
    // Express and Connect cut a mount path from `req.url` and keep the target as received in `originalUrl`.
    return Target.baseOf((this.req as { readonly originalUrl?: unknown }).originalUrl, this.req.url ?? "/")
  }
  header(name: string) {
    return NodeHeaders.header(this.req, name)
  }
  get remoteAddress() {
    return NodeHeaders.remoteAddress(this.req)
  }
  body(maxBytes: number, timeoutMillis: number) {
    return Body.fromIncomingMessage(this.req, this.res)(maxBytes, timeoutMillis)
  }
}

const respond = (
  log: (effect: Effect.Effect<void>) => void,
  req: IncomingMessage,
  res: ServerResponse,
  exit: Exit.Exit<RoutingHandler.Response>
) => {
  // The core answers every failure; a fiber that ends without an answer was interrupted from outside.
  if (Exit.isFailure(exit)) log(Effect.logWarning("route-registry: a request ended without an answer", exit.cause))
  try {
    NodeResponse.write(req, res, Exit.isSuccess(exit) ? exit.value : RoutingHandler.internalError)
  } catch (error) {
    // Node refused the response (an invalid header value, say): answer 500 rather than throw into the host.
    log(Effect.logError("route-registry: could not write a response", Cause.die(error)))
    if (res.headersSent) res.destroy()
    else NodeResponse.write(req, res, RoutingHandler.internalError)
  }
}

/**
 * The listener over the services in context, run on the calling runtime (its logger, clock and tracer).
 *
 * @since 0.1.0
 */
export const make = (
  options: Options = {}
): Effect.Effect<Listener, InvalidOption, RoutingHandler.Services> =>
  Effect.gen(function*() {
    const handler = yield* RoutingHandler.make(options)
    const start = Runner.make(yield* Effect.runtime<never>())
    const log = (effect: Effect.Effect<void>) => Runner.observe(start(effect), () => {})
    const listener = (req: IncomingMessage, res: ServerResponse, next?: (error?: unknown) => void) => {
      const effect = handler.handle(new NodeRequest(req, res, Target.pathOf(req.url ?? "/")))
      if (effect === undefined) {
        if (next === undefined) return NodeResponse.write(req, res, RoutingHandler.notFound)
        // The host answers as if Node had sent the 100 itself (as it does without a "checkContinue" listener).
        NodeTransport.sendContinue(req, res)
        return next()
      }
      Runner.observe(start(effect), (exit) => respond(log, req, res, exit))
    }
    return Object.assign(listener, { closeStreams: handler.closeStreams })
  })

/**
 * Builds the services of `layer` now (so a bad configuration or an unreachable database fails here, not on the
 * first request) and returns the listener; `dispose` releases the services. Rejects with `InvalidOption`, before
 * building anything, when an option is out of its range.
 *
 * @since 0.1.0
 */
export const fromLayer = <E>(
  layer: Layer.Layer<RoutingHandler.Services, E>,
  options: Options = {}
): Promise<DisposableListener> => AdapterLayer.fromLayer(layer, options, make)
