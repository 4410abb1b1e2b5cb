/**
 * The change log's operations of the routing API (docs/history.md): `GET /v1/routing/history`, `GET
 * /v1/routing/{id}/history`, `POST /v1/routing/{id}/restore`, and the `dryRun` parameter and `Registry-Revision`
 * header of every write; their paths, scopes and telemetry names are rows of the endpoint table (`endpoints.ts`).
 *
 * @internal
 */
import { Effect, Either } from "effect"
import * as HostPaths from "../../HostPaths.js"
import * as Route from "../../Route.js"
import type * as RouteRepository from "../../RouteRepository.js"
import * as Limits from "../limits.js"
import { MAX_ISSUES } from "../route/validate.js"
import { decodeCursor, encodeCursor } from "../store/historyCursor.js"
import * as Answers from "./answers.js"
import { refuse } from "./answers.js"
import * as Conditional from "./conditional.js"
import * as Content from "./content.js"
import { HISTORY } from "./endpoints.js"
import { ITEM_PREFIX, type Request, type Response } from "./exchange.js"
import * as Ownership from "./ownership.js"
import { type Core, type Failure, fromEither, type Steps, withRoute } from "./steps.js"

/** The header of every write's answer: the revision of its change. */
export const REVISION_HEADER = "registry-revision"

/** Entries in one page of the log when the query gives no `limit`, and the most. */
export const DEFAULT_HISTORY_PAGE = 50
export const MAX_HISTORY_PAGE = 200

// --- dry runs and revisions ----------------------------------------------------------------------------------------

const DRY_RUN = "dryRun"

/**
 * Whether a write's query asks for a dry run: `dryRun=true`, absent for none; any other value, or the parameter
 * given twice, is refused (400 `invalid_query` naming it). Other parameters are ignored, as they always were.
 */
export const dryRunOf = (query: string): Either.Either<boolean, Response> => {
  if (query === "") return Either.right(false)
  const values = new URLSearchParams(query).getAll(DRY_RUN)
  if (values.length === 0) return Either.right(false)
  if (values.length === 1 && values[0] === "true") return Either.right(true)
  return Either.left(Answers.invalidQuery([{
    path: DRY_RUN,
    message: values.length > 1
      ? "is given more than once: give it at most once"
      : `must be "true" to try the change without making it, or left out (got ${JSON.stringify(values[0])})`
  }]))
}

/** The headers a write's answer adds: its change's revision, none on a dry run. */
export const revisionHeaders = (revision: number, dryRun: boolean): Record<string, string> | undefined =>
  dryRun ? undefined : { [REVISION_HEADER]: String(revision) }

// --- the query of a page of the log --------------------------------------------------------------------------------

const ACTIONS: ReadonlyArray<RouteRepository.Action> = ["create", "update", "delete", "restore"]
/** The longest principal id the `actor` filter takes: the longest the core accepts. */
export const MAX_ACTOR_LENGTH = Limits.MAX_PRINCIPAL_ID_LENGTH

const RULES: Record<string, (value: string) => string | undefined> = {
  limit: (value) =>
    /^[0-9]+$/.test(value) && Number(value) >= 1 && Number(value) <= MAX_HISTORY_PAGE
      ? undefined
      : `must be a whole number from 1 to ${MAX_HISTORY_PAGE} in decimal digits (got ${JSON.stringify(value)})`,
  cursor: (value) =>
    decodeCursor(value) === undefined
      ? "is not a cursor this API issued: pass the nextCursor of a previous page unchanged"
      : undefined,
  routeId: (value) => Route.isRouteId(value) ? undefined : `must be a route id (got ${JSON.stringify(value)})`,
  actor: (value) =>
    value.length >= 1 && value.length <= MAX_ACTOR_LENGTH
      ? undefined
      : `must be a principal id of 1 to ${MAX_ACTOR_LENGTH} characters`,
  action: (value) =>
    (ACTIONS as ReadonlyArray<string>).includes(value)
      ? undefined
      : `must be one of ${ACTIONS.join(", ")} (got ${JSON.stringify(value)})`,
  batch: (value) =>
    Route.isRouteId(value)
      ? undefined
      : `must be a batch id, as POST /v1/routing/batch answered it (got ${JSON.stringify(value)})`
}

