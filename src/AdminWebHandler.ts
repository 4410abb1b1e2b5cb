/**
 * The admin API (the routing API, `/v1/routing`) as a fetch-style handler `(Request) => Promise<Response>`, for Hono,
 * Bun, Deno and any host built on the web `Request`/`Response` classes. A path outside `/v1/routing` is answered `404`
 * with the problem code `not_found`: route only `/v1/routing` and `/v1/routing/*` to it to keep the rest for the host.
 * Named `WebHandler` before 0.4.0 (a deprecated alias still).
 *
 * @since 0.4.0
 */
import type { Layer } from "effect"
import { Effect, Exit } from "effect"
import * as AdapterLayer from "./internal/http/adapterLayer.js"
import * as Runner from "./internal/http/runner.js"
import * as Body from "./internal/transport/body.js"
import * as WebResponse from "./internal/transport/webResponse.js"
import type { InvalidOption } from "./InvalidOption.js"
import * as RoutingHandler from "./RoutingHandler.js"

/**
 * @since 0.1.0
 */
export interface Handler {
  (request: Request): Promise<Response>
  /**
   * Ends every change stream open now (`GET /v1/routing/changes`), whose followers resume from their cursors: call it
   * when shutting down. `dispose` calls it first.
   *
   * @since 0.4.0
   */
  readonly closeStreams: () => void
}

/**
 * A handler that owns its services; `dispose` releases them.
 *
 * @since 0.1.0
 */
export interface DisposableHandler extends Handler {
  readonly dispose: () => Promise<void>
}

/**
 * @since 0.1.0
 */
export type Options = RoutingHandler.Options

/**
 * The handler over the services in context, run on the calling runtime.
 *
 * @since 0.1.0
 */
export const make = (
  options: Options = {}
): Effect.Effect<Handler, InvalidOption, RoutingHandler.Services> =>
  Effect.gen(function*() {
    const handler = yield* RoutingHandler.make(options)
    const start = Runner.make(yield* Effect.runtime<never>())
    const serve = (request: Request): Promise<Response> => {
      const url = new URL(request.url)
      const effect = handler.handle({
        method: request.method,
        path: url.pathname,
        query: url.search.slice(1),
        header: (name) => request.headers.get(name) ?? undefined,
        body: Body.fromWebRequest(request)
      })
      const signal = request.signal
      if (effect === undefined) return Promise.resolve(WebResponse.toWeb(RoutingHandler.notFound, signal))
      return new Promise((resolve, reject) =>
        Runner.observe(start(effect), (exit) => {
          try {
            resolve(WebResponse.toWeb(Exit.isSuccess(exit) ? exit.value : RoutingHandler.internalError, signal))
          } catch (error) {
            reject(error)
          }
        })
      )
    }
    return Object.assign(serve, { closeStreams: handler.closeStreams })
  })

/**
 * Builds the services of `layer` now and returns the handler; `dispose` releases the services. Rejects with
 * `InvalidOption`, before building anything, when an option is out of its range.
 *
 * @since 0.1.0
 */
export const fromLayer = <E>(
  layer: Layer.Layer<RoutingHandler.Services, E>,
  options: Options = {}
): Promise<DisposableHandler> => AdapterLayer.fromLayer(layer, options, make)
