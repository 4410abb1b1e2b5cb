/**
 * Running the steps of a request without a fiber when they complete at once, and turning whatever they end with
 * into an answer.
 *
 * @internal
 */
import type { Clock } from "effect"
import { Cause, Effect, Effectable, Exit } from "effect"
import { dual } from "effect/Function"
import type { BodyFailure, Response } from "../RoutingHandler.js"

/**
 * A request refused before it reached the store, carrying its answer. A class of its own, so nothing a service
 * fails with can be mistaken for an answer.
 */
export class Refusal {
  constructor(readonly response: Response) {}
}

/** Fails with the refusal of `response`, completed at once. */
export const refuse = (response: Response): Exit.Exit<never, Refusal> => Exit.fail(new Refusal(response))

/** What an adapter gives the steps of a request so that they decide without a fiber. */
export interface Given {
  /** The clock a fiber running the steps would read. */
  readonly clock: Clock.Clock
  /** The request's body once the adapter has read it (or failed to), for the steps that wait for it. */
  readonly body?: Exit.Exit<Uint8Array, BodyFailure> | undefined
}

/**
 * A step that decides at once when it is given what it waits for (`Given`): a store in memory that reads the clock, a
 * body the adapter reads itself. It is an Effect all the same: a fiber that runs it runs `fallback` (which reads the
 * fiber's clock, or the body through the request). The steps folded after it wait with it, so an adapter that holds
 * the clock and reads the body itself answers the whole request without a fiber (`resolve`).
 */
export class Pending<A, E> extends Effectable.Class<A, E> {
  constructor(
    readonly decide: (given: Given) => Effect.Effect<A, E>,
    readonly fallback: () => Effect.Effect<A, E>
  ) {
    super()
  }
  commit(): Effect.Effect<A, E> {
    return this.fallback()
  }
}

export const isPending = <A, E>(effect: Effect.Effect<A, E>): effect is Pending<A, E> => effect instanceof Pending

/** A step that needs only the clock, decided at once by `decide`: what a store in memory answers with. */
export const withClock = <A, E>(decide: (clock: Clock.Clock) => Effect.Effect<A, E>): Effect.Effect<A, E> =>
  new Pending((given) => decide(given.clock), () => Effect.clockWith(decide))

/** The body, given by an adapter that reads it itself; `read` reads it in a fiber. */
export const bodyOr = (read: Effect.Effect<Uint8Array, BodyFailure>): Effect.Effect<Uint8Array, BodyFailure> =>
  new Pending((given) => given.body ?? read, () => read)

const decided = <A, E>(pending: Pending<A, E>, given: Given): Effect.Effect<A, E> => {
  try {
    return pending.decide(given)
  } catch (error) {
    return Exit.die(error)
  }
}

/** The steps decided with `given` as far as they go without a fiber: an `Exit` when nothing on the way suspends. */
export const resolve = <A, E>(effect: Effect.Effect<A, E>, given: Given): Effect.Effect<A, E> => {
  while (effect instanceof Pending) effect = decided(effect as Pending<A, E>, given)
  return effect
}

// `then` after `self` once it is given what it waits for; run by a fiber, `fallback`.
const after = <A, E, B, E2>(
  self: Pending<A, E>,
  then: (effect: Effect.Effect<A, E>) => Effect.Effect<B, E2>,
  fallback: () => Effect.Effect<B, E2>
): Effect.Effect<B, E2> => new Pending((given) => then(decided(self, given)), fallback)

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
  if (self instanceof Pending) {
    return after(self as Pending<A, E>, (effect) => flatMapNow(effect, f), () => Effect.flatMap(self, f))
  }
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

/** `Effect.matchEffect`, folded at once when `self` has already completed, as `flatMapNow` folds. */
export const matchNow = <A, E, B, E2>(
  self: Effect.Effect<A, E>,
  onFailure: (error: E) => Effect.Effect<B, E2>,
  onSuccess: (a: A) => Effect.Effect<B, E2>
): Effect.Effect<B, E2> => {
  if (self instanceof Pending) {
    return after(
      self as Pending<A, E>,
      (effect) => matchNow(effect, onFailure, onSuccess),
      () => Effect.matchEffect(self, { onFailure, onSuccess })
    )
  }
  if (!Exit.isExit(self)) return Effect.matchEffect(self, { onFailure, onSuccess })
  const exit = self as Exit.Exit<A, E>
  if (Exit.isSuccess(exit)) return call(() => onSuccess(exit.value))
  // As `Effect.matchEffect` does: a failure is handled; a defect or an interruption goes on.
  const cause = exit.cause
  return Cause.isFailType(cause) ? call(() => onFailure(cause.error)) : Exit.failCause(cause as Cause.Cause<never>)
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
  if (effect instanceof Pending) {
    return after(
      effect as Pending<Response, E | Refusal>,
      (decided) => answer(decided, onFailure, internal),
      () => Effect.matchCauseEffect(effect, { onSuccess: Exit.succeed, onFailure: fromCause })
    )
  }
  if (!Exit.isExit(effect)) return Effect.matchCauseEffect(effect, { onSuccess: Exit.succeed, onFailure: fromCause })
  const exit = effect as Exit.Exit<Response, E | Refusal>
  return Exit.isSuccess(exit) ? exit as Exit.Exit<Response> : fromCause(exit.cause)
}