/** The store query of a page of the log, or every problem found; `routeId` given by the path is not a parameter. */
export const parseQuery = (
  raw: string,
  routeId: string | undefined
): Either.Either<RouteRepository.HistoryQuery, ReadonlyArray<Route.FieldIssue>> => {
  const names = Object.keys(RULES).filter((name) => routeId === undefined || name !== "routeId")
  const values: Record<string, string> = {}
  const issues: Array<Route.FieldIssue> = []
  for (const [name, value] of new URLSearchParams(raw)) {
    if (!names.includes(name)) {
      issues.push({ path: name, message: `is not a parameter of this history: use ${names.join(", ")}` })
    } else if (values[name] !== undefined) {
      issues.push({ path: name, message: "is given more than once: give it at most once" })
    } else {
      const problem = RULES[name]!(value)
      if (problem === undefined) values[name] = value
      else issues.push({ path: name, message: problem })
    }
  }
  if (issues.length > 0) return Either.left(issues.slice(0, MAX_ISSUES))
  return Either.right({
    limit: values.limit === undefined ? DEFAULT_HISTORY_PAGE : Number(values.limit),
    before: values.cursor === undefined ? undefined : decodeCursor(values.cursor),
    routeId: routeId ?? values.routeId,
    actor: values.actor,
    action: values.action as RouteRepository.Action | undefined,
    batch: values.batch
  })
}

const nextLink = (path: string, query: RouteRepository.HistoryQuery, own: boolean, last: number): string => {
  const params = new URLSearchParams({ limit: String(query.limit) })
  if (!own && query.routeId !== undefined) params.set("routeId", query.routeId)
  if (query.actor !== undefined) params.set("actor", query.actor)
  if (query.action !== undefined) params.set("action", query.action)
  if (query.batch !== undefined) params.set("batch", query.batch)
  params.set("cursor", encodeCursor(last))
  return `<${path}?${params.toString()}>; rel="next"`
}

// --- answers -------------------------------------------------------------------------------------------------------

/** An entry as the API answers it. */
export const entryJson = (entry: RouteRepository.HistoryEntry): string =>
  `{"revision":${entry.revision},"at":"${entry.at.toISOString()}","actor":${JSON.stringify(entry.actor)},` +
  `"action":"${entry.action}","routeId":${JSON.stringify(entry.routeId)},` +
  `"before":${entry.before === null ? "null" : Route.toJson(entry.before)},` +
  `"after":${entry.after === null ? "null" : Route.toJson(entry.after)}` +
  (entry.restoredFrom === undefined ? "" : `,"restoredFrom":${entry.restoredFrom}`) +
  (entry.batch === undefined ? "" : `,"batch":${JSON.stringify(entry.batch)}`) +
  (entry.batchDescription === undefined ? "}" : `,"batchDescription":${JSON.stringify(entry.batchDescription)}}`)

const pageAnswer = (
  path: string,
  query: RouteRepository.HistoryQuery,
  own: boolean,
  page: RouteRepository.HistoryPage
): Response => {
  const last = page.items[page.items.length - 1]
  const next = page.hasMore && last !== undefined ? last.revision : undefined
  return Answers.json(
    200,
    `{"items":[${page.items.map(entryJson).join(",")}],"nextCursor":${
      next === undefined ? "null" : `"${encodeCursor(next)}"`
    }}`,
    next === undefined ? undefined : { link: nextLink(path, query, own, next) }
  )
}

const NO_LOG = Answers.problem(
  "not_found",
  "This process's store keeps no change log (a store of the host's own), so it serves no history " +
    "and no restore: ask the registry whose store keeps it."
)

const invalidRestoreBody = (errors: ReadonlyArray<Route.FieldIssue>) =>
  Answers.problem(
    "invalid_restore",
    "Send exactly {\"revision\": <positive integer>}: the revision of this route's log to go back to.",
    undefined,
    { errors }
  )

const invalidRestore = (refused: RouteRepository.InvalidRestore) =>
  Answers.problem(
    "invalid_restore",
    refused.reason === "deleted"
      ? `Revision ${refused.revision} deleted route ${refused.id}: restore a revision that left the route in place.`
      : `Revision ${refused.revision} is not in the log of route ${refused.id}: it never changed this route, or ` +
        "the log no longer holds it (pruned past its retention). Read GET /v1/routing/{id}/history for its revisions.",
    undefined,
    { errors: [{ path: "revision", message: refused.message }] }
  )

