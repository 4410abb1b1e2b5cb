/**
 * The admin API (the routing API, `/v1/routing`) as an Effect `HttpApp`, to mount in an `HttpRouter` or serve with
 * `HttpServer`. Named `RoutingHttpApp` before 0.4.0 (a deprecated alias still).
 *
 * @since 0.4.0
 */
import * as HttpRouter from "@effect/platform/HttpRouter"
import * as HttpServerError from "@effect/platform/HttpServerError"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import { Effect, identity, Stream } from "effect"
import * as Answers from "./internal/http/answers.js"
import * as ListQuery from "./internal/http/listQuery.js"
import * as Target from "./internal/http/target.js"
import * as Body from "./internal/transport/body.js"
import * as NodeHeaders from "./internal/transport/nodeHeaders.js"
import * as NodeTransport from "./internal/transport/nodeTransport.js"
import * as WebStream from "./internal/transport/webStream.js"
import type { InvalidOption } from "./InvalidOption.js"
import * as Problem from "./Problem.js"
import * as RoutingHandler from "./RoutingHandler.js"

/**
 * @since 0.1.0
 */
export type Options = RoutingHandler.Options

/**
 * The app: answers `/v1/routing` and `/v1/routing/{id}`, and fails with `RouteNotFound` for any other path so the
 * router or server around it answers as it usually does.
 *
 * @since 0.1.0
 */
export type AdminApp = Effect.Effect<
  HttpServerResponse.HttpServerResponse,
  HttpServerError.RouteNotFound,
  HttpServerRequest.HttpServerRequest
>

// Read the transport underneath when it is known: interrupting the platform's Node stream would destroy the
// socket before the 413 could be written.
const bodyOf = (request: HttpServerRequest.HttpServerRequest) => {
  const source = request.source
  if (Body.isIncomingMessage(source)) return Body.fromIncomingMessage(source, NodeTransport.serverResponseOf(request))
  if (typeof Request !== "undefined" && source instanceof Request) return Body.fromWebRequest(source)
  return Body.fromStream(request.stream)
}

const encoder = new TextEncoder()

// The change stream, through a web stream whose queue the platform reads as fast as it sends. Closing it (a client
// too far behind) also destroys the Node connection when there is one: ending it would wait for what it holds. The
// stream then ends rather than fails: it did what it should, and the platform would log a failure.
const streamed = (
  request: HttpServerRequest.HttpServerRequest,
  response: RoutingHandler.Response,
  body: RoutingHandler.OpenBody,
  statusText: string | undefined
) => {
  const cut = () => NodeTransport.serverResponseOf(request)?.destroy()
  return HttpServerResponse.stream(
    Stream.fromReadableStream(() => WebStream.readable(body, { closed: cut }), identity).pipe(
      Stream.catchAll(() => Stream.empty)
    ),
    {
      status: response.status,
      headers: response.headers,
      contentType: response.headers["content-type"],
      ...(statusText === undefined ? {} : { statusText })
    }
  )
}

// On Node, an answer that closes the connection while the body is still coming is a stream that holds the response
// open while the rest is discarded: the platform ends the response, and so closes the connection, when it ends.
const toServerResponse = (request: HttpServerRequest.HttpServerRequest, response: RoutingHandler.Response) => {
  // A problem's status text is its title, as in its body.
  const statusText = Problem.titles[response.status]
  // The Node server of @effect/platform-node ignores statusText; Node keeps a status message set before writeHead.
  const nodeResponse = NodeTransport.serverResponseOf(request)
  if (statusText !== undefined && nodeResponse !== undefined) nodeResponse.statusMessage = statusText
  if (Answers.hasNoBody(response.status)) {
    return HttpServerResponse.empty({ status: response.status, headers: response.headers })
  }
  if (response.stream !== undefined) return streamed(request, response, response.stream, statusText)
  const options = {
    status: response.status,
    headers: response.headers,
    contentType: response.headers["content-type"],
    ...(statusText === undefined ? {} : { statusText })
  }
  const source = request.source
  if (
    !Body.isIncomingMessage(source) ||
    !NodeTransport.closesUnread(source, NodeTransport.serverResponseOf(request), response.headers)
  ) return HttpServerResponse.text(response.body, options)
  const body = encoder.encode(response.body)
  return HttpServerResponse.stream(
    Stream.concat(Stream.succeed(body), Stream.execute(NodeTransport.discarding(source))),
    { ...options, contentLength: body.length }
  )
}

/**
 * Builds the app over the services in context.
 *
 * @since 0.1.0
 */
export const make = (
  options: Options = {}
): Effect.Effect<AdminApp, InvalidOption, RoutingHandler.Services> =>
  Effect.map(
    RoutingHandler.make(options),
    (handler) =>
      Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) => {
        const source = request.source
        const effect = handler.handle({
          method: request.method,
          path: Target.pathOf(request.url),
          query: ListQuery.queryOf(request.url),
          // A router that mounted the app under a prefix (HttpRouter.mount) keeps the target as received.
          base: Target.baseOf(request.originalUrl, request.url),
          // On Node the platform's headers are Node's, which keep only the first Authorization line.
          header: Body.isIncomingMessage(source)
            ? (name) => NodeHeaders.header(source, name)
            : (name) => request.headers[name],
          remoteAddress: Body.isIncomingMessage(source) ? NodeHeaders.remoteAddress(source) : undefined,
          body: bodyOf(request)
        })
        if (effect === undefined) return Effect.fail(new HttpServerError.RouteNotFound({ request }))
        return Effect.map(effect, (response) => toServerResponse(request, response))
      })
  )

/**
 * A router serving the app at `/v1/routing` and `/v1/routing/*`, to combine with the host's own router
 * (`HttpRouter.concat`).
 *
 * @since 0.1.0
 */
export const router = (
  options: Options = {}
): Effect.Effect<
  HttpRouter.HttpRouter<HttpServerError.RouteNotFound>,
  InvalidOption,
  RoutingHandler.Services
> =>
  Effect.map(make(options), (app) =>
    HttpRouter.empty.pipe(
      HttpRouter.all(RoutingHandler.COLLECTION, app),
      HttpRouter.all(`${RoutingHandler.COLLECTION}/*`, app)
    ))
