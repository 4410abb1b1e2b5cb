/**
 * Runs Connect-style functions `(req, res, next)` one after another, as Express and Connect do, catching what they
 * throw or reject with so that a host function can never take the process down.
 *
 * @internal
 */
import type { IncomingMessage, ServerResponse } from "node:http"

/**
 * A handler or middleware of the Node router: it answers with `res`, or calls `next()` to pass on, or `next(error)`
 * (or throws, or returns a rejected promise) to fail.
 */
export type NodeFunction = (
  req: IncomingMessage,
  res: ServerResponse,
  next: (error?: unknown) => void
) => unknown

/** How far a chain has got: `fns[started - 1]` is the function running, or the last one that ran. */
export interface Progress {
  started: number
}

const isPromiseLike = (u: unknown): u is PromiseLike<unknown> =>
  typeof u === "object" && u !== null && typeof (u as PromiseLike<unknown>).then === "function"

// What a function failed with, never `undefined`: `throw undefined` is still a failure.
const failure = (error: unknown): unknown =>
  error === undefined || error === null ? new Error("a route function failed without an error value") : error

/**
 * Calls `fns` in order, counting them in `progress`. `done` is called once: with no argument when the last function
 * passed on, or with the error of the first function that failed and that function's index. A function that neither
 * answers nor calls `next` ends the chain there, as in Connect. Only a function's first call of `next` counts; what
 * it throws or rejects with after that goes to `stray` with its index, so it is reported rather than lost or answered
 * twice.
 */
export const run = (
  fns: ReadonlyArray<NodeFunction>,
  req: IncomingMessage,
  res: ServerResponse,
  progress: Progress,
  done: (error?: unknown, at?: number) => void,
  stray: (error: unknown, at: number) => void
): void => {
  const step = (): void => {
    const at = progress.started
    if (at === fns.length) return done()
    progress.started = at + 1
    let settled = false
    const next = (error?: unknown) => {
      if (settled) return
      settled = true
      // As in Express, a falsy argument passes on and anything else is an error.
      if (error) done(error, at)
      else step()
    }
    const fail = (error: unknown) => settled ? stray(failure(error), at) : next(failure(error))
    try {
      const result = fns[at]!(req, res, next)
      if (isPromiseLike(result)) result.then(undefined, fail)
    } catch (error) {
      fail(error)
    }
  }
  step()
}
