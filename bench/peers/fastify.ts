/**
 * The API on Fastify 5 as its users write it: route schemas (a fast-json-stringify response schema for the route),
 * hooks for authentication and the content type, Fastify's own JSON parser and `bodyLimit`, and an error handler
 * that turns Fastify's errors into the contract's problem documents.
 */
import Fastify from "fastify"
import type { FastifyError, FastifyReply, FastifyRequest, HookHandlerDoneFunction } from "fastify"
import type { Scope } from "route-registry/Authenticator"
import * as Route from "route-registry/Route"
import type { Answer, Created, Options, RouteRecord, Started } from "./shared.js"
import {
  COLLECTION,
  COLLECTION_ALLOW,
  DEFAULT_BODY_TIMEOUT_MILLIS,
  DEFAULT_MAX_BODY_BYTES,
  EMPTY_BODY,
  INCOMPLETE_BODY,
  INTERNAL_ERROR,
  invalidRoute,
  isJson,
  ITEM_PREFIX,
  makeAuthorizer,
  malformedJson,
  memoryStore,
  methodNotAllowed,
  newRecord,
  ROUTE_ALLOW,
  routeConflict,
  routeNotFound,
  runMain,
  seedSync,
  timedOut,
  tooLarge,
  unsupportedMediaType
} from "./shared.js"

/** Where the routes live; a Postgres store answers with promises. */
export interface Store {
  readonly create: (input: Route.CreateRoute) => Created<RouteRecord> | Promise<Created<RouteRecord>>
  readonly get: (id: string) => RouteRecord | undefined | Promise<RouteRecord | undefined>
}

const routeSchema = {
  type: "object",
  properties: {
    id: { type: "string" },
    method: { type: "string" },
    path: { type: "string" },
    middleware: { type: "array", items: { type: "string" } },
    handler: { type: "string" },
    createdAt: { type: "string" }
  },
  required: ["id", "method", "path", "middleware", "handler", "createdAt"]
} as const

const JSON_TYPE = "application/json"
const CHARSET = "; charset=utf-8"

declare module "fastify" {
  interface FastifyRequest {
    /** Answers 408 if the body has not been parsed in time. */
    bodyTimer: NodeJS.Timeout | null
  }
}

const send = (reply: FastifyReply, answer: Answer) =>
  reply.code(answer.status).headers(answer.headers).send(answer.body)

/**
 * Serves the API over `store`. `storeFailure` answers an error thrown by the store (a Postgres store tells an
 * unreachable database from a bug); anything else unexpected is a 500.
 */
