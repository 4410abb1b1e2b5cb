/**
 * Which operation answers a request, from the endpoint table (`endpoints.ts`): the path first (outside the API is the
 * host's), then the method (405, its `Allow` from the table), then a follower's read-only store (writes refused);
 * every request's token and scope checked first, its failures answered in one place, and its telemetry named by its
 * row.
 *
 * @internal
 */
import { Effect } from "effect"
import * as Answers from "./answers.js"
import * as Batch from "./batch.js"
import * as Dashboard from "./dashboard.js"
import { ENDPOINTS, type Name, type Resource, resourceAt } from "./endpoints.js"
import type { Request, Response } from "./exchange.js"
import * as Followers from "./followers.js"
import * as History from "./history.js"
import * as Operations from "./operations.js"
import * as Runner from "./runner.js"
import { answered, attempt, authorize, type Core, served, type Steps } from "./steps.js"

/** The steps of every endpoint of the table: a new row does not compile until it has its steps here. */
const STEPS: { readonly [N in Name]: Steps } = {
  list: Operations.list,
  changes: Operations.changes,
  followers: Followers.list,
  report: Followers.report,
  match: Operations.match,
  create: Operations.create,
  batch: Batch.batch,
  history: History.history,
  routeHistory: History.routeHistory,
  restore: History.restore,
  get: Operations.get,
  update: Operations.update,
  delete: Operations.remove
}

const answer = (core: Core, request: Request, name: Name, id: string): Effect.Effect<Response> => {
  const { operation, path, scope } = ENDPOINTS[name]
  const steps = STEPS[name]
  return served(
    core,
    request,
    path,
    operation,
    () =>
      answered(
        core,
        Runner.flatMapNow(authorize(core, request, scope), (principal) => steps(core, request, principal, id))
      )
  )
}

const notAllowed = (core: Core, request: Request, resource: Resource): Effect.Effect<Response> =>
  served(
    core,
    request,
    resource.path,
    "method_not_allowed",
    () => Effect.succeed(Answers.methodNotAllowed(request.method, request.path, resource.allow))
  )

// A follower's store serves reads only: on a path it writes, a write, or a method the path does not serve when it
// serves GET (the one method `READ_ONLY` allows), is answered as one its paths do not serve.
const refusedAsWrite = (resource: Resource, name: Name | undefined): boolean =>
  resource.writes && (name === undefined ? resource.endpoints.has("GET") : ENDPOINTS[name].write)

const readOnly = (core: Core, request: Request, resource: Resource): Effect.Effect<Response> =>
  served(core, request, resource.path, "method_not_allowed", () => Effect.succeed(Answers.READ_ONLY))

const dispatch = (core: Core, request: Request): Effect.Effect<Response> | undefined => {
  const path = request.path
  if (core.dashboard !== undefined && Dashboard.owns(path)) return Dashboard.serve(core.dashboard, request)
  const found = resourceAt(path)
  if (found === undefined) return undefined
  const { id, resource } = found
  const name = resource.endpoints.get(request.method)
  if (core.readOnly && refusedAsWrite(resource, name)) return readOnly(core, request, resource)
  return name === undefined ? notAllowed(core, request, resource) : answer(core, request, name, id)
}

/**
 * The answer to `request`, `undefined` (synchronously) for a path outside the collection; never throws, and its
 * Effect never fails. No fiber is started: whoever runs the Effect does (an adapter, on its immediate scheduler).
 */
export const handle = (core: Core, request: Request): Effect.Effect<Response> | undefined =>
  attempt(() => dispatch(core, request))
