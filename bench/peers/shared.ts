/**
 * What every benchmark server shares: its options, the contract's problem answers, bearer-token checking, the
 * plain `Map` store of the memory peers, the seed routes, and the standalone entry point. Only the pieces that
 * are the same in every framework live here; routing, body reading and parsing, and writing the answer are each
 * peer's own.
 */
import { Either } from "effect"
import { createHash, timingSafeEqual } from "node:crypto"
import type * as Http from "node:http"
import type { AddressInfo } from "node:net"
import { pathToFileURL } from "node:url"
import type Pg from "pg"
import type { Scope } from "route-registry/Authenticator"
import * as Problem from "route-registry/Problem"
import * as Route from "route-registry/Route"
import * as RoutingHandler from "route-registry/RoutingHandler"
import type * as Split from "route-registry/Split"
import * as When from "route-registry/When"
import { type RouteSet, routeSetOf } from "../router.js"

export interface Token {
  readonly token: string
  readonly scopes: ReadonlyArray<Scope>
  /** Names the token's holder in the change log (its `actor`); none: `null`. */
  readonly id?: string | undefined
}

/** A Postgres store: the pool to query and the table (created with the library's migration). */
export interface Database {
  readonly pool: Pg.Pool
  readonly table: string
}

export interface Options {
  /** Default 0: a free port. */
  readonly port?: number | undefined
  /** Default 127.0.0.1. */
  readonly host?: string | undefined
  readonly tokens: ReadonlyArray<Token>
  readonly maxBodyBytes?: number | undefined
  /** Longest time a body may take to arrive in full; a slower client is answered 408 and its connection closed. */
  readonly bodyTimeoutMillis?: number | undefined
  /** Routes to store before listening, through the same store code a create uses (see `seedInput`). */
  readonly seed?: number | undefined
  /** For the router scenarios' servers: which set of routes they serve (bench/router.ts); default `rest`. */
  readonly routeSet?: RouteSet | undefined
  /** Servers that can use Postgres do when this is given; the others ignore it. */
  readonly database?: Database | undefined
}

export interface Started {
  readonly port: number
  /** The ids of the seeded routes, in order. */
  readonly seeded: ReadonlyArray<string>
  readonly close: () => Promise<void>
}

export const COLLECTION = RoutingHandler.COLLECTION
export const ITEM_PREFIX = COLLECTION + "/"
export const DEFAULT_MAX_BODY_BYTES = RoutingHandler.DEFAULT_MAX_BODY_BYTES
export const DEFAULT_BODY_TIMEOUT_MILLIS = RoutingHandler.DEFAULT_BODY_TIMEOUT_MILLIS
/** The `Allow` lists of the library's 405s (the peers serve only POST and GET of them). */
export const COLLECTION_ALLOW = RoutingHandler.COLLECTION_ALLOW
export const ROUTE_ALLOW = RoutingHandler.ROUTE_ALLOW

// ---------------------------------------------------------------------------------------------------------------
// Answers: the same problem documents, headers and sentences as the library
// ---------------------------------------------------------------------------------------------------------------

export interface Answer {
  readonly status: number
  readonly headers: Readonly<Record<string, string>>
  /** JSON text. */
  readonly body: string
}

const problem = (
  code: Problem.Code,
  detail: string,
  headers?: Record<string, string>,
  extensions?: Pick<Problem.Problem, "errors" | "conflictingRouteId">
): Answer => ({
  status: Problem.codes[code],
  headers: { "content-type": Problem.CONTENT_TYPE, ...headers },
  body: JSON.stringify(Problem.make(code, detail, extensions))
})

const REALM = "Bearer realm=\"routing\""
const challenge = (code: "invalid_request" | "invalid_token", detail: string) =>
  problem(code, detail, { "www-authenticate": `${REALM}, error="${code}"` })
