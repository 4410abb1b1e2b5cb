/**
 * The core every operation runs in, and the steps they share, as plain functions every operation module imports
 * (`operations.ts`, the change log's `history.ts`, the fleet's `followers.ts`); `dispatch.ts` takes the first and last
 * of every request (`authorize`, `answered`, `served`) from the endpoint table.
 *
 * The core is an argument, not a service in the Effect's context: providing a service to each request cost about
 * 4.5 µs of CPU (measured on this machine, over half of a GET from memory), to reach what the handler already holds.
 *
 * @internal
 */
import type { Context, Duration } from "effect"
import { Cause, Effect, Either, Exit, Redacted } from "effect"
import type * as Authenticator from "../../Authenticator.js"
import type * as Catalog from "../../Catalog.js"
import type * as HostPaths from "../../HostPaths.js"
import type * as Route from "../../Route.js"
import type * as RouteRepository from "../../RouteRepository.js"
import * as Answers from "./answers.js"
import { type Refusal, refuse } from "./answers.js"
import type * as ChangeStream from "./changeStream.js"
import type * as Content from "./content.js"
import * as Credentials from "./credentials.js"
import type * as Dashboard from "./dashboard.js"
import type { Instrument, Operation, Scope } from "./endpoints.js"
import type { Request, Response } from "./exchange.js"
import * as Ownership from "./ownership.js"
import * as RouteAnswers from "./routeAnswers.js"
import * as Runner from "./runner.js"
import * as ServiceErrors from "./serviceErrors.js"

/** The core: its services, its configuration and what it keeps between requests. */
export interface Core {
  readonly repository: Context.Tag.Service<RouteRepository.RouteRepository>
  readonly authenticator: Context.Tag.Service<Authenticator.Authenticator>
  /** The store read at once, when it keeps its routes in memory (`RouteRepository.MemoryRead`). */
  readonly memoryRead: Context.Tag.Service<RouteRepository.MemoryRead> | undefined
  /** The store's creates once per idempotency key, when it offers them (`RouteRepository.Idempotent`). */
  readonly idempotent: Context.Tag.Service<RouteRepository.Idempotent> | undefined
  /** The store's change log, when it keeps one (`RouteRepository.ChangeLog`): history, and the change stream's reads. */
  readonly changeLog: Context.Tag.Service<RouteRepository.ChangeLog> | undefined
  /** The store's restores, when it offers them (`RouteRepository.Restorable`). */
  readonly restorable: Context.Tag.Service<RouteRepository.Restorable> | undefined
  /** The store's change sets, when it applies them (`RouteRepository.Batches`). */
  readonly batches: Context.Tag.Service<RouteRepository.Batches> | undefined
  /** The store serves reads only (`RouteRepository.ReadOnly`): writes are answered at once, unauthenticated. */
  readonly readOnly: boolean
  readonly limits: Content.BodyLimits
  /** The limits a change set's body is read under. */
  readonly batchLimits: Content.BodyLimits
  /** The answer of each declared error of a service, and of a refusal (`ServiceErrors.cases`). */
  readonly failures: ServiceErrors.Cases
  /** The host's function names, when it declared them: a route naming another is refused. */
  readonly catalog: Catalog.Names | undefined
  /** The paths the host serves itself: no route may take them, and `match` answers them as the host's. */
  readonly hostPaths: HostPaths.Paths
  /** How long a store remembers an idempotency key. */
  readonly keyExpiry: Duration.Duration
  /** How many keys, and how many bytes of them, one principal may hold at once. */
  readonly maxKeys: number
  readonly maxKeyBytes: number
  /** The idempotency keys (under their principals) of the creates this core is running. */
  readonly keysInFlight: Set<string>
  /**
   * Routes' 200s by id, each built once per revision (for the route object it was built for), when the store keeps
   * its routes in memory (`memoryRead`, which hands out one object per revision), as a hand-written server
   * keeps them; for `RouteAnswers.KEPT_ANSWERS` ids at most.
   */
  readonly answers: RouteAnswers.Kept | undefined
  /** Telemetry, when the host turned it on. */
  readonly instrument: Instrument | undefined
  /** What the change stream reads, when the API is built over a route table: its table and history. */
  readonly changes: ChangeStream.Source | undefined
  /** The dashboard's page and assets, when the host turned it on: served below `Dashboard.UI` with no token. */
  readonly dashboard: Dashboard.Assets | undefined
}

