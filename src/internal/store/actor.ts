/**
 * Who makes a change from code (`RouteRepository.Actor`), and how a store settles a change's actor. Here, not in
 * `RouteRepository`, so that the stores read it without importing the module that builds the memory store.
 *
 * @internal
 */
import { Clock, Context, Effect } from "effect"
import type { WriteOptions } from "../../RouteRepository.js"

/**
 * Who makes the changes of code run with it: the log records it as each change's `actor` (`null`, the default, for
 * none). The HTTP API passes the authenticated principal's id instead (`WriteOptions.actor`), which wins.
 *
 * @example
 * repo.update(id, patch).pipe(Effect.provideService(RouteRepository.Actor, "deploy-bot"))
 *
 * @since 0.4.0
 */
export class Actor extends Context.Reference<Actor>()("route-registry/RouteRepository/Actor", {
  defaultValue: (): string | null => null
}) {}

/** Runs `change` with its actor: the one the options name, else the one in context (read without a fiber if given). */
export const withActor = <A, E, R>(
  options: WriteOptions | undefined,
  change: (actor: string | null) => Effect.Effect<A, E, R>
): Effect.Effect<A, E, R> => options?.actor !== undefined ? change(options.actor) : Effect.flatMap(Actor, change)

/**
 * `withActor` with the fiber's clock, both read in one step of the fiber: a memory store's create takes a few
 * microseconds, and a step of its own to read the actor was a measurable part of them (docs/performance.md).
 */
export const withActorAndClock = <A, E, R>(
  options: WriteOptions | undefined,
  change: (actor: string | null, clock: Clock.Clock) => Effect.Effect<A, E, R>
): Effect.Effect<A, E, R> =>
  Effect.withFiberRuntime((fiber) =>
    change(
      options?.actor !== undefined ? options.actor : Context.get(fiber.currentContext, Actor),
      Context.get(fiber.currentDefaultServices, Clock.Clock)
    )
  )