const insufficientScope = (scope: Scope, action: string) =>
  problem(
    "insufficient_scope",
    `This token lacks the ${scope} scope needed to ${action}: use a token that has it.`,
    { "www-authenticate": `${REALM}, error="insufficient_scope", scope="${scope}"` }
  )

export const UNAUTHENTICATED = problem(
  "unauthenticated",
  "This request needs a bearer token: send the header \"Authorization: Bearer <token>\".",
  { "www-authenticate": REALM }
)
const EMPTY_CREDENTIAL = challenge(
  "invalid_request",
  "The Authorization header names the Bearer scheme but carries no token: send \"Authorization: Bearer <token>\"."
)
const MALFORMED_CREDENTIAL = challenge(
  "invalid_request",
  "The bearer token is malformed: a token is letters, digits and - . _ ~ + / optionally followed by \"=\" padding."
)
const INVALID_TOKEN = challenge(
  "invalid_token",
  "The bearer token is not accepted: check that it is a configured token and has not expired or been revoked."
)
const REFUSED_SCOPE: Record<Scope, Answer> = {
  "routes:read": insufficientScope("routes:read", "read routes"),
  "routes:write": insufficientScope("routes:write", "create routes"),
  "fleet:report": insufficientScope("fleet:report", "report to the fleet")
}

export const INTERNAL_ERROR = problem(
  "internal_error",
  "An unexpected error occurred. It has been logged; please retry later."
)
export const STORE_UNAVAILABLE = problem(
  "store_unavailable",
  "The route store is unavailable right now and nothing was written: retry after 1 second.",
  { "retry-after": "1" }
)

export const methodNotAllowed = (method: string, path: string, allow: string): Answer =>
  problem("method_not_allowed", `${method} is not served on ${path}: use ${allow}.`, { allow })

export const unsupportedMediaType = (got: string | undefined): Answer =>
  problem(
    "unsupported_media_type",
    `Send the body as JSON with "Content-Type: application/json" (got ${
      got === undefined ? "no Content-Type" : JSON.stringify(got)
    }).`
  )

export const tooLarge = (maxBodyBytes: number): Answer =>
  problem(
    "payload_too_large",
    `The body is larger than the limit of ${maxBodyBytes} bytes: send a smaller route definition.`,
    { connection: "close" }
  )

export const timedOut = (bodyTimeoutMillis: number): Answer =>
  problem(
    "request_timeout",
    `The body did not arrive within ${bodyTimeoutMillis} ms: send it in full, without pauses.`,
    { connection: "close" }
  )

export const EMPTY_BODY = problem("malformed_json", "The body is empty: send a JSON object describing the route.")

export const malformedJson = (reason: string): Answer =>
  problem("malformed_json", `The body is not valid JSON (${reason}): send a JSON object describing the route.`)

export const INCOMPLETE_BODY = problem(
  "malformed_json",
  "The body ended before it was complete: send the whole JSON object."
)

export const invalidRoute = (errors: ReadonlyArray<Route.FieldIssue>): Answer =>
  problem(
    "invalid_route",
    `The route definition breaks ${errors.length} rule${errors.length === 1 ? "" : "s"}: see "errors" for each one.`,
    undefined,
    { errors }
  )

/** The sentences of the store's answers, for servers that build the problem document themselves. */
export const notFoundDetail = (id: string) => `No route has the id ${JSON.stringify(id)}.`
export const conflictDetail = (method: string, path: string, conflictingRouteId: string, when?: When.When) =>
  when === undefined
    ? `${method} ${path} has the same method and shape as route ${conflictingRouteId}: a router could not tell them apart.`
    : `${method} ${path} with the conditions ${
      When.canonicalJson(when)
    } has the same method, shape and conditions as ` +
      `route ${conflictingRouteId}: a router could not tell them apart. Conditions compare as a set (header names in ` +
      `any case, the lists in any order), so a when written differently may still be the same: change this route's ` +
      `when, method or path, or update route ${conflictingRouteId} instead.`

