/**
 * The API on bare `node:http`, written by hand: the practical limit for a Node server.
 */
import * as Http from "node:http"
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
  invalidRoute,
  isJson,
  ITEM_PREFIX,
  listen,
  makeAuthorizer,
  malformedJson,
  memoryStore,
  methodNotAllowed,
  newRecord,
  readBody,
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
const NOT_FOUND = JSON.stringify({ error: "not found" })

// An explicit length spares the chunked encoding that writeHead would otherwise commit to.
const write = (res: Http.ServerResponse, status: number, headers: Http.OutgoingHttpHeaders, body: string) => {
  res.writeHead(status, { ...headers, "content-length": Buffer.byteLength(body) })
  res.end(body)
}

const send = (res: Http.ServerResponse, answer: Answer) => write(res, answer.status, answer.headers, answer.body)

export const start = async (options: Options): Promise<Started> => {
  const authorize = makeAuthorizer(options.tokens)
  const limit = options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES
  const timeout = options.bodyTimeoutMillis ?? DEFAULT_BODY_TIMEOUT_MILLIS
  const TOO_LARGE = tooLarge(limit)
  const TIMED_OUT = timedOut(timeout)
  const store = memoryStore(newRecord)
  const seeded = seedSync(options.seed ?? 0, store.create)

  const create = (req: Http.IncomingMessage, res: Http.ServerResponse) => {
    const refused = authorize(req.headers.authorization, "routes:write")
    if (refused !== undefined) return send(res, refused)
    const contentType = req.headers["content-type"]
    if (!isJson(contentType)) return send(res, unsupportedMediaType(contentType))
    const declared = req.headers["content-length"]
    if (declared !== undefined && Number(declared) > limit) return send(res, TOO_LARGE)
    readBody(req, limit, timeout, (body) => {
      if (body === "TooLarge") return send(res, TOO_LARGE)
      if (body === "Timeout") return send(res, TIMED_OUT)
      if (body === "Incomplete") return send(res, INCOMPLETE_BODY)
      if (body.length === 0) return send(res, EMPTY_BODY)
      let json: unknown
      try {
        json = JSON.parse(body.toString("utf8"))
      } catch (error) {
        return send(res, malformedJson((error as Error).message))
      }
      const input = Route.validateCreate(json)
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
    })
  }

  const get = (req: Http.IncomingMessage, res: Http.ServerResponse, id: string) => {
    const refused = authorize(req.headers.authorization, "routes:read")
    if (refused !== undefined) return send(res, refused)
    const route = store.get(id)
    if (route === undefined) return send(res, routeNotFound(id))
    write(res, 200, { "content-type": JSON_TYPE }, JSON.stringify(route))
  }

  const server = Http.createServer((req, res) => {
    const url = req.url ?? "/"
    const query = url.indexOf("?")
    const path = query === -1 ? url : url.slice(0, query)
    if (path === COLLECTION) {
      return req.method === "POST"
        ? create(req, res)
        : send(res, methodNotAllowed(req.method ?? "", path, COLLECTION_ALLOW))
    }
    if (path.startsWith(ITEM_PREFIX) && path.indexOf("/", ITEM_PREFIX.length) === -1) {
      return req.method === "GET"
        ? get(req, res, path.slice(ITEM_PREFIX.length))
        : send(res, methodNotAllowed(req.method ?? "", path, ROUTE_ALLOW))
    }
    write(res, 404, { "content-type": JSON_TYPE }, NOT_FOUND)
  })
  const port = await listen(server, options)
  return { port, seeded, close: () => closeServer(server) }
}

runMain(import.meta.url, start)