/** The revision a restore's body names, or every problem with it. */
export const parseRestore = (body: unknown): Either.Either<number, ReadonlyArray<Route.FieldIssue>> => {
  if (typeof body !== "object" || body === null || Array.isArray(body)) {
    return Either.left([{ path: "", message: "must be a JSON object: {\"revision\": <positive integer>}" }])
  }
  const issues: Array<Route.FieldIssue> = Object.keys(body).filter((key) => key !== "revision").map((key) => ({
    path: key,
    message: `unknown field ${JSON.stringify(key)}: the body holds only "revision"`
  }))
  const revision = (body as { revision?: unknown }).revision
  if (revision === undefined) issues.push({ path: "revision", message: "is required" })
  else if (typeof revision !== "number" || !Number.isSafeInteger(revision) || revision < 1) {
    issues.push({ path: "revision", message: `must be a positive integer (got ${JSON.stringify(revision)})` })
  }
  return issues.length > 0 ? Either.left(issues.slice(0, MAX_ISSUES)) : Either.right(revision as number)
}

// --- the operations ------------------------------------------------------------------------------------------------

// A page of the log, or of one route's (`routeId`).
const page = (core: Core, request: Request, routeId: string | undefined): Effect.Effect<Response, Failure> =>
  Effect.gen(function*() {
    const log = core.changeLog
    if (log === undefined) return yield* refuse(NO_LOG)
    const query = yield* fromEither(Either.mapLeft(parseQuery(request.query, routeId), Answers.invalidQuery))
    const page = yield* log.history(query)
    // A route's history is not found only when the log holds nothing of it.
    if (routeId !== undefined && query.before === undefined && page.items.length === 0) {
      return Answers.routeNotFound(routeId)
    }
    const path = (request.base ?? "") + (routeId === undefined ? HISTORY : `${ITEM_PREFIX}${routeId}/history`)
    return pageAnswer(path, query, routeId !== undefined, page)
  })

/** `GET /v1/routing/history`. */
export const history: Steps = (core, request) => page(core, request, undefined)

/** `GET /v1/routing/{id}/history`. */
export const routeHistory: Steps = (core, request, _, id) => page(core, request, id)

/** `POST /v1/routing/{id}/restore`. */
export const restore: Steps = (core, request, principal, id) =>
  Effect.gen(function*() {
    const dryRun = yield* fromEither(dryRunOf(request.query))
    const body = yield* Content.readJson(request, Content.CREATE_TYPES, core.limits)
    const revision = yield* fromEither(Either.mapLeft(parseRestore(body), invalidRestoreBody))
    const restorable = core.restorable
    if (restorable === undefined) return yield* refuse(NO_LOG)
    const precondition = Ownership.guard(principal, Conditional.ifMatch(request.header("if-match")))
    const restored = (dryRun: boolean) =>
      restorable.restore(id, revision, precondition, { actor: principal.id, dryRun }).pipe(
        Effect.catchTag("InvalidRestore", (refused) => refuse(invalidRestore(refused)))
      )
    // Where the host serves paths itself, the route the revision holds is seen first (a dry run), so that a restore
    // onto one of them is refused as a create would be.
    const hostPaths = core.hostPaths
    const seen = hostPaths.entries.length === 0 ? undefined : yield* restored(true)
    const taken = seen === undefined ? undefined : HostPaths.taking(hostPaths, seen.route.path)
    if (taken !== undefined) {
      return yield* refuse(
        Answers.invalidRoute([{ path: "path", message: HostPaths.taken(seen!.route.path, taken) }])
      )
    }
    const { created, route } = dryRun && seen !== undefined ? seen : yield* restored(dryRun)
    if (!dryRun) core.answers?.delete(id)
    const headers = revisionHeaders(route.revision, dryRun)
    return yield* created
      ? withRoute(core, 201, route, { location: (request.base ?? "") + ITEM_PREFIX + route.id, ...headers })
      : withRoute(core, 200, route, headers)
  })