export const routeNotFound = (id: string): Answer => problem("route_not_found", notFoundDetail(id))

export const routeConflict = (method: string, path: string, conflictingRouteId: string, when?: When.When): Answer =>
  problem("route_conflict", conflictDetail(method, path, conflictingRouteId, when), undefined, { conflictingRouteId })

// ---------------------------------------------------------------------------------------------------------------
// Requests
// ---------------------------------------------------------------------------------------------------------------

// RFC 6750 §2.1: b64token = 1*( ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/" ) *"="
const TOKEN68 = /^[A-Za-z0-9\-._~+/]+=*$/

const digest = (value: string) => createHash("sha256").update(value, "utf8").digest()

/**
 * Checks an Authorization header against the configured tokens and the scope a request needs; answers the refusal,
 * or `undefined` to let the request through. Every configured token is compared, in constant time.
 */
export const makeAuthorizer = (tokens: ReadonlyArray<Token>) => {
  const entries = tokens.map((entry) => ({ digest: digest(entry.token), scopes: entry.scopes }))
  return (header: string | undefined, scope: Scope): Answer | undefined => {
    if (header === undefined) return UNAUTHENTICATED
    const value = header.trim()
    const space = value.indexOf(" ")
    const scheme = space === -1 ? value : value.slice(0, space)
    if (scheme.length !== 6 || scheme.toLowerCase() !== "bearer") return UNAUTHENTICATED
    const token = space === -1 ? "" : value.slice(space + 1).trimStart()
    if (token === "") return EMPTY_CREDENTIAL
    if (!TOKEN68.test(token)) return MALFORMED_CREDENTIAL
    const presented = digest(token)
    let scopes: ReadonlyArray<Scope> | undefined
    for (const entry of entries) {
      if (timingSafeEqual(presented, entry.digest) && scopes === undefined) scopes = entry.scopes
    }
    if (scopes === undefined) return INVALID_TOKEN
    return scopes.includes(scope) ? undefined : REFUSED_SCOPE[scope]
  }
}

/** `application/json` with any parameters, but no charset other than UTF-8 (bodies are read as UTF-8). */
export const isJson = (contentType: string | undefined): boolean => {
  if (contentType === undefined) return false
  const semicolon = contentType.indexOf(";")
  const type = (semicolon === -1 ? contentType : contentType.slice(0, semicolon)).trim().toLowerCase()
  if (type !== "application/json") return false
  if (semicolon === -1) return true
  const charset = /(?:^|;)\s*charset\s*=\s*"?([^";\s]*)/i.exec(contentType.slice(semicolon))
  return charset === null || /^utf-?8$/i.test(charset[1]!)
}

/**
 * Reads the whole body. Past `limit` bytes or `timeoutMillis` it stops reading without destroying the request, so
 * the caller can still answer (413 or 408, closing the connection).
 */
export const readBody = (
  req: Http.IncomingMessage,
  limit: number,
  timeoutMillis: number,
  done: (body: Buffer | "TooLarge" | "Timeout" | "Incomplete") => void
) => {
  const chunks: Array<Buffer> = []
  let size = 0
  const finish = (result: Buffer | "TooLarge" | "Timeout" | "Incomplete") => {
    clearTimeout(timer)
    req.off("data", onData).off("end", onEnd).off("close", onClose).off("error", onClose)
    done(result)
  }
  const onData = (chunk: Buffer) => {
    size += chunk.length
    if (size > limit) {
      req.pause()
      finish("TooLarge")
    } else chunks.push(chunk)
  }
  const onEnd = () => finish(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size))
  const onClose = () => finish("Incomplete")
  const timer = setTimeout(() => {
    req.pause()
    finish("Timeout")
  }, timeoutMillis)
  req.on("data", onData).on("end", onEnd).on("close", onClose).on("error", onClose)
}

