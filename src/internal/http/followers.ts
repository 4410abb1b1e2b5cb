/**
 * The fleet's operations of the routing API (docs/scaling-out.md, "The fleet"): `GET /v1/routing/followers` lists
 * every follower of this process and waits for them to apply a revision; `POST /v1/routing/followers` takes a
 * follower's report; and a change stream opened with `Follower-Name` joins the fleet (`joined`). The fleet itself
 * lives with the replay ring (`follow/fleet.ts`), so a relay's follower reads what its own API recorded. Their path,
 * scopes and telemetry names are rows of the endpoint table (`endpoints.ts`).
 *
 * @internal
 */
import { Duration, Effect, Either } from "effect"
import type * as Authenticator from "../../Authenticator.js"
import type * as Route from "../../Route.js"
import * as Scopes from "../auth/scopes.js"
import * as Fleet from "../follow/fleet.js"
import * as FleetPage from "../follow/fleetPage.js"
import { FLEET_RETRY_AFTER_SECONDS } from "../limits.js"
import { MAX_ISSUES } from "../route/validate.js"
import * as Answers from "./answers.js"
import { type Refusal, refuse } from "./answers.js"
import * as ChangeStream from "./changeStream.js"
import * as Content from "./content.js"
import { FOLLOWERS } from "./endpoints.js"
import type { OpenBody, Request, Response } from "./exchange.js"
import { parseParameters } from "./listQuery.js"
import { fromEither, type Steps } from "./steps.js"

/** The header a follower names itself with when it opens the change stream. */
export const NAME_HEADER = "follower-name"

/** The header of the change stream's answer that gives a named follower the id its reports name. */
export const STREAM_HEADER = "follower-stream"

/** The longest `wait` of a fleet query, in seconds. */
export const MAX_WAIT_SECONDS = 60

const NO_FLEET = Answers.problem(
  "not_found",
  `This process keeps no replay ring, so no follower follows it and it serves no ${FOLLOWERS}: its operator must ` +
    "build the routing API over a route table (RouteTable.layer, or a follower's table)."
)

const fleetOf = (source: ChangeStream.Source): Effect.Effect<Fleet.Fleet> =>
  Effect.map(Effect.clock, (clock) => Fleet.of(source.ring, clock))

const invalidReport = (what: string) => (errors: ReadonlyArray<Route.FieldIssue>) =>
  Answers.problem(
    "invalid_report",
    `${what} breaks ${errors.length >= MAX_ISSUES ? `at least ${MAX_ISSUES}` : errors.length} rule(s): see "errors" ` +
      "for each one, and docs/scaling-out.md for the report protocol.",
    undefined,
    { errors }
  )

// --- joining: the change stream of a named follower ----------------------------------------------------------------

/**
 * The change stream's answer for `body`: as it is for a client that names no follower; with `Follower-Name` and the
 * scope `fleet:report`, the stream also joins the fleet while it is open, and the answer carries its id in
 * `Follower-Stream`. Without the scope the stream is served unlisted (no `Follower-Stream`: the follower knows). A bad
 * name is refused (400 `invalid_report` naming the header), a name connected already (409 `follower_name_taken`), a
 * join past the fleet's bounds (429 `too_many_followers`).
 */
