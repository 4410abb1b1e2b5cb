/**
 * Using the store from code, with no HTTP: decode, create, find, and handle each failure by its tag.
 *
 *   npx tsx examples/programmatic.ts     # prints the outcome of each step; no server, no environment
 */
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import { Console, Effect, Option } from "effect"
import * as Route from "route-registry/Route"
import * as RouteRepository from "route-registry/RouteRepository"
import * as Env from "./env.js"

export type Outcome =
  | { readonly _tag: "Created"; readonly route: Route.Route }
  | { readonly _tag: "Refused"; readonly errors: ReadonlyArray<Route.FieldIssue> }
  | { readonly _tag: "Conflict"; readonly conflictingRouteId: string }

/** Validates untrusted input (JSON from a file, a form, another service) and stores it. */
export const register = (
  input: unknown
): Effect.Effect<
  Outcome,
  RouteRepository.StoreUnavailable | RouteRepository.ReadOnlyStore,
  RouteRepository.RouteRepository
> =>
  Effect.gen(function*() {
    const repository = yield* RouteRepository.RouteRepository
    const route = yield* repository.create(yield* Route.decodeCreate(input))
    return { _tag: "Created", route } as const
  }).pipe(
    // StoreUnavailable stays in the error channel: whether to retry is the caller's decision. So does ReadOnlyStore,
    // which only a follower's store fails with (RouteFollower.layer): writes go to the registry it follows.
    Effect.catchTags({
      InvalidRoute: (error) => Effect.succeed({ _tag: "Refused", errors: error.errors } as const),
      RouteConflict: (error) =>
        Effect.succeed({ _tag: "Conflict", conflictingRouteId: error.conflictingRouteId } as const),
      // A method no stored route has, when the registry already holds RouteRepository.MAX_METHODS of them.
      TooManyMethods: (error) =>
        Effect.succeed({ _tag: "Refused", errors: [{ path: "method", message: error.message }] } as const)
    })
  )

/** The route with that id, if there is one. */
export const lookup = (
  id: string
): Effect.Effect<Option.Option<Route.Route>, RouteRepository.StoreUnavailable, RouteRepository.RouteRepository> =>
  Effect.flatMap(RouteRepository.RouteRepository, (repository) => repository.findById(id)).pipe(
    Effect.map(Option.some),
    Effect.catchTags({ RouteNotFound: () => Effect.succeedNone })
  )

export const program = Effect.gen(function*() {
  const created = yield* register({ method: "GET", path: "/users/:id", middleware: ["auth"], handler: "Users#show" })
  // Another parameter name, same shape (/users/:): a router could not tell the two apart.
  const conflict = yield* register({ method: "GET", path: "/users/:userId", handler: "Users#find" })
  // Every problem is reported at once.
  const refused = yield* register({ method: "get", path: "/users//:id", handler: "Users#show", middlewares: [] })
  const found = created._tag === "Created" ? yield* lookup(created.route.id) : Option.none()
  const missing = yield* lookup(Route.makeRouteId(0))
  return { created, conflict, refused, found, missing }
})

if (Env.isMain(import.meta.url)) {
  program.pipe(
    Effect.provide(RouteRepository.layerMemory),
    Effect.flatMap((result) => Console.log(JSON.stringify(result, null, 2))),
    NodeRuntime.runMain
  )
}