// ---------------------------------------------------------------------------------------------------------------
// Storage
// ---------------------------------------------------------------------------------------------------------------

/**
 * A stored route as a hand-written server keeps it: the six wire fields (`createdAt` already as text), then the fields
 * of docs/router.md, each present only when not at its default and in the one form the library keeps (canonical
 * conditions, split and configs), so `JSON.stringify` of a record is the library's JSON of the route.
 */
export interface RouteRecord {
  readonly id: string
  readonly method: string
  readonly path: string
  readonly middleware: ReadonlyArray<Route.MiddlewareEntry>
  readonly handler: string
  readonly createdAt: string
  readonly enabled?: false | undefined
  readonly split?: Split.Split | undefined
  readonly description?: string | undefined
  readonly tags?: ReadonlyArray<string> | undefined
  readonly when?: When.When | undefined
}

/**
 * The JSON members of the fields of docs/router.md a route carries, each after a comma: `""` at their defaults, so
 * a route without them costs five comparisons.
 */
export const fieldsJson = (route: RouteRecord): string =>
  route.enabled === undefined && route.split === undefined && route.description === undefined &&
    route.tags === undefined && route.when === undefined
    ? ""
    : (route.enabled === false ? ",\"enabled\":false" : "") +
      (route.split === undefined ? "" : `,"split":${JSON.stringify(route.split)}`) +
      (route.description === undefined ? "" : `,"description":${JSON.stringify(route.description)}`) +
      (route.tags === undefined ? "" : `,"tags":${JSON.stringify(route.tags)}`) +
      (route.when === undefined ? "" : `,"when":${JSON.stringify(route.when)}`)

/**
 * The key two routes conflict on: method, shape and conditions (their canonical JSON compares them as a set, as the
 * library does; a peer whose framework decodes the body keeps conditions as written).
 */
export const conflictKey = (method: string, path: string, when: When.When | undefined): string =>
  when === undefined
    ? `${method} ${Route.shapeOf(path as Route.RoutePath)}`
    : `${method} ${Route.shapeOf(path as Route.RoutePath)} ${When.canonicalJson(when)}`

export const newRecord = (input: Route.CreateRoute): RouteRecord => {
  const now = Date.now()
  const record = {
    id: Route.makeRouteId(now),
    method: input.method,
    path: input.path,
    middleware: input.middleware,
    handler: input.handler,
    createdAt: new Date(now).toISOString()
  }
  // A validated input carries the fields of docs/router.md only when not at their defaults: most carry none.
  return input.enabled === undefined && input.split === undefined && input.description === undefined &&
      input.tags === undefined && input.when === undefined
    ? record
    : Object.assign(record, {
      enabled: input.enabled === false ? false as const : undefined,
      split: input.split,
      description: input.description,
      tags: input.tags,
      when: input.when
    })
}

/** A method refused because the registry already stores `RouteRepository.MAX_METHODS` distinct ones. */
export interface TooManyMethods {
  readonly tooManyMethods: string
}

export type Created<R> = { readonly created: R } | { readonly conflictingRouteId: string }

/** Two plain `Map`s: routes by id, and ids by method, shape and conditions (the conflict rule). */
export const memoryStore = <R extends { readonly id: string }>(make: (input: Route.CreateRoute) => R) => {
  const byId = new Map<string, R>()
  const byKey = new Map<string, string>()
  return {
    create: (input: Route.CreateRoute): Created<R> => {
      const key = conflictKey(input.method, input.path, input.when)
      const existing = byKey.get(key)
      if (existing !== undefined) return { conflictingRouteId: existing }
      const route = make(input)
      byKey.set(key, route.id)
      byId.set(route.id, route)
      return { created: route }
    },
    get: (id: string): R | undefined => byId.get(id)
  }
}

