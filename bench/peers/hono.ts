/**
 * The API on Hono 4 as its users write it, served by @hono/node-server (with Node's global `Request` and
 * `Response` left alone): middleware for authentication and the content type, Hono's `bodyLimit`, and
 * `c.req.json()`.
 */
import { serve } from "@hono/node-server"
import { Hono } from "hono"
import type { Context, MiddlewareHandler } from "hono"
import { bodyLimit } from "hono/body-limit"
import { HTTPException } from "hono/http-exception"
import { timeout } from "hono/timeout"
import type { ContentfulStatusCode } from "hono/utils/http-status"
import type * as Http from "node:http"
import type { AddressInfo } from "node:net"
import type { Scope } from "route-registry/Authenticator"
import * as Route from "route-registry/Route"
import type { Answer, Options, Started } from "./shared.js"
import {
  closeServer,
  COLLECTION,
  COLLECTION_ALLOW,
  DEFAULT_BODY_TIMEOUT_MILLIS,
  DEFAULT_MAX_BODY_BYTES,
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

const JSON_TYPE = "application/json"

const respond = (c: Context, answer: Answer) =>
  c.body(answer.body, answer.status as ContentfulStatusCode, answer.headers)

export const start = async (options: Options): Promise<Started> => {
  const authorize = makeAuthorizer(options.tokens)
  const limit = options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES
  const bodyTimeout = options.bodyTimeoutMillis ?? DEFAULT_BODY_TIMEOUT_MILLIS
  const TOO_LARGE = tooLarge(limit)
  const TIMED_OUT = timedOut(bodyTimeout)
  const store = memoryStore(newRecord)
  const seeded = seedSync(options.seed ?? 0, store.create)

  const authenticate = (scope: Scope): MiddlewareHandler => async (c, next) => {
    const refused = authorize(c.req.header("authorization"), scope)
    if (refused !== undefined) return respond(c, refused)
    await next()
  }
  const requireJson: MiddlewareHandler = async (c, next) => {
    const contentType = c.req.header("content-type")
    if (!isJson(contentType)) return respond(c, unsupportedMediaType(contentType))
    await next()
  }
  const notAllowed = (allow: string) => (c: Context) => respond(c, methodNotAllowed(c.req.method, c.req.path, allow))

  const app = new Hono()
  app.post(
    COLLECTION,
    authenticate("routes:write"),
    requireJson,
    timeout(bodyTimeout, () =>
      new HTTPException(408, {
        res: new Response(TIMED_OUT.body, { status: TIMED_OUT.status, headers: TIMED_OUT.headers })
      })),
    bodyLimit({ maxSize: limit, onError: (c) => respond(c, TOO_LARGE) }),
    async (c) => {
      let body: unknown
      try {
        body = await c.req.json()
      } catch (error) {
        return respond(c, malformedJson((error as Error).message))
      }
      const input = Route.validateCreate(body)
      if (input._tag === "Left") return respond(c, invalidRoute(input.left))
      const result = store.create(input.right)
      if (!("created" in result)) {
        return respond(
          c,
          routeConflict(input.right.method, input.right.path, result.conflictingRouteId, input.right.when)
        )
      }
      return c.body(JSON.stringify(result.created), 201, {
        "content-type": JSON_TYPE,
        location: ITEM_PREFIX + result.created.id
      })
    }
  )
  app.all(COLLECTION, notAllowed(COLLECTION_ALLOW))

  const get = (c: Context) => {
    const id = c.req.param("id") ?? ""
    const route = store.get(id)
    if (route === undefined) return respond(c, routeNotFound(id))
    return c.json(route)
  }
  // `:id` needs at least one character; the empty id is looked up (and not found) like any other.
  for (const path of [`${ITEM_PREFIX}:id`, ITEM_PREFIX]) {
    app.get(path, authenticate("routes:read"), get)
    app.all(path, notAllowed(ROUTE_ALLOW))
  }
  app.onError((error, c) => {
    if (error instanceof HTTPException) return error.getResponse()
    console.error(error)
    return respond(c, INTERNAL_ERROR)
  })

  const server = await new Promise<Http.Server>((resolve) => {
    const server: Http.Server = serve({
      fetch: app.fetch,
      port: options.port ?? 0,
      hostname: options.host ?? "127.0.0.1",
      overrideGlobalObjects: false
    }, () => resolve(server)) as Http.Server
  })
  return { port: (server.address() as AddressInfo).port, seeded, close: () => closeServer(server) }
}

runMain(import.meta.url, start)