export const joined = (
  source: ChangeStream.Source,
  request: Request,
  principal: Authenticator.Principal,
  body: OpenBody
): Effect.Effect<Response, Refusal> =>
  Effect.gen(function*() {
    const name = request.header(NAME_HEADER)
    const unlisted: Response = { status: 200, headers: ChangeStream.HEADERS, body: "", stream: body }
    if (name === undefined) return unlisted
    const problem = Fleet.checkName(name)
    if (problem !== undefined) {
      return yield* refuse(invalidReport("The follower's name")([{ path: "Follower-Name", message: problem }]))
    }
    if (!principal.scopes.includes(Scopes.REPORT)) return unlisted
    const fleet = yield* fleetOf(source)
    const refused = Fleet.refusesJoin(fleet, principal.id, name)
    if (refused !== undefined) return yield* refuse(refusal(refused))
    const member = {
      stream: Fleet.newStreamId(),
      principal: principal.id,
      name,
      address: (request.remoteAddress ?? "unknown").slice(0, Fleet.MAX_ADDRESS_LENGTH)
    }
    return {
      status: 200,
      headers: { ...ChangeStream.HEADERS, [STREAM_HEADER]: member.stream },
      body: "",
      stream: {
        open: (sink) => {
          // Taken by another stream since it was checked: this one follows unlisted (its reports are 404).
          Fleet.join(fleet, member)
          const stop = body.open(sink)
          return () => {
            stop()
            Fleet.leave(fleet, member.stream)
          }
        }
      }
    }
  })

// --- the query of the fleet ----------------------------------------------------------------------------------------

/** A fleet query: a page of the fleet, and a wait up to `waitMillis` for every connected follower to apply `revision`. */
export interface Query {
  readonly revision: number | undefined
  readonly waitMillis: number
  readonly limit: number
  readonly after: ReturnType<typeof FleetPage.parseCursor>
  readonly behindOnly: boolean
  /** A parameter of paging was given: the answer carries `counts` and `nextCursor` whatever they are. */
  readonly paged: boolean
}

const RULES = {
  revision: (value: string) =>
    /^[0-9]{1,16}$/.test(value) && Number.isSafeInteger(Number(value))
      ? undefined
      : `must be a revision: a whole number from 0 to ${Number.MAX_SAFE_INTEGER} in decimal digits (got ${
        JSON.stringify(value)
      })`,
  wait: (value: string) =>
    /^[0-9]{1,2}$/.test(value) && Number(value) <= MAX_WAIT_SECONDS
      ? undefined
      : `must be whole seconds from 0 to ${MAX_WAIT_SECONDS} (got ${JSON.stringify(value)})`,
  limit: (value: string) =>
    /^[0-9]{1,4}$/.test(value) && Number(value) >= 1 && Number(value) <= FleetPage.MAX_LIMIT
      ? undefined
      : `must be a whole number from 1 to ${FleetPage.MAX_LIMIT} (got ${JSON.stringify(value)})`,
  cursor: (value: string) =>
    FleetPage.parseCursor(value) === undefined
      ? "is not a cursor of the fleet: give the nextCursor of the previous page"
      : undefined,
  behind: (value: string) =>
    value === "true" || value === "false" ? undefined : `must be true or false (got ${JSON.stringify(value)})`
}

/** The fleet query in a raw query string, or every problem with it (as the listing's query reports them). */
export const parseQuery = (raw: string): Either.Either<Query, ReadonlyArray<Route.FieldIssue>> =>
  Either.flatMap(
    parseParameters(raw, RULES, "the fleet"),
    ({ behind, cursor, limit, revision, wait }) =>
      wait !== undefined && revision === undefined
        ? Either.left([{ path: "wait", message: "needs revision: give the revision to wait for, such as revision=42" }])
        : Either.right({
          revision: revision === undefined ? undefined : Number(revision),
          waitMillis: wait === undefined ? 0 : Number(wait) * 1000,
          limit: limit === undefined ? FleetPage.MAX_LIMIT : Number(limit),
          after: cursor === undefined ? undefined : FleetPage.parseCursor(cursor),
          behindOnly: behind === "true",
          paged: limit !== undefined || cursor !== undefined || behind !== undefined
        })
  )

// --- the report ----------------------------------------------------------------------------------------------------

const TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d{1,9})?Z$/
const MAX_STREAM_LENGTH = 64
const ENTRY_FIELDS = ["name", "address", "via", "connectedAt", "appliedRevision", "reportedAt", "connected", "source"]
const REPORT_FIELDS = ["stream", "appliedRevision", "source", "followers"]

