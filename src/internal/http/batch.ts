/**
 * Change sets (docs/batches.md): `POST /v1/routing/batch`, many creates, updates and deletes that take effect together
 * or not at all. The body is checked whole first (`invalid_batch`: its shape), then each operation with the rules of
 * the create or the patch it carries (`invalid_route`, every problem at `operations[<i>]…`), then the store decides the
 * batch on the state after it; the first refused operation answers as it would alone, every refused one's place in
 * `errors`.
 *
 * @internal
 */
import { Effect, Either } from "effect"
import * as Route from "../../Route.js"
import type * as RouteRepository from "../../RouteRepository.js"
import { MAX_ISSUES } from "../route/validate.js"
import { MAX_BATCH_DESCRIPTION_LENGTH } from "../store/batch.js"
import * as Answers from "./answers.js"
import { refuse } from "./answers.js"
import * as Conditional from "./conditional.js"
import * as Content from "./content.js"
import type { Response } from "./exchange.js"
import * as History from "./history.js"
import * as Idempotency from "./idempotency.js"
import { catalogIssues } from "./operations.js"
import * as Ownership from "./ownership.js"
import { type Core, fromEither, type Steps } from "./steps.js"

/** The most operations one batch holds. */
export const MAX_OPERATIONS = 5_000

type Issue = Route.FieldIssue

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

// The fields each kind of operation holds.
const FIELDS = {
  create: ["op", "route"],
  update: ["op", "id", "patch", "ifMatch"],
  delete: ["op", "id", "ifMatch"]
} as const

type Op = keyof typeof FIELDS

const OPS = Object.keys(FIELDS) as ReadonlyArray<Op>

// The shape of one operation (`invalid_batch`): an object of a known op with its fields, ids as strings.
const shapeIssues = (operation: unknown, at: string, seen: Map<string, number>, index: number): Array<Issue> => {
  if (!isObject(operation)) {
    return [{ path: at, message: "must be an object such as {\"op\": \"create\", \"route\": {…}}" }]
  }
  const op = operation.op
  if (typeof op !== "string" || !(OPS as ReadonlyArray<string>).includes(op)) {
    return [{
      path: `${at}.op`,
      message: `must be one of ${OPS.map((name) => `"${name}"`).join(", ")} (got ${JSON.stringify(op ?? null)})`
    }]
  }
  const fields: ReadonlyArray<string> = FIELDS[op as Op]
  const issues: Array<Issue> = Object.keys(operation).filter((key) => !fields.includes(key)).map((key) => ({
    path: `${at}.${key}`,
    message: `unknown field ${JSON.stringify(key)}: a ${op} holds ${fields.join(", ")}`
  }))
  if (op === "create" && operation.route === undefined) issues.push({ path: `${at}.route`, message: "is required" })
  if (op === "update" && operation.patch === undefined) issues.push({ path: `${at}.patch`, message: "is required" })
  if (op !== "create") {
    const id = operation.id
    if (typeof id !== "string") issues.push({ path: `${at}.id`, message: "is required: the id of a stored route" })
    else if (seen.has(id)) {
      issues.push({
        path: `${at}.id`,
        message: `names route ${id} again (operations[${seen.get(id)}] does): each route at most once per batch`
      })
    } else seen.set(id, index)
    if (operation.ifMatch !== undefined && typeof operation.ifMatch !== "string") {
      issues.push({ path: `${at}.ifMatch`, message: "must be an ETag as a string, such as \"\\\"42\\\"\"" })
    }
  }
  return issues
}

/** Every problem with the shape of a batch's body, at most `MAX_ISSUES`; none for a batch. */
export const batchIssues = (body: unknown): Array<Issue> => {
  if (!isObject(body)) {
    return [{ path: "", message: "must be a JSON object: {\"operations\": [ … ], \"description\": \"…\"}" }]
  }
  const issues: Array<Issue> = Object.keys(body).filter((key) => key !== "operations" && key !== "description").map((
    key
  ) => ({ path: key, message: `unknown field ${JSON.stringify(key)}: a batch holds operations and description` }))
  const { description, operations } = body
  if (
    description !== undefined && (typeof description !== "string" || description.length > MAX_BATCH_DESCRIPTION_LENGTH)
  ) {
    issues.push({ path: "description", message: `must be text of at most ${MAX_BATCH_DESCRIPTION_LENGTH} characters` })
  }
  if (!Array.isArray(operations)) {
    issues.push({ path: "operations", message: "is required: a list of 1 to 5,000 operations" })
  } else if (operations.length === 0 || operations.length > MAX_OPERATIONS) {
    issues.push({
      path: "operations",
      message: `must hold 1 to 5,000 operations (got ${operations.length})` +
        (operations.length === 0 ? "" : ": split the change into several batches")
    })
  } else {
    const seen = new Map<string, number>()
    for (let i = 0; i < operations.length && issues.length < MAX_ISSUES; i++) {
      issues.push(...shapeIssues(operations[i], `operations[${i}]`, seen, i))
    }
  }
  return issues.slice(0, MAX_ISSUES)
}

const under = (at: string, issues: ReadonlyArray<Issue>): Array<Issue> =>
  issues.map((issue) => ({ path: issue.path === "" ? at : `${at}.${issue.path}`, message: issue.message }))

