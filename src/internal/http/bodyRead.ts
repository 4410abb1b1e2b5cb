/**
 * The body protocol of an adapter that reads a request's body itself, outside any fiber (the Node listener), so that
 * a request whose services answer at once is answered inside the body's last event.
 *
 * The adapter gives the core a `BodyRead`'s `reader` as its request's `body`. If the core asks for the body while
 * `handle` runs (every step before it passed at once), `wanted` tells the limits it asked under; the adapter reads the
 * body under them and hands the outcome back with `answer`, which decides the steps after the body with it. If the
 * core asks later, from a fiber, the body is read there through `fallback`.
 *
 * @internal
 */
import type { Effect, Exit } from "effect"
import * as Now from "../now.js"
import type { BodyFailure, BodyReader, Response } from "./exchange.js"

/** The limits the core reads a body under. */
export interface BodyLimits {
  readonly maxBytes: number
  readonly timeoutMillis: number
}

/** One request's body, read by its adapter or, failing that, through `fallback`. */
export class BodyRead {
  private limits: BodyLimits | undefined = undefined
  private read: Exit.Exit<Uint8Array, BodyFailure> | undefined = undefined

  constructor(private readonly fallback: BodyReader) {}

  /** The request's `body`, as the core calls it. */
  readonly reader: BodyReader = (maxBytes, timeoutMillis) => {
    this.limits = { maxBytes, timeoutMillis }
    const read = this.fallback(maxBytes, timeoutMillis)
    return new Now.Pending(() => this.read ?? read, () => read)
  }

  /** The limits the core asked for the body under, once it has asked; `undefined` before. */
  wanted(): BodyLimits | undefined {
    return this.limits
  }

  /** `answer`, the request's steps, decided with its body as the adapter read it (or why it could not). */
  answer(
    answer: Effect.Effect<Response>,
    body: Exit.Exit<Uint8Array, BodyFailure>,
    given: Now.Given
  ): Effect.Effect<Response> {
    this.read = body
    return Now.resolve(answer, given)
  }
}
