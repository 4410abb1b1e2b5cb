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

const isPromiseLike = (u: unknown): u is PromiseLike<unknown> =>
  typeof u === "object" && u !== null && typeof (u as PromiseLike<unknown>).then === "function"

// What a function failed with, never `undefined`: `throw undefined` is still a failure.
const failure = (error: unknown): unknown =>
  error === undefined || error === null ? new Error("a route function failed without an error value") : error

/**
 * Calls `fns` in order. `done()` is called once: with no argument when the last function passed on, or with the
 * error of the first function that failed. A function that neither answers nor calls `next` ends the chain there,
 * as in Connect. Only a function's first call of `next` counts; what it throws or rejects with after that goes to
 * `stray`, so it is logged rather than lost or answered twice.
 */
export const run = (
  fns: ReadonlyArray<NodeFunction>,
  req: IncomingMessage,
  res: ServerResponse,
  done: (error?: unknown) => void,
  stray: (error: unknown) => void
): void => {
  let index = 0
  const step = (): void => {
    if (index === fns.length) return done()
    const fn = fns[index++]!
    let settled = false
    const next = (error?: unknown) => {
      if (settled) return
      settled = true
      // As in Express, a falsy argument passes on and anything else is an error.
      if (error) done(error)
      else step()
    }
    const fail = (error: unknown) => settled ? stray(failure(error)) : next(failure(error))
    try {
      const result = fn(req, res, next)
      if (isPromiseLike(result)) result.then(undefined, fail)
    } catch (error) {
      fail(error)
    }
  }
  step()
}
