/**
 * The registry the command talks to: the typed client of `RoutingApi` over HTTP, with every failure turned into a
 * `RequestFailed` that says what went wrong.
 *
 * @internal
 */
import * as HttpApiClient from "@effect/platform/HttpApiClient"
import * as HttpClient from "@effect/platform/HttpClient"
import * as HttpClientError from "@effect/platform/HttpClientError"
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import { Effect, flow, ParseResult, Schedule } from "effect"
import type { Redacted } from "effect"
import { randomUUID } from "node:crypto"
import type * as Route from "../../Route.js"
import type * as RouteRepository from "../../RouteRepository.js"
import * as RoutingApi from "../../RoutingApi.js"
import { BATCH } from "../http/endpoints.js"
import { COLLECTION } from "../http/exchange.js"
import { MAX_HISTORY_PAGE, REVISION_HEADER } from "../http/history.js"
import { HEADER as IDEMPOTENCY_KEY } from "../http/idempotency.js"
import * as Limits from "../limits.js"
import * as Urls from "../urls.js"
import { RequestFailed } from "./errors.js"
import type * as Plan from "./plan.js"

/** One operation of a change set, as the API takes it. */
export type BatchOperation = typeof RoutingApi.BatchOperation.Type

/** The filters of a listing. */
export interface Filters {
  readonly method?: Route.HttpMethod | undefined
  readonly pathPrefix?: string | undefined
  readonly handler?: Route.HandlerName | undefined
  readonly middleware?: Route.MiddlewareName | undefined
  readonly q?: string | undefined
}

/** A query of the log: the newest `limit` entries (walking as many pages as that takes) matching the filters. */
export interface HistoryQuery {
  readonly limit: number
  readonly actor?: string | undefined
  readonly action?: RouteRepository.Action | undefined
}

/** One entry of the log, as the API answers it. */
export type HistoryEntry = typeof RoutingApi.HistoryEntry.Type

const TOKEN_CODES: ReadonlySet<string> = new Set(["unauthenticated", "invalid_request", "invalid_token"])

interface ProblemBody {
  readonly status: number
  readonly code: string
  readonly detail: string
  readonly errors?: ReadonlyArray<{ readonly path: string; readonly message: string }>
}

const isProblem = (u: unknown): u is ProblemBody =>
  typeof u === "object" && u !== null && "code" in u && "detail" in u && "status" in u

// The messages along an error's causes: fetch says only "fetch failed", its cause says "connect ECONNREFUSED …".
const causes = (error: unknown): Array<string> => error instanceof Error ? [error.message, ...causes(error.cause)] : []

const hint = (code: string) =>
  TOKEN_CODES.has(code)
    ? " (check ROUTING_TOKEN)"
    : code === "insufficient_scope"
    ? " (ROUTING_TOKEN lacks the scope)"
    : ""

const failure = (origin: string) => (error: unknown): RequestFailed => {
  if (isProblem(error)) {
    const details = (error.errors ?? []).map((issue) => `\n  ${issue.path}: ${issue.message}`).join("")
    const headline = `${error.status} ${error.code}: ${error.detail}${hint(error.code)}`
    return new RequestFailed({
      message: `${headline}${details}`,
      code: error.code,
      headline,
      ...(error.errors === undefined ? {} : { errors: error.errors })
    })
  }
  if (HttpClientError.isHttpClientError(error) && error._tag === "RequestError") {
    return new RequestFailed({ message: `cannot reach ${origin}: ${[...new Set(causes(error.cause))].join(": ")}` })
  }
  if (HttpClientError.isHttpClientError(error) || ParseResult.isParseError(error)) {
    return new RequestFailed({ message: `${origin} did not answer as a route registry: ${error.message}` })
  }
  return new RequestFailed({ message: String(error) })
}

const ifMatch = (etag: string | undefined) => etag === undefined ? {} : { "if-match": etag }

// ---------------------------------------------------------------------------------------------------------------
// Requests that failed to reach an answer
// ---------------------------------------------------------------------------------------------------------------

