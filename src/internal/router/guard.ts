/**
 * What keeps a route's functions and its clients from taking a host down or holding its connections, shared by the
 * Node and the Effect routers on Node: the report of a function that misbehaved, once per route, name and kind, and
 * the deadline of a routed request's body.
 *
 * @internal
 */
import { Either, type Runtime } from "effect"
import type { IncomingMessage, ServerResponse } from "node:http"
import type { InvalidOption } from "../../InvalidOption.js"
import type * as Route from "../../Route.js"
import * as Alarms from "../alarms.js"
import * as Limits from "../limits.js"
import * as OptionChecks from "../optionChecks.js"

/** The options of both router forms. */
export interface Options {
  /**
   * Longest time, in milliseconds, the body of a routed request may take to arrive in full, counted from when the
   * route starts. Past it, a request nothing has answered yet is answered `408 request_timeout` and its connection
   * closed; an answer under way is cut; after a whole answer the connection is closed rather than kept open for the
   * rest of the body. Default 10,000 (as the routing API's); at most 2,147,483,647 (Node's longest timer).
   */
  readonly bodyTimeoutMillis?: number | undefined
}

/** The body timeout of `options`, checked. */
export const bodyTimeout = (options: Options): Either.Either<number, InvalidOption> => {
  const millis = options.bodyTimeoutMillis ?? Limits.DEFAULT_BODY_TIMEOUT_MILLIS
  const invalid = OptionChecks.positiveInteger("bodyTimeoutMillis", millis, "milliseconds", {
    most: OptionChecks.MAX_TIMER_MILLIS
  })
  return invalid === undefined ? Either.right(millis) : Either.left(invalid)
}

/** What a route function (or the host's `next` it hands a request to) can do wrong that no answer can report. */
export type Misbehaviour =
  | "answeredTwice"
  | "failedAfterAnswering"
  | "failedAfterPassingOn"
  | "brokeResponse"
  | "hostThrew"

const says: Record<Misbehaviour, string> = {
  answeredTwice: "answered twice (it wrote to the response after the response had ended, or answered again)",
  failedAfterAnswering: "failed after its answer had started",
  failedAfterPassingOn: "failed after it had passed on",
  brokeResponse: "made the response fail",
  hostThrew: "handed a request to the host's next, which threw"
}

/** Reports a misbehaviour of the function `name` of `route` (`undefined`: one of the route's functions). */
export type Report = (route: Route.StoredRoute, name: string | undefined, what: Misbehaviour, error: unknown) => void

/**
 * A report that logs each misbehaviour once per stored version of a route, function name and kind, not per request:
 * a route that misbehaves on every request would otherwise flood the log. The memory is bounded by the table: the
 * reported keys are kept in a `WeakMap` keyed by the route object the table holds, so they go when the route is
 * updated (a new object, reported anew) or deleted, and a route has at most 33 names (32 middleware and a handler)
 * times five kinds of them.
 */
export const reportOnce = (log: (message: string, error: unknown) => void): Report => {
  const reported = new WeakMap<Route.StoredRoute, Set<string>>()
  return (route, name, what, error) => {
    let keys = reported.get(route)
    if (keys === undefined) reported.set(route, keys = new Set())
    const key = name === undefined ? what : `${what} ${name}`
    if (keys.has(key)) return
    keys.add(key)
    const who = name === undefined ? "A function" : `The function ${JSON.stringify(name)}`
    log(
      `route-registry: ${who} of the route ${route.method} ${route.path} (${route.id}) ${
        says[what]
      }; logged once for this route and function, not per request`,
      error
    )
  }
}

/** `"answeredTwice"` for the error Node raises on a write after the end, else `"brokeResponse"`. */
export const kindOfResponseError = (error: unknown): Misbehaviour =>
  (error as { readonly code?: unknown } | null)?.code === "ERR_STREAM_WRITE_AFTER_END"
    ? "answeredTwice"
    : "brokeResponse"

/**
 * `true` when the request has a body (a `Content-Length` above 0, or a `Transfer-Encoding`) that has not fully
 * arrived: the only requests that need a body deadline. (A request's `complete` turns true only after the listener
 * has started, even for a request with no body, so the headers decide.)
 */
export const bodyPending = (req: IncomingMessage): boolean => {
  if (req.complete) return false
  const length = req.headers["content-length"]
  return req.headers["transfer-encoding"] !== undefined || (length !== undefined && length !== "0")
}

/** Cuts an answer that has started but not ended, so that the client cannot take it for whole. */
export const cut = (res: ServerResponse): void => {
  if (!res.writableEnded && !res.destroyed) res.destroy()
}

const closeWhenFlushed = (req: IncomingMessage, res: ServerResponse) => {
  const close = () => {
    if (!req.complete) req.socket.destroy()
  }
  if (res.writableFinished) close()
  else res.once("finish", close)
}

const expire = (req: IncomingMessage, res: ServerResponse, answer: () => boolean) => {
  if (req.complete || req.destroyed) return
  if (!res.headersSent && answer()) return
  if (res.writableEnded) closeWhenFlushed(req, res)
  else cut(res)
}

/**
 * Arms the deadline of a request whose body is still coming (`bodyPending`): when `millis` pass before it has arrived
 * in full, `answer()` answers it (the router's 408, which closes the connection) if nothing was answered yet, and
 * returns `false` when it cannot; an answer under way is cut; a whole answer is left to reach the client, and then
 * the connection is closed rather than kept for the rest of the body. The deadline goes when the request closes
 * (its body has ended, or the connection has gone); calling the returned function disarms it. It waits on `runtime`'s
 * `Clock` (alarms.ts), the TestClock under a test.
 */
export const watchBody = (
  runtime: Runtime.Runtime<never>,
  req: IncomingMessage,
  res: ServerResponse,
  millis: number,
  answer: () => boolean
): () => void => {
  const disarm = Alarms.after(runtime, millis, () => expire(req, res, answer))
  req.once("close", disarm)
  return disarm
}
