/**
 * Running steps without a fiber when they complete at once: an `Exit` is folded on the spot, and a step that waits
 * only for what its caller can give (the clock) is decided with it. Nothing here knows HTTP: the memory store and the
 * live table use it as the request core does.
 *
 * @internal
 */
import type { Clock } from "effect"
import { Cause, Effect, Effectable, Exit } from "effect"
import { dual } from "effect/Function"

/** What a caller gives pending steps so that they decide without a fiber. */
export interface Given {
  /** The clock a fiber running the steps would read. */
  readonly clock: Clock.Clock
}

/**
 * A step that decides at once when it is given what it waits for (`Given`), or when what it waits for has come by
 * other means: a store in memory that reads the clock, a body an adapter read itself. It is an Effect all the same: a
 * fiber that runs it runs `fallback` (which reads the fiber's clock, say). The steps folded after it wait with it, so
 * a caller that holds the clock answers the whole request without a fiber (`resolve`).
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
export const after = <A, E, B, E2>(
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