// A connection kept alive between two requests can be closed by the server (its keep-alive timeout) just as the next
// request goes out on it: the request fails before any answer (fetch says "fetch failed: other side closed"), and the
// server never read it. fetch sends GET again by itself, and nothing else. Here every request that can be sent twice
// without being applied twice is: reads, a create with its Idempotency-Key (the registry answers the second with the
// first's answer), an update or delete with If-Match (the second finds the route changed, and changes nothing), and
// a batch, whose every update and delete this client sends with its ifMatch: applied once, a batch sent again is
// refused whole (a delete finds no route, an update a changed one, a create its own route's shape taken).
const repeatable = (request: HttpClientRequest.HttpClientRequest): boolean =>
  request.method === "GET" || request.method === "HEAD" || request.headers[IDEMPOTENCY_KEY] !== undefined ||
  ((request.method === "PATCH" || request.method === "DELETE") && request.headers["if-match"] !== undefined) ||
  (request.method === "POST" && request.url.endsWith(BATCH))

const failedToReach = (error: unknown): boolean =>
  HttpClientError.isHttpClientError(error) && error._tag === "RequestError" && error.reason === "Transport"

/** How often, and how soon, a repeatable request that failed to reach an answer is sent again. */
const RETRIES = Schedule.exponential("100 millis").pipe(Schedule.intersect(Schedule.recurs(3)))

const retrying = (client: HttpClient.HttpClient): HttpClient.HttpClient =>
  HttpClient.transform(
    client,
    (effect, request) =>
      repeatable(request) ? Effect.retry(effect, { schedule: RETRIES, while: failedToReach }) : effect
  )

// Each create carries an Idempotency-Key of its own, so that it can be sent again (above).
const withIdempotencyKey = (request: HttpClientRequest.HttpClientRequest): HttpClientRequest.HttpClientRequest =>
  request.method === "POST" && request.url.endsWith(COLLECTION)
    ? HttpClientRequest.setHeader(request, IDEMPOTENCY_KEY, randomUUID())
    : request

