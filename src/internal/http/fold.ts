/**
 * Turning whatever the steps of a request end with into an answer, without a fiber when they complete at once
 * (`internal/now.ts`).
 *
 * @internal
 */
import { Cause, Effect, Exit } from "effect"
import { after, Pending } from "../now.js"
import type { Response } from "./exchange.js"

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
