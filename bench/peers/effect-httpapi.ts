/**
 * The API as an Effect user would write it by hand: the library's `RoutingApi` implemented with `HttpApiBuilder`
 * (handlers over a `Map` of `Route`s, and the `BearerAuth` security middleware) and served by
 * `HttpApiBuilder.serve` on `NodeHttpServer`.
 *
 * Stock HttpApi cannot produce some of the contract's answers, so this adds the least that passes the suite:
 * - the security handler re-reads the Authorization header (`HttpApiSecurity.bearer` does not check the scheme),
 *   checks the scope by method (the middleware cannot know the endpoint), then the content type and a declared
 *   Content-Length (there is no other hook between routing and payload decoding), and refuses by dying with the
 *   answer as an `HttpServerResponse` (its error schemas carry no WWW-Authenticate header);
 * - an `HttpApiBuilder.middleware` catch-all that, for a POST, gives the payload decoder a `json` read from the
 *   Node request with a limit and a timeout (stock reading has neither: a streamed body past the limit could not be
 *   a 413, nor a stalled one a 408), answering malformed JSON and fields outside the create body (the schema would
 *   drop them silently) as problems; turns a failed payload decode into `invalid_route` with
 *   `Route.validateCreate`'s errors; and answers what the router leaves as an empty 404 on the API's own paths:
 *   other methods (405) and the empty id (404 route_not_found, after the token check).
 */
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import * as HttpApp from "@effect/platform/HttpApp"
import * as HttpRouter from "@effect/platform/HttpRouter"
import * as HttpServer from "@effect/platform/HttpServer"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import { Cause, Effect, Either, Layer, ManagedRuntime, Option } from "effect"
import * as Http from "node:http"
import * as Problem from "route-registry/Problem"
import * as Route from "route-registry/Route"
import * as RoutingApi from "route-registry/RoutingApi"
import type { Answer, Options, Started } from "./shared.js"
import {
  COLLECTION,
  COLLECTION_ALLOW,
  conflictDetail,
  DEFAULT_BODY_TIMEOUT_MILLIS,
  DEFAULT_MAX_BODY_BYTES,
  EMPTY_BODY,
  INCOMPLETE_BODY,
  invalidRoute,
  isJson,
  ITEM_PREFIX,
  makeAuthorizer,
  malformedJson,
  memoryStore,
  methodNotAllowed,
  notFoundDetail,
  readBody,
  ROUTE_ALLOW,
  routeNotFound,
  runMain,
  seedSync,
  timedOut,
  tooLarge,
  unsupportedMediaType
} from "./shared.js"

const response = (answer: Answer) =>
  HttpServerResponse.text(answer.body, {
    status: answer.status,
    headers: answer.headers,
    contentType: answer.headers["content-type"]
  })

const CREATE_FIELDS = new Set(["method", "path", "middleware", "handler"])

const pathOf = (url: string) => url.split("?")[0]!