// (v5) Where a follower's table came from; absent in the reports of earlier releases.
const isSource = (value: unknown): value is Fleet.Source =>
  value === "registry" || value === "database" || value === "snapshot" || value === "bootstrap"

const isRevision = (value: unknown): value is number =>
  typeof value === "number" && Number.isSafeInteger(value) && value >= 0

const timeOf = (value: unknown): number | undefined =>
  typeof value === "string" && TIME.test(value) && !Number.isNaN(Date.parse(value)) ? Date.parse(value) : undefined

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

// Each field's problem, pushed with its path; unknown fields are named.
const unknownFields = (value: Record<string, unknown>, known: ReadonlyArray<string>, at: string) =>
  Object.keys(value).filter((key) => !known.includes(key)).map((key) => ({
    path: at + key,
    message: `unknown field ${JSON.stringify(key)}: use ${known.join(", ")}`
  }))

const entryOf = (value: unknown, at: string, issues: Array<Route.FieldIssue>): Fleet.Entry | undefined => {
  if (!isObject(value)) {
    issues.push({ path: at.slice(0, -1), message: "must be an object with the fields of GET /v1/routing/followers" })
    return undefined
  }
  const found = unknownFields(value, ENTRY_FIELDS, at)
  const { address, appliedRevision, connected, connectedAt, name, reportedAt, source = null, via } = value
  const nameProblem = typeof name === "string" ? Fleet.checkName(name) : "must be a follower name (a string)"
  if (nameProblem !== undefined) found.push({ path: `${at}name`, message: nameProblem })
  if (typeof address !== "string" || address.length > Fleet.MAX_ADDRESS_LENGTH) {
    found.push({ path: `${at}address`, message: `must be a string of at most ${Fleet.MAX_ADDRESS_LENGTH} characters` })
  }
  const viaProblem = via === null
    ? undefined
    : typeof via === "string"
    ? Fleet.checkName(via)
    : "must be null or a name"
  if (viaProblem !== undefined) found.push({ path: `${at}via`, message: viaProblem })
  const connectedTime = timeOf(connectedAt)
  if (connectedTime === undefined) {
    found.push({
      path: `${at}connectedAt`,
      message: "must be a time in RFC 3339 UTC, such as 2026-11-26T09:30:12.345Z"
    })
  }
  const reportedTime = reportedAt === null ? null : timeOf(reportedAt)
  if (reportedTime === undefined) {
    found.push({ path: `${at}reportedAt`, message: "must be null or a time in RFC 3339 UTC" })
  }
  if (appliedRevision !== null && !isRevision(appliedRevision)) {
    found.push({ path: `${at}appliedRevision`, message: "must be null or a whole number from 0" })
  }
  if (typeof connected !== "boolean") found.push({ path: `${at}connected`, message: "must be true or false" })
  if (source !== null && !isSource(source)) {
    found.push({ path: `${at}source`, message: "must be null, registry, database, snapshot or bootstrap" })
  }
  issues.push(...found)
  if (found.length > 0) return undefined
  return {
    name: name as string,
    address: address as string,
    via: via as string | null,
    connectedAt: connectedTime!,
    appliedRevision: appliedRevision as number | null,
    reportedAt: reportedTime as number | null,
    connected: connected as boolean,
    source: source as Fleet.Source | null
  }
}

