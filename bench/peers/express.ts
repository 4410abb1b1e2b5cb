/**
 * The API on Express 5 as its users write it: route-level middleware for authentication and the content type,
 * `express.json()` with its limit, and an error handler that turns body-parser's errors into problem documents.
 */
import express from "express"
import type { ErrorRequestHandler, RequestHandler, Response } from "express"
import * as Http from "node:http"
import type { Scope } from "route-registry/Authenticator"
import * as Route from "route-registry/Route"
import type { Answer, Options, Started } from "./shared.js"
import {
  closeServer,
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
  listen,
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

// Node's `setHeader` and `end`: Express's `res.set`, `res.send` and `res.json` add "; charset=utf-8" to the type
// (and `send` an ETag), which the contract, and the library, do not.
const write = (res: Response, status: number, headers: Readonly<Record<string, string>>, body: string) => {
  if (res.headersSent) return
  for (const name in headers) res.setHeader(name, headers[name]!)
  res.status(status).end(body)
}

const send = (res: Response, answer: Answer) => write(res, answer.status, answer.headers, answer.body)

export const start = async (options: Options): Promise<Started> => {
  const authorize = makeAuthorizer(options.tokens)
  const limit = options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES
  const timeout = options.bodyTimeoutMillis ?? DEFAULT_BODY_TIMEOUT_MILLIS
  const TOO_LARGE = tooLarge(limit)
  const TIMED_OUT = timedOut(timeout)
  const store = memoryStore(newRecord)
  const seeded = seedSync(options.seed ?? 0, store.create)

  const app = express()
  // Paths are matched exactly, as the library does: "/v1/routing/" is an item path (with an empty id).
  app.set("strict routing", true)
  app.set("case sensitive routing", true)
  app.set("x-powered-by", false)

  const authenticate = (scope: Scope): RequestHandler => (req, res, next) => {
    const refused = authorize(req.headers.authorization, scope)
    if (refused === undefined) next()
    else send(res, refused)
  }
  const requireJson: RequestHandler = (req, res, next) => {
    const contentType = req.headers["content-type"]
    if (isJson(contentType)) next()
    else send(res, unsupportedMediaType(contentType))
  }
  const parseJson = express.json({
    limit,
    // Any JSON value: one that is not an object is an invalid route, not malformed JSON.
    strict: false,
    type: () => true,
    // body-parser reads an empty body as {}; the contract calls it malformed.
    verify: (_req, _res, body) => {
      if (body.length === 0) throw Object.assign(new Error("empty body"), { type: "entity.empty" })
    }
  })
  // A timer from before the body is read until it is parsed (or refused).
  const startBodyTimer: RequestHandler = (req, res, next) => {
    res.locals.bodyTimer = setTimeout(() => {
      req.pause()
      send(res, TIMED_OUT)
    }, timeout)
    next()
  }
  const stopBodyTimer: RequestHandler = (_req, res, next) => {
    clearTimeout(res.locals.bodyTimer)
    next()
  }
  const notAllowed = (allow: string): RequestHandler => (req, res) =>
    send(res, methodNotAllowed(req.method, req.path, allow))

  app.post(
    COLLECTION,
    authenticate("routes:write"),
    requireJson,
    startBodyTimer,
    parseJson,
    stopBodyTimer,
    (req, res) => {
      const input = Route.validateCreate(req.body)
      if (input._tag === "Left") return send(res, invalidRoute(input.left))
      const result = store.create(input.right)
      if (!("created" in result)) {
        return send(
          res,
          routeConflict(input.right.method, input.right.path, result.conflictingRouteId, input.right.when)
        )
      }
      const location = ITEM_PREFIX + result.created.id
      write(res, 201, { "content-type": JSON_TYPE, location }, JSON.stringify(result.created))
    }
  )
  app.all(COLLECTION, notAllowed(COLLECTION_ALLOW))

  // `:id` needs at least one character; the empty id is looked up (and not found) like any other.
  const item = [`${ITEM_PREFIX}:id`, ITEM_PREFIX]
  // Express answers HEAD with the GET route; the library answers 405.
  app.head(item, notAllowed(ROUTE_ALLOW))
  app.get(item, authenticate("routes:read"), (req, res) => {
    const { id = "" } = req.params as { id?: string }
    const route = store.get(id)
    if (route === undefined) return send(res, routeNotFound(id))
    write(res, 200, { "content-type": JSON_TYPE }, JSON.stringify(route))
  })
  app.all(item, notAllowed(ROUTE_ALLOW))

  const errors: ErrorRequestHandler = (error, _req, res, _next) => {
    clearTimeout(res.locals.bodyTimer)
    switch (error?.type) {
      case "entity.too.large":
        return send(res, TOO_LARGE)
      case "entity.empty":
        return send(res, EMPTY_BODY)
      case "entity.parse.failed":
        return send(res, malformedJson(error.message))
      case "request.aborted":
      case "request.size.invalid":
        return send(res, INCOMPLETE_BODY)
    }
    console.error(error)
    send(res, INTERNAL_ERROR)
  }
  app.use(errors)

  const server = Http.createServer(app)
  const port = await listen(server, options)
  return { port, seeded, close: () => closeServer(server) }
}

runMain(import.meta.url, start)
