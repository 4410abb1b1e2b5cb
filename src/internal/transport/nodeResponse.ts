/**
 * The one writer of the core's `Response` onto a Node `ServerResponse`, for every Node form: the admin API's listener,
 * the router's listener and the integrations on `node:http` (Express, Fastify).
 *
 * @internal
 */
import type { IncomingMessage, ServerResponse } from "node:http"
import * as Problem from "../../Problem.js"
import * as Answers from "../http/answers.js"
import type { Response } from "../http/exchange.js"
import * as NodeTransport from "./nodeTransport.js"

/**
 * An answer's head as `writeHead` takes it: name, value, name, value …, with its `Content-Length` unless it has no
 * body. An explicit length spares the chunked encoding; 204 and 304 have no body, and a 204 must not carry a length
 * (RFC 9110 §8.6).
 */
const headOf = (response: Response): Array<string> => {
  const head: Array<string> = []
  const headers = response.headers
  for (const name in headers) head.push(name, headers[name]!)
  if (!Answers.hasNoBody(response.status) && response.stream === undefined) {
    head.push("content-length", String(Buffer.byteLength(response.body)))
  }
  return head
}

/** Writes an answer of the core, with its status text and length; nothing when the response has already started. */
export const write = (req: IncomingMessage, res: ServerResponse, response: Response): void => {
  if (res.headersSent || res.destroyed) return
  // A problem's status line says its title, as its body does.
  const head = Answers.isReused(response) ? (response.nodeHead ??= headOf(response)) : headOf(response)
  const phrase = Problem.titles[response.status]
  if (phrase === undefined) res.writeHead(response.status, head)
  else res.writeHead(response.status, phrase, head)
  if (response.stream !== undefined) NodeTransport.openStream(res, response.stream)
  else NodeTransport.end(req, res, response.headers, response.body)
}
