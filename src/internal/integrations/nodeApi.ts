/**
 * The routing API answered on Node's `req` and `res` for the integrations whose framework sits on `node:http`
 * (Fastify, Express): the request view the core reads, with the path relative to the mount and the body from
 * wherever the framework left it, and the answer written on `res`.
 *
 * @internal
 */
import type { Effect } from "effect"
import type { IncomingMessage, ServerResponse } from "node:http"
import type * as RoutingHandler from "../../RoutingHandler.js"
import * as NodeHeaders from "../transport/nodeHeaders.js"
import * as NodeResponse from "../transport/nodeResponse.js"
import type { Registry } from "./registry.js"

/** Where the API's request comes from: the path and query relative to the mount, the mount, the body. */
export interface View {
  /** The request target below the mount (`/v1/routing?limit=2`). */
  readonly target: string
  /** The path the registry is mounted under, without a trailing slash (`""` at the root). */
  readonly base: string
  readonly body: (maxBytes: number, timeoutMillis: number) => Effect.Effect<Uint8Array, RoutingHandler.BodyFailure>
}

const requestOf = (req: IncomingMessage, view: View): RoutingHandler.Request => {
  const query = view.target.indexOf("?")
  return {
    method: req.method ?? "GET",
    path: query === -1 ? view.target : view.target.slice(0, query),
    query: query === -1 ? "" : view.target.slice(query + 1),
    base: view.base,
    header: (name) => NodeHeaders.header(req, name),
    remoteAddress: NodeHeaders.remoteAddress(req),
    body: view.body
  }
}

/**
 * Answers the request when its path is the routing API's; `false`, having done nothing, when it is not (the request
 * is then the host's or the router's).
 */
export const serve = <F, M>(registry: Registry<F, M>, req: IncomingMessage, res: ServerResponse, view: View) => {
  const effect = registry.api.handle(requestOf(req, view))
  if (effect === undefined) return false
  const answer = registry.run(effect)
  if (answer instanceof Promise) answer.then((response) => NodeResponse.write(req, res, response))
  else NodeResponse.write(req, res, answer)
  return true
}
