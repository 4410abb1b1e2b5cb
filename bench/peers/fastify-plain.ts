/**
 * The whole routes API on Fastify 5, written the way Fastify's documentation teaches: route schemas for the parameters
 * and the answers (serialized by fast-json-stringify, the change log's entries too), `onRequest` hooks per route for
 * authentication and a write's `dryRun`, content-type parsers for `application/json` and
 * `application/merge-patch+json` under Fastify's `bodyLimit`, and one error handler that turns what Fastify refuses
 * into the contract's problem documents. The store (with its change log), the answers and the token check are the
 * lean `node:http` peer's, so both peers answer alike and differ only in how they serve; what is out of their scope
 * is listed there.
 */
import Fastify from "fastify"
import type {
  FastifyError,
  FastifyReply,
  FastifyRequest,
  HookHandlerDoneFunction,
  preParsingHookHandler,
  preValidationHookHandler
} from "fastify"
import type { Scope } from "route-registry/Authenticator"
import * as Route from "route-registry/Route"
import {
  acceptsCreate,
  acceptsPatch,
  authorizationOf,
  CREATE_TYPES,
  dryRunOf,
  HISTORY,
  ifMatch,
  invalidQuery,
  invalidRestore,
  invalidRestoreBody,
  invalidRoute,
  makeAuthorizer,
  makeStore,
  nextHistoryPage,
  nextPage,
  noneMatchHits,
  NOT_FOUND,
  parseHistoryQuery,
  parseJson,
  parseQuery,
  parseRestore,
  PATCH_TYPES,
  Principal,
  refusal,
  RESTORE,
  REVISION_HEADER,
  ROUTE_HISTORY,
  type Stored,
  tooManyMethods,
  unsupportedMediaType
} from "./lean-node.js"
import type { Answer, Options, Started } from "./shared.js"
import {
  COLLECTION,
  COLLECTION_ALLOW,
  DEFAULT_BODY_TIMEOUT_MILLIS,
  DEFAULT_MAX_BODY_BYTES,
  INCOMPLETE_BODY,
  INTERNAL_ERROR,
  ITEM_PREFIX,
  methodNotAllowed,
  ROUTE_ALLOW,
  routeConflict,
  routeNotFound,
  runMain,
  seedSync,
  timedOut,
  tooLarge
} from "./shared.js"

const JSON_TYPE = "application/json"
const CHARSET = "; charset=utf-8"

const routeSchema = {
  type: "object",
  properties: {
    id: { type: "string" },
    method: { type: "string" },
    path: { type: "string" },
    // A name, or a name with its config: each entry as JSON.stringify writes it (its config keys in canonical order).
    middleware: { type: "array", items: {} },
    handler: { type: "string" },
    createdAt: { type: "string" },
    // The fields of docs/router.md, left out at their defaults; split and conditions as kept, in canonical order.
    enabled: { type: "boolean" },
    split: {},
    description: { type: "string" },
    tags: { type: "array", items: { type: "string" } },
    when: {}
  },
  required: ["id", "method", "path", "middleware", "handler", "createdAt"]
} as const

const pageSchema = {
  type: "object",
  properties: { items: { type: "array", items: routeSchema }, nextCursor: { type: ["string", "null"] } },
  required: ["items", "nextCursor"]
} as const

const nullableRoute = { ...routeSchema, type: ["object", "null"] } as const

const historySchema = {
  type: "object",
  properties: {
    items: {
      type: "array",
      items: {
        type: "object",
        properties: {
          revision: { type: "integer" },
          at: { type: "string" },
          actor: { type: ["string", "null"] },
          action: { type: "string" },
          routeId: { type: "string" },
          before: nullableRoute,
          after: nullableRoute,
          restoredFrom: { type: "integer" }
        },
        required: ["revision", "at", "actor", "action", "routeId", "before", "after"]
      }
    },
    nextCursor: { type: ["string", "null"] }
  },
  required: ["items", "nextCursor"]
} as const

