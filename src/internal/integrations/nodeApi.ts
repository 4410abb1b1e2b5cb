/**
 * The routing API answered on Node's `req` and `res` for the integrations whose framework sits on `node:http`
 * (Fastify, Express): the request view the core reads, with the path relative to the mount and the body from
 * wherever the framework left it, and the answer written on `res`.
 *
 * @internal
 */
import type { Effect } from "effect"
import type { IncomingMessage, ServerResponse } from "node:http"
import * as Problem from "../../Problem.js"
import type * as RoutingHandler from "../../RoutingHandler.js"
import * as NodeHeaders from "../http/nodeHeaders.js"
import * as NodeTransport from "../http/nodeTransport.js"
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

/** Writes an answer of the core, with its status text and length; nothing when the response has already started. */
export const write = (req: IncomingMessage, res: ServerResponse, response: RoutingHandler.Response): void => {
  if (res.headersSent || res.destroyed) return
  const headers: Record<string, string | number> = { ...response.headers }
  // 204 and 304 carry no body, and a 204 no length (RFC 9110 §8.6).
  if (response.status !== 204 && response.status !== 304 && response.stream === undefined) {
    headers["content-length"] = Buffer.byteLength(response.body)
  }
  const phrase = Problem.titles[response.status]
  if (phrase === undefined) res.writeHead(response.status, headers)
  else res.writeHead(response.status, phrase, headers)
  if (response.stream !== undefined) NodeTransport.openStream(res, response.stream)
  else NodeTransport.end(req, res, response.headers, response.body)
}

/**
 * Answers the request when its path is the routing API's; `false`, having done nothing, when it is not (the request
 * is then the host's or the router's).
 */
export const serve = <F, M>(registry: Registry<F, M>, req: IncomingMessage, res: ServerResponse, view: View) => {
  const effect = registry.api.handle(requestOf(req, view))
  if (effect === undefined) return false
  const answer = registry.run(effect)
  if (answer instanceof Promise) answer.then((response) => write(req, res, response))
  else write(req, res, answer)
  return true
}