/** The report in a body, or every problem with it (up to `MAX_ISSUES`). */
export const parseReport = (body: unknown): Either.Either<Fleet.Report, ReadonlyArray<Route.FieldIssue>> => {
  if (!isObject(body)) {
    return Either.left([{
      path: "",
      message: "must be a JSON object: {\"stream\": \"<Follower-Stream>\", \"appliedRevision\": <n>, \"followers\": []}"
    }])
  }
  const issues = unknownFields(body, REPORT_FIELDS, "")
  const { appliedRevision, followers = [], source, stream } = body
  if (source !== undefined && !isSource(source)) {
    issues.push({ path: "source", message: "must be registry, database, snapshot or bootstrap" })
  }
  if (typeof stream !== "string" || stream.length === 0 || stream.length > MAX_STREAM_LENGTH) {
    issues.push({ path: "stream", message: "must be the Follower-Stream header of the follower's open change stream" })
  }
  if (!isRevision(appliedRevision)) {
    issues.push({ path: "appliedRevision", message: "must be the revision applied: a whole number from 0" })
  }
  const entries: Array<Fleet.Entry> = []
  if (!Array.isArray(followers)) issues.push({ path: "followers", message: "must be an array of follower entries" })
  else if (followers.length > Fleet.MAX_ENTRIES) {
    issues.push({
      path: "followers",
      message: `must hold at most ${Fleet.MAX_ENTRIES} entries (got ${followers.length})`
    })
  } else {
    for (let i = 0; i < followers.length && issues.length < MAX_ISSUES; i++) {
      const entry = entryOf(followers[i], `followers[${i}].`, issues)
      if (entry !== undefined) entries.push(entry)
    }
  }
  if (issues.length > 0) return Either.left(issues.slice(0, MAX_ISSUES))
  return Either.right({
    stream: stream as string,
    appliedRevision: appliedRevision as number,
    source: source as Fleet.Source | undefined,
    followers: entries
  })
}

const reportTooLarge = Answers.problem(
  "payload_too_large",
  `The report is larger than ${Fleet.MAX_REPORT_BYTES} bytes: a report carries at most ${Fleet.MAX_ENTRIES} entries.`,
  { connection: "close" }
)

const STREAM_NOT_FOUND = Answers.problem(
  "stream_not_found",
  "No change stream this token opened here has that id (it closed, or belongs to another process): a report rides " +
    "on an open stream; send the Follower-Stream of the stream now open."
)

const tooManyReports = (retryAfterMillis: number) =>
  Answers.problem(
    "too_many_reports",
    `This stream sent more than ${Fleet.REPORTS_PER_SECOND} reports in a second and this one was not taken: send the ` +
      "next after Retry-After.",
    { "retry-after": String(Math.max(1, Math.ceil(retryAfterMillis / 1000))) }
  )

const BOUND_NAMES = { perProcess: "this process lists", perPrincipal: "one principal may report" } as const

/** The answer to a join or a report the fleet refused. */
const refusal = (refused: Fleet.Refused): Response => {
  switch (refused._tag) {
    case "UnknownStream":
      return STREAM_NOT_FOUND
    case "TooFrequent":
      return tooManyReports(refused.retryAfterMillis)
    case "NameTaken":
      return Answers.problem(
        "follower_name_taken",
        `A follower named ${JSON.stringify(refused.name)} is connected to this process already: give each follower ` +
          "its own name (RouteFollower's name, FOLLOW_NAME), or follow without one, unlisted."
      )
    case "TooMany":
      return Answers.problem(
        "too_many_followers",
        `The fleet already holds ${refused.limit} followers, relayed ones included, the most ${
          BOUND_NAMES[refused.bound]
        }: this was not taken. Follow unlisted, or retry after Retry-After (docs/scaling-out.md, "The fleet's bounds").`,
        { "retry-after": String(FLEET_RETRY_AFTER_SECONDS) }
      )
    case "Unissued":
      return invalidReport("The report")([{
        path: refused.path,
        message: `is ${refused.revision}, above any revision this process has issued (${refused.highest}): report ` +
          "the revision of the last event applied"
      }])
  }
}

// --- answers -------------------------------------------------------------------------------------------------------

const nextLink = (request: Request, query: Query, last: Fleet.Entry): string => {
  const params = new URLSearchParams({ limit: String(query.limit) })
  if (query.revision !== undefined) params.set("revision", String(query.revision))
  if (query.behindOnly) params.set("behind", "true")
  params.set("cursor", FleetPage.cursorOf(last))
  return `<${request.base ?? ""}${FOLLOWERS}?${params.toString()}>; rel="next"`
}

