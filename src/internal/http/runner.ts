/**
 * How the adapters run the core's answers: on a fiber of the host's runtime (its logger, clock and tracer) whose
 * resumptions continue at once (an immediate scheduler), so that an answer needing nothing asynchronous is complete
 * when the call that asked returns, and one that waits (a body, a database) is given inside the callback that ends the
 * wait, as a hand-written Node server answers; answering from a later task halves Node's throughput (bench/).
 * `RoutingHandler.handle` itself starts nothing: its Effect is run here, once, by the adapter that asked.
 *
 * @internal
 */
import type { Effect, Fiber } from "effect"
import { Exit, FiberRef, Runtime, Scheduler } from "effect"

const immediate = Scheduler.make((task) => task())

/** Starts an Effect now: its end when nothing in it waited, else the fiber it waits in. */
export type Start = <A>(effect: Effect.Effect<A>) => Exit.Exit<A> | Fiber.RuntimeFiber<A>

/** Starts Effects on `runtime`, resumed at once. */
export const make = (runtime: Runtime.Runtime<never>): Start => {
  const runFork = Runtime.runFork(Runtime.setFiberRef(runtime, FiberRef.currentScheduler, immediate))
  return <A>(effect: Effect.Effect<A>) => {
    if (Exit.isExit(effect)) return effect as Exit.Exit<A>
    const fiber = runFork(effect)
    return fiber.unsafePoll() ?? fiber
  }
}

/** Calls `done` with the end of a started Effect: at once when it has ended. */
export const observe = <A>(started: Exit.Exit<A> | Fiber.RuntimeFiber<A>, done: (exit: Exit.Exit<A>) => void) =>
  Exit.isExit(started) ? done(started) : started.addObserver(done)

/** The answer of a started Effect, at once when it has ended, else when it does; a failure is `fallback`. */
export const value = <A>(started: Exit.Exit<A> | Fiber.RuntimeFiber<A>, fallback: A): A | Promise<A> => {
  if (Exit.isExit(started)) return Exit.isSuccess(started) ? started.value : fallback
  return new Promise((resolve) => started.addObserver((exit) => resolve(Exit.isSuccess(exit) ? exit.value : fallback)))
}