export const serve = async (
  options: Options,
  store: Store,
  seeded: ReadonlyArray<string>,
  storeFailure: (error: unknown) => Answer = () => INTERNAL_ERROR
): Promise<Started> => {
  const authorize = makeAuthorizer(options.tokens)
  const limit = options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES
  const timeout = options.bodyTimeoutMillis ?? DEFAULT_BODY_TIMEOUT_MILLIS
  const TOO_LARGE = tooLarge(limit)
  const TIMED_OUT = timedOut(timeout)
  const fastify = Fastify({
    bodyLimit: limit,
    // Any string is looked up (an id that could never exist is a 404 route_not_found), not only short ones.
    routerOptions: { maxParamLength: 8192 },
    // A HEAD on a route is a 405, as in the library.
    exposeHeadRoutes: false
  })

  const authenticate =
    (scope: Scope) => (request: FastifyRequest, reply: FastifyReply, done: HookHandlerDoneFunction) => {
      const refused = authorize(request.headers.authorization, scope)
      if (refused === undefined) done()
      else send(reply, refused)
    }

  // Fastify appends "; charset=utf-8" to every JSON type; the contract's types (and the library's) have none.
  fastify.addHook("onSend", (_request, reply, payload, done) => {
    const type = reply.getHeader("content-type")
    if (typeof type === "string" && type.endsWith(CHARSET)) reply.header("content-type", type.slice(0, -CHARSET.length))
    done(null, payload)
  })

  fastify.decorateRequest("bodyTimer", null)
  const stopBodyTimer = (request: FastifyRequest) => {
    if (request.bodyTimer !== null) clearTimeout(request.bodyTimer)
  }

  fastify.setErrorHandler((error: FastifyError, request, reply) => {
    stopBodyTimer(request)
    // The body timed out and was answered; this is the parser giving up on the closed connection.
    if (reply.sent) return
    switch (error.code) {
      case "FST_ERR_CTP_BODY_TOO_LARGE":
        return send(reply, TOO_LARGE)
      case "FST_ERR_CTP_EMPTY_JSON_BODY":
        return send(reply, EMPTY_BODY)
      case "FST_ERR_CTP_INVALID_JSON_BODY":
        return send(reply, malformedJson(error.message))
      case "FST_ERR_CTP_INVALID_CONTENT_LENGTH":
        return send(reply, INCOMPLETE_BODY)
      case "FST_ERR_CTP_INVALID_MEDIA_TYPE":
        return send(reply, unsupportedMediaType(request.headers["content-type"]))
    }
    request.log.error(error)
    return send(reply, storeFailure(error))
  })

  const notAllowed = (served: string, allow: string) => ({
    method: fastify.supportedMethods.filter((method) => method !== served),
    handler: (request: FastifyRequest, reply: FastifyReply) =>
      send(reply, methodNotAllowed(request.method, request.url.split("?")[0]!, allow))
  })

  fastify.post(COLLECTION, {
    schema: { response: { 201: routeSchema } },
    onRequest: authenticate("routes:write"),
    preParsing: (request, reply, payload, done) => {
      const contentType = request.headers["content-type"]
      if (!isJson(contentType)) {
        send(reply, unsupportedMediaType(contentType))
        return
      }
      request.bodyTimer = setTimeout(() => {
        request.raw.pause()
        send(reply, TIMED_OUT)
      }, timeout)
      done(null, payload)
    },
    preValidation: (request, _reply, done) => {
      stopBodyTimer(request)
      done()
    }
  }, async (request, reply) => {
    const input = Route.validateCreate(request.body)
    if (input._tag === "Left") return send(reply, invalidRoute(input.left))
    const result = await store.create(input.right)
    if (!("created" in result)) {
      return send(
        reply,
        routeConflict(input.right.method, input.right.path, result.conflictingRouteId, input.right.when)
      )
    }
    return reply.code(201).header("location", ITEM_PREFIX + result.created.id).type(JSON_TYPE).send(result.created)
  })
  fastify.route({ url: COLLECTION, ...notAllowed("POST", COLLECTION_ALLOW) })

  fastify.get<{ Params: { id: string } }>(`${ITEM_PREFIX}:id`, {
    schema: {
      params: { type: "object", properties: { id: { type: "string" } }, required: ["id"] },
      response: { 200: routeSchema }
    },
    onRequest: authenticate("routes:read")
  }, async (request, reply) => {
    const route = await store.get(request.params.id)
    if (route === undefined) return send(reply, routeNotFound(request.params.id))
    return reply.type(JSON_TYPE).send(route)
  })
  fastify.route({ url: `${ITEM_PREFIX}:id`, ...notAllowed("GET", ROUTE_ALLOW) })

  await fastify.listen({ port: options.port ?? 0, host: options.host ?? "127.0.0.1" })
  const address = fastify.server.address()
  return {
    port: typeof address === "object" && address !== null ? address.port : 0,
    seeded,
    close: async () => {
      fastify.server.closeAllConnections()
      await fastify.close()
    }
  }
}

/** Fastify over the plain `Map` store. */
export const start = (options: Options): Promise<Started> => {
  const store = memoryStore(newRecord)
  return serve(options, store, seedSync(options.seed ?? 0, store.create))
}

runMain(import.meta.url, start)
