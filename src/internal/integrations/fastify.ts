/**
 * The Fastify 5 plugin. It registers, in its own encapsulated context:
 * - the routing API on `/v1/routing` and `/v1/routing/*` (below `apiPrefix`), in a child context whose only
 *   content-type parser leaves the body unread, so the API reads it itself under its own limits (413, 415, malformed JSON as docs/http-api.md says), then
 *   answers on the raw response;
 * - the stored routes, as one wildcard route for every method Node's parser accepts: Fastify's own routes win (a static or parametric
 *   route beats a wildcard), its content-type parsers read the body, and the table, read on each request, decides
 *   which stored route serves, so a route created, updated or deleted through the API serves at once.
 *
 * @internal
 */
import type {
  DoneFuncWithErrOrRes,
  FastifyInstance,
  FastifyPluginAsync,
  FastifyReply,
  FastifyRequest,
  onRequestHookHandler,
  preHandlerHookHandler,
  RouteHandlerMethod
} from "fastify"
import { METHODS } from "node:http"
import type * as Route from "../../Route.js"
import { COLLECTION } from "../http/exchange.js"
import * as Otel from "../router/otel.js"
import * as RouteMatch from "../router/routeMatch.js"
import * as Splits from "../router/split.js"
import * as Body from "../transport/body.js"
import * as ApiPrefix from "./apiPrefix.js"
import * as NodeApi from "./nodeApi.js"
import * as Registry from "./registry.js"

export type Handler = RouteHandlerMethod
export type Middleware = preHandlerHookHandler
export type Match = RouteMatch.Match
/** A pre-handler taking the route's decoded config after Fastify's own arguments: it calls `done` or returns a promise. */
export type ConfiguredMiddleware<A> = (
  this: FastifyInstance,
  request: FastifyRequest,
  reply: FastifyReply,
  done: DoneFuncWithErrOrRes,
  config: A
) => unknown
export type Options = Registry.Options<Handler, Middleware, ConfiguredMiddleware<any>>

// Three parameters: the chain then waits for `done` or the promise.
const bindConfig = (fn: ConfiguredMiddleware<unknown>, config: unknown): Middleware =>
  function(request, reply, done) {
    return fn.call(this, request, reply, done, config) as ReturnType<Middleware>
  }

type Answer = ReturnType<typeof Registry.answers.methodNotAllowed>

const send = (reply: FastifyReply, answer: Answer) =>
  // A Buffer, so Fastify sends the problem as it is (a string would gain a charset in its Content-Type).
  reply.code(answer.status).headers(answer.headers).send(Buffer.from(answer.body))

/** The request target below the plugin's prefix (Fastify matched the prefix, so the target starts with it). */
const targetOf = (request: FastifyRequest, prefix: string): string => {
  const rest = request.raw.url!.slice(prefix.length)
  return rest.charCodeAt(0) === 47 /* / */ ? rest : "/" + rest
}

// Fastify routes nine methods unless told of more; a stored route may have any method Node's parser accepts
// (`M-SEARCH`, `PROPFIND`), so the plugin tells Fastify of those, with a body as any method may have one.
const addNodeMethods = (fastify: FastifyInstance): void => {
  for (const method of METHODS) {
    if (!fastify.supportedMethods.includes(method)) fastify.addHttpMethod(method, { hasBody: true })
  }
}

/** The stored route serving `request`, for its functions and the host's later hooks (`onResponse`). */
export const matchOf = (request: FastifyRequest): RouteMatch.Match | undefined => RouteMatch.get(request)

// What `@fastify/otel` decorates a request with: its own span of the request, named `request`, with Fastify's route
// (the stored routes' wildcard, `/*`). It is the server span when no HTTP instrumentation made one.
interface OtelRequest {
  readonly opentelemetry?: () => { readonly span?: Otel.Span | null }
}

const nameSpans = (request: FastifyRequest, route: Route.StoredRoute, handler: string | undefined): void => {
  const server = Otel.nameServerSpan(request.method, route, handler)
  const span = (request as OtelRequest).opentelemetry?.().span
  if (span == null) return
  if (server === undefined) return Otel.annotate(span, request.method, route, handler)
  Otel.setRouteAttributes(span, route, handler)
}

const log = (fastify: FastifyInstance): Registry.Log => (level, message) => fastify.log[level](message)