// One operation of a batch of the right shape, with the rules of the create or the patch it carries.
const operationOf = (
  core: Core,
  operation: Record<string, unknown>,
  at: string
): Either.Either<RouteRepository.BatchOperation, Array<Issue>> => {
  const ifMatch = Conditional.ifMatch(operation.ifMatch as string | undefined)?.ifMatch
  const id = operation.id as string
  if (operation.op === "delete") return Either.right({ op: "delete", id, ifMatch })
  const checked = (validated: Either.Either<Route.CreateRoute | Route.RoutePatch, ReadonlyArray<Issue>>) =>
    Either.flatMap(Either.mapLeft(validated, (issues) => under(at, issues)), (fields) => {
      const issues = catalogIssues(core, fields)
      return issues.length === 0 ? Either.right(fields) : Either.left(under(at, issues))
    })
  return operation.op === "create"
    ? Either.map(
      checked(Route.validateCreate(operation.route)),
      (route) => ({ op: "create", route: route as Route.CreateRoute })
    )
    : Either.map(checked(Route.validatePatch(operation.patch)), (patch) => ({ op: "update", id, patch, ifMatch }))
}

/** The operations of a body of the right shape, or every problem their routes and patches have. */
export const operationsOf = (
  core: Core,
  operations: ReadonlyArray<Record<string, unknown>>
): Either.Either<Array<RouteRepository.BatchOperation>, Array<Issue>> => {
  const valid: Array<RouteRepository.BatchOperation> = []
  const issues: Array<Issue> = []
  operations.forEach((operation, i) => {
    if (issues.length >= MAX_ISSUES) return
    const at = `operations[${i}].${operation.op === "create" ? "route" : "patch"}`
    Either.match(operationOf(core, operation, at), {
      onLeft: (found) => issues.push(...found),
      onRight: (checked) => valid.push(checked)
    })
  })
  return issues.length > 0 ? Either.left(issues.slice(0, MAX_ISSUES)) : Either.right(valid)
}

const invalidBatch = (errors: ReadonlyArray<Issue>) =>
  Answers.problem(
    "invalid_batch",
    "The body is not a batch: send {\"operations\": [ … ]} with 1 to 5,000 operations, each " +
      "{\"op\": \"create\", \"route\": …}, {\"op\": \"update\", \"id\": …, \"patch\": …} or {\"op\": \"delete\", \"id\": …}, " +
      "each route id at most once.",
    undefined,
    { errors }
  )

const NO_BATCHES = Answers.problem(
  "not_found",
  "This process's store does not apply change sets (a store of the host's own): send each change on its own."
)

// The answer the first refused operation would get alone, with the place of every refused one in the batch; a refusal
// an idempotency key kept is marked as replayed.
const refused = (
  core: Core,
  { index, reason, refusals = [{ index, reason }], replayed }: RouteRepository.BatchRefused
) =>
  Effect.flatMap(
    (core.failures[reason._tag] as (error: typeof reason) => Effect.Effect<Response>)(reason),
    (alone) => {
      const problem = JSON.parse(alone.body) as Record<string, unknown>
      const errors = refusals.slice(0, MAX_ISSUES).map((found) => ({
        path: `operations[${found.index}]`,
        message: found.reason.message
      }))
      return refuse(Idempotency.replay({ ...alone, body: JSON.stringify({ ...problem, errors }) }, replayed === true))
    }
  )

const resultJson = (outcome: RouteRepository.BatchOutcome, dryRun: boolean): string =>
  `{"status":${outcome.status},"route":${outcome.route === null ? "null" : Route.toJson(outcome.route)},` +
  `"etag":${outcome.route === null ? "null" : JSON.stringify(Conditional.etagOf(outcome.route.revision))},` +
  `"revision":${dryRun ? "null" : outcome.revision}}`

/**
 * `POST /v1/routing/batch`. With an `Idempotency-Key`, as a create's: checked before the body, and applied at most once
 * per key and principal, the first answer given again, a refusal decided on the stored routes too; a dry run leaves
 * the key untouched.
 */
export const batch: Steps = (core, request, principal) =>
  Effect.gen(function*() {
    const dryRun = yield* fromEither(History.dryRunOf(request.query))
    const requestKey = yield* Idempotency.requestKey(request.header(Idempotency.HEADER), principal.id)
    const body = yield* Content.readJson(request, Content.CREATE_TYPES, core.batchLimits)
    const issues = batchIssues(body)
    if (issues.length > 0) return yield* refuse(invalidBatch(issues))
    const operations = yield* fromEither(
      Either.mapLeft(
        operationsOf(core, (body as { operations: ReadonlyArray<Record<string, unknown>> }).operations),
        Answers.invalidRoute
      )
    )
    const batches = core.batches
    if (batches === undefined) return yield* refuse(NO_BATCHES)
    const keyed = dryRun ? undefined : requestKey
    const apply = () =>
      batches.applyBatch(operations, {
        actor: principal.id,
        dryRun,
        pathPrefixes: Ownership.guard(principal, undefined)?.pathPrefixes,
        description: (body as { description?: string }).description,
        idempotency: keyed && {
          key: keyed.key,
          principal: keyed.principal,
          expiresAfter: core.keyExpiry,
          maxKeys: core.maxKeys,
          maxBytes: core.maxKeyBytes
        }
      })
    const applied = yield* (keyed === undefined ? apply() : Idempotency.exclusive(core.keysInFlight, keyed, apply))
      .pipe(Effect.catchTag("BatchRefused", (error) => refused(core, error)))
    if (!dryRun && applied.replayed !== true) {
      for (const operation of operations) if (operation.op !== "create") core.answers?.delete(operation.id)
    }
    return Idempotency.replay(
      Answers.json(
        200,
        `{"batch":${dryRun ? "null" : JSON.stringify(applied.batch)},"revision":${
          dryRun ? "null" : applied.revision
        },` +
          `"results":[${applied.results.map((outcome) => resultJson(outcome, dryRun)).join(",")}]}`,
        History.revisionHeaders(applied.revision, dryRun)
      ),
      applied.replayed === true
    )
  })