/** What an operation's steps fail with: a refusal carrying its answer, or a declared error of a service. */
export type Failure = Refusal | ServiceErrors.ServiceError

/** An operation's steps after its token and scope were checked; `id` is the route its path names (`""` for none). */
export type Steps = (
  core: Core,
  request: Request,
  principal: Authenticator.Principal,
  id: string
) => Effect.Effect<Response, Failure>

const REFUSALS: Record<Scope, Response> = {
  "routes:read": Answers.READ_SCOPE,
  "routes:write": Answers.WRITE_SCOPE
}

/**
 * Authentication and scope, before anything else is read: an unauthenticated caller learns nothing more. A request
 * view or an authenticator that throws is a defect of the answer, logged with its cause.
 */
export const authorize = (
  core: Core,
  request: Request,
  scope: Scope
): Effect.Effect<Authenticator.Principal, Failure> => {
  try {
    const token = Credentials.credential(request.header("authorization"))
    if (!Redacted.isRedacted(token)) return refuse(token)
    const decided = core.authenticator.authenticate(token)
    // Decided at once: the authenticator is done with the token. One that waits keeps it: the next request gets its own.
    if (Exit.isExit(decided)) Credentials.release(token)
    return Runner.flatMapNow(
      decided,
      (principal) => Ownership.holds(principal.scopes, scope) ? Exit.succeed(principal) : refuse(REFUSALS[scope])
    )
  } catch (error) {
    return Effect.die(error)
  }
}

// Logged with what went wrong (a cause, or what a request view threw), and answered without it.
const logged = (what: unknown) =>
  Effect.as(Effect.logError("route-registry: unexpected error while answering a request", what), Answers.INTERNAL_ERROR)

/**
 * The answer to an operation's steps: a success as is, a refusal as its answer, a declared error of a service as its
 * problem (`ServiceErrors`), and a defect or an undeclared error logged and answered `internal_error`; an interruption
 * stays one (no one waits for the answer).
 */
export const answered = (core: Core, steps: Effect.Effect<Response, Failure>): Effect.Effect<Response> =>
  Runner.catchNow(
    steps,
    core.failures,
    (cause) => Cause.isInterruptedOnly(cause) ? Effect.failCause(cause) : logged(cause)
  )

/** An answer, built; a request view that throws (an adapter's fault) is answered and logged, never thrown into the host. */
export const attempt = <A extends Effect.Effect<Response> | undefined>(build: () => A): A | Effect.Effect<Response> => {
  try {
    return build()
  } catch (error) {
    return logged(error)
  }
}

/** An operation's answer, with its telemetry when it is on: `route` is its path in the endpoint table. */
export const served = (
  core: Core,
  request: Request,
  route: string,
  operation: Operation,
  build: () => Effect.Effect<Response>
): Effect.Effect<Response> => {
  const response = attempt(build)
  return core.instrument === undefined ? response : core.instrument(request, route, operation, response)
}

/** A route's answer with its ETag, kept per revision when the store keeps its routes in memory (`routeAnswers.ts`). */
export const withRoute = (
  core: Core,
  status: number,
  route: Route.StoredRoute,
  headers?: Record<string, string>
): Effect.Effect<Response> => RouteAnswers.answer(core.answers, status, route, headers)

/** A check's result, its problems refused with the answer `refusal` builds from them. */
export const validated = <A, L>(
  result: Either.Either<A, L>,
  refusal: (problems: L) => Response
): Effect.Effect<A, Refusal> => Either.isRight(result) ? Effect.succeed(result.right) : refuse(refusal(result.left))

/** A result whose failure is already its answer. */
export const fromEither = <A>(either: Either.Either<A, Response>): Effect.Effect<A, Refusal> =>
  Either.isRight(either) ? Effect.succeed(either.right) : refuse(either.left)