// `{revision, items[, complete]}` as docs/http-api.md answers it; `counts` and `nextCursor` too when the query pages, or
// when the fleet holds more than one page.
const listed = (
  fleet: Fleet.Fleet,
  source: ChangeStream.Source,
  request: Request,
  query: Query,
  complete: boolean | undefined
): Response => {
  const revision = Fleet.latestRevision(source.ring)
  const page = FleetPage.page(fleet, { ...query, revision: query.revision ?? revision })
  const paging = query.paged || page.last !== undefined
  return Answers.json(
    200,
    `{"revision":${revision},"items":[${page.items.map(Fleet.entryJson).join(",")}]${
      complete === undefined ? "" : `,"complete":${complete}`
    }${
      paging
        ? `,"counts":${FleetPage.countsJson(page.counts)},"nextCursor":${
          page.last === undefined ? "null" : `"${FleetPage.cursorOf(page.last)}"`
        }`
        : ""
    }}`,
    {
      "cache-control": "no-store",
      ...(page.last === undefined ? {} : { link: nextLink(request, query, page.last) })
    }
  )
}

// Woken by the fleet's changes (a report, a join, a leave), never by a timer of its own but the wait's end.
const waitFor = (fleet: Fleet.Fleet, revision: number, waitMillis: number): Effect.Effect<boolean> => {
  if (Fleet.holds(fleet, revision) || waitMillis === 0) return Effect.sync(() => Fleet.holds(fleet, revision))
  return Effect.async<boolean>((resume) => {
    const unsubscribe = Fleet.subscribe(fleet, () => {
      if (!Fleet.holds(fleet, revision)) return
      unsubscribe()
      resume(Effect.succeed(true))
    })
    return Effect.sync(unsubscribe)
  }).pipe(
    Effect.timeoutTo({ duration: Duration.millis(waitMillis), onSuccess: (held) => held, onTimeout: () => false })
  )
}

const fleetQueryProblem = (errors: ReadonlyArray<Route.FieldIssue>) =>
  Answers.problem("invalid_query", `The fleet query has ${errors.length} problem(s): see "errors".`, undefined, {
    errors
  })

/** `GET /v1/routing/followers`: the fleet, once it holds the revision asked for or the wait is over. */
export const list: Steps = (core, request) =>
  Effect.gen(function*() {
    const source = core.changes
    if (source === undefined) return yield* refuse(NO_FLEET)
    const query = yield* fromEither(Either.mapLeft(parseQuery(request.query), fleetQueryProblem))
    const fleet = yield* fleetOf(source)
    const complete = query.revision === undefined
      ? undefined
      : yield* waitFor(fleet, query.revision, query.waitMillis)
    return listed(fleet, source, request, query, complete)
  })

/** `POST /v1/routing/followers`: a follower's report; it takes `fleet:report` besides `routes:read`. */
export const report: Steps = (core, request, principal) =>
  Effect.gen(function*() {
    if (!principal.scopes.includes(Scopes.REPORT)) return yield* refuse(Answers.REPORT_SCOPE)
    const source = core.changes
    if (source === undefined) return yield* refuse(NO_FLEET)
    const body = yield* Content.readJson(request, Content.CREATE_TYPES, {
      ...Content.bodyLimits(Fleet.MAX_REPORT_BYTES, core.limits.bodyTimeoutMillis),
      tooLarge: reportTooLarge
    })
    const taken = yield* fromEither(Either.mapLeft(parseReport(body), invalidReport("The report")))
    const fleet = yield* fleetOf(source)
    const refused = Fleet.report(fleet, principal.id, taken, Fleet.latestRevision(source.ring))
    return refused === undefined ? Answers.empty(204) : yield* refuse(refusal(refused))
  })