export const start = async (options: Options): Promise<Started> => {
  const authorize = makeAuthorizer(options.tokens)
  const limit = options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES
  const timeout = options.bodyTimeoutMillis ?? DEFAULT_BODY_TIMEOUT_MILLIS
  const TOO_LARGE = tooLarge(limit)
  const TIMED_OUT = timedOut(timeout)
  const store = memoryStore((input) => {
    const now = Date.now()
    return new Route.Route({ ...input, id: Route.makeRouteId(now), createdAt: new Date(now) }, true)
  })
  const seeded = seedSync(options.seed ?? 0, store.create)

  const RoutingLive = HttpApiBuilder.group(RoutingApi.RoutingApi, "routing", (handlers) =>
    handlers
      // The change log is not what this peer is measured on: it keeps none.
      .handle("history", () => Effect.dieMessage("this peer keeps no change log"))
      .handle("routeHistory", () => Effect.dieMessage("this peer keeps no change log"))
      .handle("restore", () => Effect.dieMessage("this peer keeps no change log"))
      .handle("batch", () => Effect.dieMessage("this peer keeps no change log"))
      // Nor a fleet: nothing follows it.
      .handle("followers", () => Effect.dieMessage("this peer keeps no fleet"))
      .handle("report", () => Effect.dieMessage("this peer keeps no fleet"))
      .handle("create", ({ payload }) => {
        const result = store.create(payload)
        if (!("created" in result)) {
          return Effect.fail(
            Problem.make(
              "route_conflict",
              conflictDetail(payload.method, payload.path, result.conflictingRouteId, payload.when),
              { conflictingRouteId: result.conflictingRouteId }
            ) as typeof RoutingApi.RouteConflictProblem.Type
          )
        }
        const location = ITEM_PREFIX + result.created.id
        return Effect.as(
          HttpApp.appendPreResponseHandler((_, response) =>
            Effect.succeed(HttpServerResponse.setHeader(response, "location", location))
          ),
          result.created
        )
      })
      // The peers are compared on reading and writing routes; this one keeps no history to stream.
      .handle("changes", () => Effect.succeed(""))
      // Nor a route table to explain a request with.
      .handle("match", () =>
        Effect.fail(
          Problem.make("not_found", "This peer keeps no route table.") as typeof RoutingApi.NotFoundProblem.Type
        ))
      .handle("get", ({ path }) => {
        const route = store.get(path.id)
        return route === undefined
          ? Effect.fail(
            Problem.make("route_not_found", notFoundDetail(path.id)) as typeof RoutingApi.RouteNotFoundProblem.Type
          )
          : Effect.succeed(route)
      })
      // The benchmark compares create and get; this peer does not implement the rest of the API.
      // The router serves "/v1/routing/" (the empty id) with the list endpoint: look the empty id up, as the others do.
      .handle("list", ({ request }) =>
        pathOf(request.url) === ITEM_PREFIX
          ? Effect.die(response(authorize(request.headers.authorization, "routes:read") ?? routeNotFound("")))
          : Effect.dieMessage("list is not implemented by this peer"))
      .handle("update", () => Effect.dieMessage("update is not implemented by this peer"))
      .handle("delete", () => Effect.dieMessage("delete is not implemented by this peer")))

  const BearerAuthLive = Layer.succeed(
    RoutingApi.BearerAuth,
    RoutingApi.BearerAuth.of({
      bearer: () =>
        Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) => {
          const create = request.method === "POST"
          let refused = authorize(request.headers.authorization, create ? "routes:write" : "routes:read")
          if (refused === undefined && create) {
            const contentType = request.headers["content-type"]
            const declared = request.headers["content-length"]
            if (!isJson(contentType)) refused = unsupportedMediaType(contentType)
            else if (declared !== undefined && Number(declared) > limit) refused = TOO_LARGE
          }
          return refused === undefined ? Effect.void : Effect.die(response(refused))
        })
    })
  )

  // The create body, read with a limit and parsed; what the payload schema would not refuse is refused here.
  const readJson = (request: HttpServerRequest.HttpServerRequest, seen: { json?: unknown }) =>
    Effect.async<unknown>((resume) =>
      readBody(request.source as Http.IncomingMessage, limit, timeout, (body) => {
        if (body === "TooLarge") return resume(Effect.die(response(TOO_LARGE)))
        if (body === "Timeout") return resume(Effect.die(response(TIMED_OUT)))
        if (body === "Incomplete") return resume(Effect.die(response(INCOMPLETE_BODY)))
        if (body.length === 0) return resume(Effect.die(response(EMPTY_BODY)))
        let json: unknown
        try {
          json = JSON.parse(body.toString("utf8"))
        } catch (error) {
          return resume(Effect.die(response(malformedJson((error as Error).message))))
        }
        seen.json = json
        if (typeof json === "object" && json !== null && !Array.isArray(json)) {
          for (const key in json) {
            const answer = CREATE_FIELDS.has(key) ? undefined : invalidBody(json)
            if (answer !== undefined) return resume(Effect.die(response(answer)))
          }
        }
        resume(Effect.succeed(json))
      })
    )

  const invalidBody = (json: unknown) => {
    const checked = Route.validateCreate(json)
    return Either.isLeft(checked) ? invalidRoute(checked.left) : undefined
  }

  // What stock HttpApi answers with an empty 404 on the API's own paths, or with its own decode-error body.
  const contractAnswer = (
    request: HttpServerRequest.HttpServerRequest,
    error: unknown,
    seen: { json?: unknown }
  ): Answer | undefined => {
    const tag = (error as { _tag?: unknown } | undefined)?._tag
    if (tag === "HttpApiDecodeError") return "json" in seen ? invalidBody(seen.json) : undefined
    if (tag !== "RouteNotFound") return undefined
    const path = pathOf(request.url)
    if (path === COLLECTION) return methodNotAllowed(request.method, path, COLLECTION_ALLOW)
    if (!path.startsWith(ITEM_PREFIX) || path.indexOf("/", ITEM_PREFIX.length) !== -1) return undefined
    if (request.method !== "GET") return methodNotAllowed(request.method, path, ROUTE_ALLOW)
    return authorize(request.headers.authorization, "routes:read") ?? routeNotFound(path.slice(ITEM_PREFIX.length))
  }

  const ContractLive = HttpApiBuilder.middleware(
    RoutingApi.RoutingApi,
    (app) =>
      Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) => {
        const seen: { json?: unknown } = {}
        const served = request.method === "POST"
          ? Effect.provideService(
            app,
            HttpServerRequest.HttpServerRequest,
            Object.create(request, { json: { value: readJson(request, seen) } })
          )
          : app
        return Effect.catchAllCause(served, (cause) => {
          const answer = contractAnswer(request, Option.getOrUndefined(Cause.failureOption(cause)), seen)
          return answer === undefined ? Effect.failCause(cause) : Effect.succeed(response(answer))
        })
      })
  )

  const runtime = ManagedRuntime.make(
    HttpApiBuilder.serve().pipe(
      Layer.provide(ContractLive),
      Layer.provide(
        HttpApiBuilder.api(RoutingApi.RoutingApi).pipe(Layer.provide(RoutingLive), Layer.provide(BearerAuthLive))
      ),
      // Any string is looked up (an id that could never exist is a 404 route_not_found), not only short ones.
      Layer.provide(HttpRouter.setRouterConfig({ maxParamLength: 8192 })),
      Layer.provideMerge(
        NodeHttpServer.layer(() => Http.createServer(), { port: options.port ?? 0, host: options.host ?? "127.0.0.1" })
      )
    )
  )
  const address = await runtime.runPromise(Effect.map(HttpServer.HttpServer, (server) => server.address))
  return { port: address._tag === "TcpAddress" ? address.port : 0, seeded, close: () => runtime.dispose() }
}

runMain(import.meta.url, start)