/** A client of the registry at `origin`, calling it with `token`. */
export const make = (origin: string, token: Redacted.Redacted<string>) =>
  Effect.gen(function*() {
    const client = yield* HttpApiClient.make(RoutingApi.RoutingApi, {
      baseUrl: origin,
      transformClient: flow(
        retrying,
        HttpClient.mapRequest(flow(HttpClientRequest.bearerToken(token), withIdempotencyKey))
      )
    })
    const dryRunClient = yield* HttpApiClient.make(RoutingApi.RoutingApi, {
      baseUrl: origin,
      transformClient: flow(
        retrying,
        HttpClient.mapRequest(flow(
          HttpClientRequest.bearerToken(token),
          HttpClientRequest.setUrlParam("dryRun", "true"),
          withIdempotencyKey
        ))
      )
    })
    const http = (yield* HttpClient.HttpClient).pipe(
      retrying,
      HttpClient.mapRequest(HttpClientRequest.bearerToken(token))
    )
    // Its messages never show a password in the URL, the causes' own (fetch quotes the URL it refuses) included.
    const hide = Urls.hidingPassword(origin)
    // The problem's headline and entries are kept: a refused batch's name the operations `sync` reports by name.
    const fail = (error: unknown) => {
      const { code, errors, headline, message } = failure(origin)(error)
      return new RequestFailed({
        message: hide(message),
        code,
        ...(headline === undefined ? {} : { headline: hide(headline) }),
        ...(errors === undefined ? {} : { errors })
      })
    }

    /** Every route matching `filters`, in id order, walking the pages to the end. */
    const list = (filters: Filters = {}): Effect.Effect<Array<Route.Route>, RequestFailed> =>
      Effect.suspend(() => {
        const routes: Array<Route.Route> = []
        const from = (cursor: string | undefined): Effect.Effect<Array<Route.Route>, RequestFailed> =>
          client.routing.list({
            urlParams: { ...filters, limit: Limits.MAX_PAGE_SIZE, ...(cursor === undefined ? {} : { cursor }) }
          }).pipe(
            Effect.mapError(fail),
            Effect.flatMap((page) => {
              routes.push(...page.items)
              return page.nextCursor === null ? Effect.succeed(routes) : from(page.nextCursor)
            })
          )
        return from(undefined)
      })

    /** The route and its ETag, the version to change. */
    const get = (id: string) =>
      client.routing.get({ path: { id }, headers: {}, withResponse: true }).pipe(
        Effect.map(([route, response]) => ({ route, etag: response.headers["etag"] })),
        Effect.mapError(fail)
      )

    // The writes' client: with `dryRun`, each asks for the server's dry run, answered as the write would be.
    const writer = (dryRun: boolean) => dryRun ? dryRunClient : client

    // A write's revision: its Registry-Revision header (none on a dry run).
    const revisionOf = <A>([, response]: readonly [A, { readonly headers: Record<string, string> }]) => {
      const header = response.headers[REVISION_HEADER]
      return header === undefined ? undefined : Number(header)
    }

    const create = (route: Route.CreateRoute, dryRun = false) =>
      writer(dryRun).routing.create({ payload: route, withResponse: true }).pipe(
        Effect.map(revisionOf),
        Effect.mapError(fail)
      )

    /** Changes the route only if it is still at `etag`: a concurrent change is a 412, never overwritten. */
    const update = (id: string, etag: string | undefined, patch: Plan.Patch, dryRun = false) =>
      writer(dryRun).routing.update({ path: { id }, headers: ifMatch(etag), payload: patch, withResponse: true }).pipe(
        Effect.map(revisionOf),
        Effect.mapError(fail)
      )

    const remove = (id: string, etag: string | undefined, dryRun = false) =>
      writer(dryRun).routing.delete({ path: { id }, headers: ifMatch(etag), withResponse: true }).pipe(
        Effect.map(revisionOf),
        Effect.mapError(fail)
      )

    /**
     * Applies `operations` as one change set, all or nothing (each update and delete must carry its `ifMatch`: see
     * `repeatable`); its revision, `undefined` on a dry run.
     */
    const batch = (operations: ReadonlyArray<BatchOperation>, dryRun = false) =>
      HttpClientRequest.post(`${origin}${BATCH}`).pipe(
        HttpClientRequest.setUrlParams(dryRun ? { dryRun: "true" } : {}),
        HttpClientRequest.bodyUnsafeJson({ operations }),
        http.execute,
        // Read by hand: a refusal's `errors` name the operation refused, which the API's problem schemas leave out.
        Effect.flatMap((response) =>
          response.status === 200
            ? Effect.succeed(revisionOf([undefined, response]))
            : Effect.flatMap(response.json, Effect.fail)
        ),
        Effect.scoped,
        Effect.mapError(fail)
      )

    /** The fleet, once every connected follower applied `revision` or after `wait` seconds (at most 60). */
    const followers = (revision: number, wait: number) =>
      client.routing.followers({ urlParams: { revision, wait } }).pipe(Effect.mapError(fail))

    /**
     * The newest `query.limit` entries of the log (of route `id` when given), newest first, walking the pages. Fewer
     * when the log holds fewer.
     */
    const history = (query: HistoryQuery, id?: string): Effect.Effect<Array<HistoryEntry>, RequestFailed> =>
      Effect.suspend(() => {
        const entries: Array<HistoryEntry> = []
        const { limit, ...filters } = query
        const page = (cursor: string | undefined) => {
          const urlParams = {
            ...filters,
            limit: Math.min(limit - entries.length, MAX_HISTORY_PAGE),
            ...(cursor === undefined ? {} : { cursor })
          }
          return id === undefined
            ? client.routing.history({ urlParams })
            : client.routing.routeHistory({ path: { id }, urlParams })
        }
        const from = (cursor: string | undefined): Effect.Effect<Array<HistoryEntry>, RequestFailed> =>
          page(cursor).pipe(
            Effect.mapError(fail),
            Effect.flatMap((answer) => {
              entries.push(...answer.items)
              return answer.nextCursor === null || entries.length >= limit
                ? Effect.succeed(entries)
                : from(answer.nextCursor)
            })
          )
        return from(undefined)
      })

    /** Makes route `id` what it was right after the change at `revision`: the route, and whether it was created. */
    const restore = (id: string, revision: number, dryRun: boolean) =>
      client.routing.restore({
        path: { id },
        urlParams: dryRun ? { dryRun: "true" } : {},
        headers: {},
        payload: { revision },
        withResponse: true
      }).pipe(
        Effect.map(([route, response]) => ({
          route,
          created: response.status === 201,
          revision: response.headers["registry-revision"]
        })),
        Effect.mapError(fail)
      )

    /** Which route serves a request of `method` to `path` in the registry's table, and why not the others. */
    const match = (
      method: Route.HttpMethod,
      path: string,
      host?: string,
      header: ReadonlyArray<string> = [],
      key?: string
    ) =>
      client.routing.match({
        urlParams: {
          method,
          path,
          ...(host === undefined ? {} : { host }),
          ...(header.length === 0 ? {} : { header }),
          ...(key === undefined ? {} : { key })
        }
      }).pipe(Effect.mapError(fail))

    return { origin, list, get, create, update, remove, batch, match, history, restore, followers } as const
  })

/** A client of a registry. */
export type Registry = Effect.Effect.Success<ReturnType<typeof make>>
