/**
 * Running the steps of a request without a fiber when they complete at once, and turning whatever they end with
 * into an answer.
 *
 * @internal
 */
import { Cause, Effect, Exit } from "effect"
import { dual } from "effect/Function"
import type { Response } from "../RoutingHandler.js"

/**
 * A request refused before it reached the store, carrying its answer. A class of its own, so nothing a service
 * fails with can be mistaken for an answer.
 */
export class Refusal {
  constructor(readonly response: Response) {}
}

/** Fails with the refusal of `response`, completed at once. */
export const refuse = (response: Response): Exit.Exit<never, Refusal> => Exit.fail(new Refusal(response))

/**
 * `Effect.flatMap`, folded at once when `self` has already completed (an `Exit`): `succeed(a)` then `f` is `f(a)`,
 * `fail(e)` then `f` is `fail(e)`. The result is the same; only, when nothing on the way suspends, no fiber has to run
 * it, which is most of the cost of a request (measured: bench/). A throw from `f` is a defect, as in `Effect.flatMap`.
 */
export const flatMapNow: {
  <A, B, E2>(f: (a: A) => Effect.Effect<B, E2>): <E>(self: Effect.Effect<A, E>) => Effect.Effect<B, E | E2>
  <A, E, B, E2>(self: Effect.Effect<A, E>, f: (a: A) => Effect.Effect<B, E2>): Effect.Effect<B, E | E2>
} = dual(2, <A, E, B, E2>(
  self: Effect.Effect<A, E>,
  f: (a: A) => Effect.Effect<B, E2>
): Effect.Effect<B, E | E2> => {
  if (!Exit.isExit(self)) return Effect.flatMap(self, f)
  const exit = self as Exit.Exit<A, E>
  return Exit.isSuccess(exit) ? call(() => f(exit.value)) : Exit.failCause(exit.cause)
})

/**
 * Calls a service (or any function returning an Effect) so that a throw, or a value that is not an Effect, becomes a
 * defect instead of escaping into the host: `Effect.suspend`, evaluated at once.
 */
export const call = <A, E>(f: () => Effect.Effect<A, E>): Effect.Effect<A, E> => {
  try {
    const effect = f()
    return Effect.isEffect(effect) ? effect : Exit.die(new TypeError(`expected an Effect, got ${typeof effect}`))
  } catch (error) {
    return Exit.die(error)
  }
}

/** Calls a function that answers at once, a throw becoming a defect. */
export const callNow = <A>(f: () => A): Exit.Exit<A> => {
  try {
    return Exit.succeed(f())
  } catch (error) {
    return Exit.die(error)
  }
}

/**
 * The answer to a request's steps: a success as is, a refusal as its answer, any other failure through `onFailure`
 * (which names the answers to the declared errors of the services), and a defect or undeclared error logged and
 * answered `internal`.
 */
export const answer = <E>(
  effect: Effect.Effect<Response, E | Refusal>,
  onFailure: (error: E) => Effect.Effect<Response> | undefined,
  internal: Response
): Effect.Effect<Response> => {
  const fromCause = (cause: Cause.Cause<E | Refusal>): Effect.Effect<Response> => {
    const failure = Cause.failureOption(cause)
    if (failure._tag === "Some") {
      const error = failure.value
      if (error instanceof Refusal) return Exit.succeed(error.response)
      // A service may fail with something outside its declared errors: that is a defect, answered below.
      const response = onFailure(error as E)
      if (response !== undefined) return response
    } else if (Cause.isInterruptedOnly(cause)) {
      // No failure to answer, and no one waiting for the answer.
      return Effect.failCause(cause as Cause.Cause<never>)
    }
    return Effect.as(Effect.logError("route-registry: unexpected error while answering a request", cause), internal)
  }
  if (!Exit.isExit(effect)) return Effect.matchCauseEffect(effect, { onSuccess: Exit.succeed, onFailure: fromCause })
  const exit = effect as Exit.Exit<Response, E | Refusal>
  return Exit.isSuccess(exit) ? exit as Exit.Exit<Response> : fromCause(exit.cause)
}