const idSchema = { type: "object", properties: { id: { type: "string" } }, required: ["id"] } as const

interface ById {
  Params: { id: string }
}

declare module "fastify" {
  interface FastifyRequest {
    /** Answers 408 if the body has not been parsed in time. */
    bodyDeadline: NodeJS.Timeout | null
    /** Who the request's token names, once `authenticate` let it through: the actor of its change. */
    principal: Principal | null
    /** The request's `dryRun=true`, once `dryRun` read it. */
    dryRun: boolean
  }
}

/** A body the content-type parser refuses, with the contract's answer. */
class RefusedBody extends Error {
  constructor(readonly answer: Answer) {
    super(answer.body)
  }
}

const send = (reply: FastifyReply, answer: Answer) =>
  reply.code(answer.status).headers(answer.headers).send(answer.body)

export const start = async (options: Options): Promise<Started> => {
  const authorize = makeAuthorizer(options.tokens)
  const limit = options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES
  const timeout = options.bodyTimeoutMillis ?? DEFAULT_BODY_TIMEOUT_MILLIS
  const TOO_LARGE = tooLarge(limit)
  const TIMED_OUT = timedOut(timeout)
  const store = makeStore((stored: Stored) => stored)
  const seeded = seedSync(options.seed ?? 0, store.create)

  const fastify = Fastify({
    bodyLimit: limit,
    // Any string is looked up (an id that could never exist is a 404 route_not_found), not only short ones.
    routerOptions: { maxParamLength: 8192 },
    // A HEAD on a route is a 405, as in the library.
    exposeHeadRoutes: false
  })

  // Only the two JSON types are parsed; any other type is refused before (see `reading`).
  fastify.removeAllContentTypeParsers()
  fastify.addContentTypeParser(
    [JSON_TYPE, "application/merge-patch+json"],
    { parseAs: "buffer" },
    (_request, body, done) => {
      const parsed = parseJson(body as Buffer)
      if ("refused" in parsed) done(new RefusedBody(parsed.refused), undefined)
      else done(null, parsed.json)
    }
  )

  // Fastify appends "; charset=utf-8" to every JSON type; the contract's types (and the library's) have none.
  fastify.addHook("onSend", (_request, reply, payload, done) => {
    const type = reply.getHeader("content-type")
    if (typeof type === "string" && type.endsWith(CHARSET)) reply.header("content-type", type.slice(0, -CHARSET.length))
    done(null, payload)
  })

  fastify.decorateRequest("bodyDeadline", null)
  fastify.decorateRequest("principal", null)
  fastify.decorateRequest("dryRun", false)
  const stopDeadline = (request: FastifyRequest) => {
    if (request.bodyDeadline !== null) clearTimeout(request.bodyDeadline)
  }

  fastify.setErrorHandler((error: FastifyError, request, reply) => {
    stopDeadline(request)
    // The body timed out and was answered; this is the parser giving up on the closed connection.
    if (reply.sent) return
    if (error instanceof RefusedBody) return send(reply, error.answer)
    switch (error.code) {
      case "FST_ERR_CTP_BODY_TOO_LARGE":
        return send(reply, TOO_LARGE)
      case "FST_ERR_CTP_INVALID_CONTENT_LENGTH":
        return send(reply, INCOMPLETE_BODY)
    }
    request.log.error(error)
    return send(reply, INTERNAL_ERROR)
  })

  fastify.setNotFoundHandler((_request, reply) => send(reply, NOT_FOUND))

  const authenticate =
    (scope: Scope) => (request: FastifyRequest, reply: FastifyReply, done: HookHandlerDoneFunction) => {
      const who = authorize(authorizationOf(request.raw), scope)
      if (!(who instanceof Principal)) {
        send(reply, who)
        return
      }
      request.principal = who
      done()
    }

  // A write's `dryRun` parameter, read after authentication (the query of a write carries nothing else).
  const dryRun = (request: FastifyRequest, reply: FastifyReply, done: HookHandlerDoneFunction) => {
    const mark = request.url.indexOf("?")
    if (mark === -1) return done()
    const asked = dryRunOf(request.url.slice(mark + 1))
    if (typeof asked !== "boolean") {
      send(reply, asked)
      return
    }
    request.dryRun = asked
    done()
  }
  const writing = [authenticate("routes:write"), dryRun]
  // The headers of a write's answer: its change's revision, none on a dry run.
  const revised = (request: FastifyRequest, revision: number) =>
    request.dryRun ? undefined : { [REVISION_HEADER]: String(revision) }

  // The content type (415) before Fastify reads the body against its limit (413); then the body's deadline (408).
  const reading = (
    accepts: (type: string | undefined) => boolean,
    accepted: string
  ): { readonly preParsing: preParsingHookHandler; readonly preValidation: preValidationHookHandler } => ({
    preParsing: (request, reply, payload, done) => {
      const type = request.headers["content-type"]
      if (!accepts(type)) {
        send(reply, unsupportedMediaType(type, accepted))
        return
      }
      request.bodyDeadline = setTimeout(() => {
        request.raw.pause()
        send(reply, TIMED_OUT)
      }, timeout)
      done(null, payload)
    },
    preValidation: (request, _reply, done) => {
      stopDeadline(request)
      done()
    }
  })

  const notAllowed = (served: ReadonlyArray<string>, allow: string) => ({
    method: fastify.supportedMethods.filter((method) => !served.includes(method)),
    handler: (request: FastifyRequest, reply: FastifyReply) =>
      send(reply, methodNotAllowed(request.method, request.url.split("?")[0]!, allow))
  })

  fastify.get(COLLECTION, {
    schema: { response: { 200: pageSchema } },
    onRequest: authenticate("routes:read")
  }, (request, reply) => {
    const mark = request.url.indexOf("?")
    const query = parseQuery(mark === -1 ? "" : request.url.slice(mark + 1))
    if (query._tag === "Left") return send(reply, invalidQuery(query.left))
    const page = store.list(query.right)
    const next = nextPage(query.right, page)
    if (next.link !== undefined) reply.header("link", next.link)
    return reply.code(200).type(JSON_TYPE).send({ items: page.items, nextCursor: next.cursor })
  })

  fastify.post(COLLECTION, {
    schema: { response: { 201: routeSchema } },
    onRequest: writing,
    ...reading(acceptsCreate, CREATE_TYPES)
  }, (request, reply) => {
    const input = Route.validateCreate(request.body)
    if (input._tag === "Left") return send(reply, invalidRoute(input.left))
    const result = store.create(input.right, request.principal!.id, request.dryRun)
    if ("tooManyMethods" in result) return send(reply, tooManyMethods())
    if (!("created" in result)) {
      return send(
        reply,
        routeConflict(input.right.method, input.right.path, result.conflictingRouteId, input.right.when)
      )
    }
    const route = result.created
    return reply.code(201).headers({
      "content-type": JSON_TYPE,
      location: ITEM_PREFIX + route.id,
      etag: route.etag,
      ...revised(request, route.revision)
    }).send(route)
  })
  fastify.route({ url: COLLECTION, ...notAllowed(["GET", "POST"], COLLECTION_ALLOW) })

  // A page of the log, or of one route's (`routeId`).
  const history = (request: FastifyRequest, reply: FastifyReply, routeId: string | undefined) => {
    const mark = request.url.indexOf("?")
    const query = parseHistoryQuery(mark === -1 ? "" : request.url.slice(mark + 1), routeId)
    if (query._tag === "Left") return send(reply, invalidQuery(query.left))
    const page = store.history(query.right)
    // A route's history is not found only when the log holds nothing of it.
    if (routeId !== undefined && query.right.before === undefined && page.items.length === 0) {
      return send(reply, routeNotFound(routeId))
    }
    const next = nextHistoryPage(
      routeId === undefined ? HISTORY : `${ITEM_PREFIX}${routeId}/${ROUTE_HISTORY}`,
      query.right,
      page
    )
    if (next.link !== undefined) reply.header("link", next.link)
    return reply.code(200).type(JSON_TYPE).send({ items: page.items, nextCursor: next.cursor })
  }

  fastify.get(HISTORY, {
    schema: { response: { 200: historySchema } },
    onRequest: authenticate("routes:read")
  }, (request, reply) => history(request, reply, undefined))
  fastify.route({ url: HISTORY, ...notAllowed(["GET"], "GET") })

  const item = `${ITEM_PREFIX}:id`

  fastify.get<ById>(item, {
    schema: { params: idSchema, response: { 200: routeSchema } },
    onRequest: authenticate("routes:read")
  }, (request, reply) => {
    const route = store.get(request.params.id)
    if (route === undefined) return send(reply, routeNotFound(request.params.id))
    const noneMatch = request.headers["if-none-match"]
    if (noneMatch !== undefined && noneMatchHits(noneMatch, route.etag)) {
      return reply.code(304).header("etag", route.etag).send()
    }
    return reply.code(200).headers({ "content-type": JSON_TYPE, etag: route.etag }).send(route)
  })

  fastify.patch<ById>(item, {
    schema: { params: idSchema, response: { 200: routeSchema } },
    onRequest: writing,
    ...reading(acceptsPatch, PATCH_TYPES)
  }, (request, reply) => {
    const id = request.params.id
    const patch = Route.validatePatch(request.body)
    if (patch._tag === "Left") return send(reply, invalidRoute(patch.left))
    const result = store.update(
      id,
      patch.right,
      ifMatch(request.headers["if-match"]),
      request.principal!.id,
      request.dryRun
    )
    if (typeof result === "string" || !("etag" in result)) return send(reply, refusal(id, result))
    return reply.code(200).headers({
      "content-type": JSON_TYPE,
      etag: result.etag,
      ...revised(request, result.revision)
    })
      .send(result)
  })

  fastify.delete<ById>(item, {
    schema: { params: idSchema },
    onRequest: writing
  }, (request, reply) => {
    const id = request.params.id
    const result = store.remove(id, ifMatch(request.headers["if-match"]), request.principal!.id, request.dryRun)
    if (typeof result !== "number") return send(reply, refusal(id, result))
    return reply.code(204).headers(revised(request, result) ?? {}).send()
  })
  fastify.route({ url: item, ...notAllowed(["GET", "PATCH", "DELETE"], ROUTE_ALLOW) })

  const routeHistory = `${item}/${ROUTE_HISTORY}`
  fastify.get<ById>(routeHistory, {
    schema: { params: idSchema, response: { 200: historySchema } },
    onRequest: authenticate("routes:read")
  }, (request, reply) => history(request, reply, request.params.id))
  fastify.route({ url: routeHistory, ...notAllowed(["GET"], "GET") })

  const restore = `${item}/${RESTORE}`
  fastify.post<ById>(restore, {
    schema: { params: idSchema, response: { 200: routeSchema, 201: routeSchema } },
    onRequest: writing,
    ...reading(acceptsCreate, CREATE_TYPES)
  }, (request, reply) => {
    const id = request.params.id
    const revision = parseRestore(request.body)
    if (revision._tag === "Left") return send(reply, invalidRestoreBody(revision.left))
    const result = store.restore(
      id,
      revision.right,
      ifMatch(request.headers["if-match"]),
      request.principal!.id,
      request.dryRun
    )
    if (typeof result === "string" || !("restored" in result || "invalidRestore" in result)) {
      return send(reply, refusal(id, result))
    }
    if ("invalidRestore" in result) return send(reply, invalidRestore(id, revision.right, result))
    const route = result.restored
    return reply.code(result.created ? 201 : 200).headers({
      "content-type": JSON_TYPE,
      ...(result.created ? { location: ITEM_PREFIX + route.id } : undefined),
      etag: route.etag,
      ...revised(request, route.revision)
    }).send(route)
  })
  fastify.route({ url: restore, ...notAllowed(["POST"], "POST") })

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

runMain(import.meta.url, start)