/** The `i`-th seed route: a distinct shape each, validated like any create body. */
export const seedInput = (i: number): Route.CreateRoute =>
  Either.getOrThrow(Route.validateCreate({
    method: "GET",
    path: `/seed/${i}/:id`,
    middleware: ["auth", "log"],
    handler: "SeedController#show"
  }))

/** Seeds a synchronous store. */
export const seedSync = <R extends { readonly id: string }>(
  count: number,
  create: (input: Route.CreateRoute) => Created<R> | TooManyMethods
): Array<string> => {
  const ids: Array<string> = []
  for (let i = 0; i < count; i++) {
    const result = create(seedInput(i))
    if (!("created" in result)) throw new Error(`seed route ${i} was refused: ${JSON.stringify(result)}`)
    ids.push(result.created.id)
  }
  return ids
}

// ---------------------------------------------------------------------------------------------------------------
// Serving
// ---------------------------------------------------------------------------------------------------------------

export const listen = (server: Http.Server, options: Options): Promise<number> =>
  new Promise((resolve, reject) => {
    server.once("error", reject)
    server.listen(options.port ?? 0, options.host ?? "127.0.0.1", () => {
      server.off("error", reject)
      resolve((server.address() as AddressInfo).port)
    })
  })

export const closeServer = (server: Http.Server): Promise<void> =>
  new Promise((resolve) => {
    server.closeAllConnections()
    server.close(() => resolve())
  })

const list = (value: string | undefined) => (value ?? "").split(",").map((s) => s.trim()).filter((s) => s !== "")

/**
 * Runs `start` as a process of its own when `url` is the entry module. Environment: PORT, HOST,
 * ROUTING_ADMIN_TOKENS, ROUTING_READ_TOKENS (as `npm start`), MAX_BODY_BYTES, SEED (routes to store first),
 * SEED_IDS (a file to write their ids to, one a line), DATABASE_URL and TABLE (the Postgres store). Prints
 * `listening on http://HOST:PORT` once ready; SIGTERM or SIGINT closes it.
 */
export const runMain = (url: string, start: (options: Options) => Promise<Started>): void => {
  if (process.argv[1] === undefined || pathToFileURL(process.argv[1]).href !== url) return
  const env = process.env
  const main = async () => {
    const tokens: Array<Token> = [
      ...list(env.ROUTING_ADMIN_TOKENS).map((token): Token => ({ token, scopes: ["routes:read", "routes:write"] })),
      ...list(env.ROUTING_READ_TOKENS).map((token): Token => ({ token, scopes: ["routes:read"] }))
    ]
    if (tokens.length === 0) throw new Error("set ROUTING_ADMIN_TOKENS or ROUTING_READ_TOKENS")
    let database: Database | undefined
    if (env.DATABASE_URL !== undefined && env.DATABASE_URL !== "") {
      if (env.TABLE === undefined) throw new Error("DATABASE_URL needs TABLE")
      const { default: PgModule } = await import("pg")
      database = { pool: new PgModule.Pool({ connectionString: env.DATABASE_URL, max: 10 }), table: env.TABLE }
    }
    const host = env.HOST ?? "127.0.0.1"
    const server = await start({
      port: Number(env.PORT ?? 0),
      host,
      tokens,
      maxBodyBytes: env.MAX_BODY_BYTES === undefined ? undefined : Number(env.MAX_BODY_BYTES),
      seed: Number(env.SEED ?? 0),
      routeSet: routeSetOf(env.ROUTE_SET),
      database
    })
    if (env.SEED_IDS !== undefined) {
      const { writeFileSync } = await import("node:fs")
      writeFileSync(env.SEED_IDS, server.seeded.join("\n") + "\n")
    }
    console.log(`listening on http://${host}:${server.port}`)
    const stop = () => {
      void server.close().then(() => database?.pool.end()).then(() => process.exit(0))
    }
    process.once("SIGTERM", stop)
    process.once("SIGINT", stop)
  }
  main().catch((error) => {
    console.error(error)
    process.exit(1)
  })
}
