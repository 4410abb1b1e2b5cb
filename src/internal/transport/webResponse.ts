/**
 * The core's `Response` as a web `Response`, for every fetch-style form: the admin API's web handler and Hono.
 *
 * @internal
 */
import * as Problem from "../../Problem.js"
import * as Answers from "../http/answers.js"
import type { Response as CoreResponse } from "../http/exchange.js"
import * as WebStream from "./webStream.js"

const bodyOf = (response: CoreResponse, signal: AbortSignal | undefined): BodyInit | null =>
  response.stream !== undefined
    ? WebStream.readable(response.stream, { signal })
    : Answers.hasNoBody(response.status)
    ? null
    : response.body

/**
 * The web `Response`; its stream, if any, stops when `signal` aborts (the client left). A 204 or 304 is built with a
 * null body (the constructor throws otherwise); a problem's status text is its title, as in its body.
 */
export const toWeb = (response: CoreResponse, signal?: AbortSignal): Response =>
  new Response(bodyOf(response, signal), {
    status: response.status,
    statusText: Problem.titles[response.status] ?? "",
    headers: response.headers
  })