// The routing API, under `apiPrefix` below the plugin's prefix: the body stays unread for it, and it answers on the
// raw response.
const api = (
  registry: Registry.Registry<Handler, Middleware>,
  prefix: string,
  apiPrefix: string
): FastifyPluginAsync =>
async (context) => {
  context.removeAllContentTypeParsers()
  context.addContentTypeParser("*", (_request, _payload, done) => done(null))
  const handler: RouteHandlerMethod = (request, reply) => {
    // Fastify matches a path once percent-decoded: the API's is compared as the client sent it.
    const target = ApiPrefix.below(apiPrefix, targetOf(request, prefix))
    const view = target === undefined ? undefined : {
      target,
      base: prefix + apiPrefix,
      body: Body.fromIncomingMessage(request.raw, reply.raw)
    }
    // Outside the API's paths (`/v1/routing/a/b`): Fastify's not-found.
    if (view !== undefined && NodeApi.serve(registry, request.raw, reply.raw, view)) reply.hijack()
    else reply.callNotFound()
  }
  context.all(apiPrefix + COLLECTION, handler)
  context.all(`${apiPrefix}${COLLECTION}/*`, handler)
}

/** The plugin: the routing API and the stored routes over one store and one table. */
export const plugin: FastifyPluginAsync<Options> = async (fastify, options) => {
  const registry = await Registry.start(options, log(fastify), bindConfig)
  // Fastify closes its server before its onClose hooks run, and the server waits for the open change streams.
  fastify.addHook("preClose", async () => registry.api.closeStreams())
  fastify.addHook("onClose", () => registry.dispose())
  const prefix = fastify.prefix
  addNodeMethods(fastify)
  await fastify.register(api(registry, prefix, options.apiPrefix ?? ""))

  // The chain of the stored route serving each request, found before its body is read.
  const chains = new WeakMap<FastifyRequest, Registry.Chain<Handler, Middleware>>()

  const onRequest: onRequestHookHandler = function(request, reply, done) {
    const found = registry.lookup(request.method, targetOf(request, prefix), request.headers)
    switch (found._tag) {
      case "BadPath":
        return void send(reply, Registry.answers.malformedPath(found.reason))
      case "NotFound":
        return void reply.callNotFound()
      case "MethodNotAllowed":
        return void send(reply, Registry.answers.methodNotAllowed(found.allow))
    }
    const route = found.route
    if (route.enabled === false) return void send(reply, Registry.answers.routeDisabled)
    const choice = Splits.choiceOf(route, request, Splits.incoming)
    const chain = registry.chainOf(route, choice?.handler)
    if (typeof chain === "string") return void send(reply, Registry.answers.handlerUnavailable(chain))
    if (chain === undefined) return void send(reply, Registry.answers.routeMisconfigured)
    chains.set(request, chain)
    RouteMatch.set(request, RouteMatch.withChoice(found, choice))
    request.params = Registry.ownParams(found.params)
    nameSpans(request, route, choice?.handler)
    done()
  }

  // The route's middleware as Fastify runs pre-handlers: each calls `done` or settles its promise; one that sends a
  // reply stops the chain; an error goes to Fastify's error handling.
  const preHandler: preHandlerHookHandler = function(request, reply, done) {
    const middleware = chains.get(request)!.middleware
    let at = 0
    const next = (error?: unknown) => {
      if (error !== undefined && error !== null) return done(error as Error)
      if (reply.sent || at === middleware.length) return done()
      const fn = middleware[at++]!
      let result: unknown
      try {
        result = fn.call(this, request, reply, next)
      } catch (thrown) {
        return done(thrown as Error)
      }
      if (typeof (result as PromiseLike<unknown> | undefined)?.then === "function") {
        ;(result as PromiseLike<unknown>).then(() => next(), (rejected) => done(rejected ?? new Error("rejected")))
      } else if (fn.length < 3) next() // neither async nor taking `done`: it has finished
    }
    next()
  }

  // The handler's result is Fastify's to send, as if the handler were registered itself.
  const handler: RouteHandlerMethod = function(request, reply) {
    return chains.get(request)!.handler.call(this, request, reply)
  }

  const route = { onRequest, preHandler }
  fastify.all("/*", route, handler)
  if (prefix !== "") fastify.all("", route, handler)
}
