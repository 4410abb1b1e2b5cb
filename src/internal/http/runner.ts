/**
 * How the core's answers are run: on a fiber of the host's runtime (its logger, clock and tracer) whose resumptions
 * continue at once (an immediate scheduler), so that an answer needing nothing asynchronous is complete when the
 * call that asked returns, and one that waits (a body, a database) is given inside the callback that ends the wait,
 * as a hand-written Node server answers; answering from a later task halves Node's throughput (bench/).
 *
 * @internal
 */
import { Effect, Exit, Fiber, FiberRef, Runtime, Scheduler } from "effect"

const immediate = Scheduler.make((task) => task())

/** Starts an Effect now: its end when nothing in it waited, else the fiber it waits in. */
export type Start = <A>(effect: Effect.Effect<A>) => Exit.Exit<A> | Fiber.RuntimeFiber<A>

// The fibers `join` waits for, by the Effect it returned: started again, such an Effect is its fiber, not a new one.
const joined = new WeakMap<Effect.Effect<unknown>, Fiber.RuntimeFiber<unknown>>()

/** Starts Effects on `runtime`, resumed at once. */
export const make = (runtime: Runtime.Runtime<never>): Start => {
  const runFork = Runtime.runFork(Runtime.setFiberRef(runtime, FiberRef.currentScheduler, immediate))
  return <A>(effect: Effect.Effect<A>) => {
    if (Exit.isExit(effect)) return effect as Exit.Exit<A>
    const fiber = (joined.get(effect) as Fiber.RuntimeFiber<A> | undefined) ?? runFork(effect)
    return fiber.unsafePoll() ?? fiber
  }
}

/** The end of a started Effect as an Effect: interrupting it interrupts the fiber it waits for. */
export const join = <A>(started: Exit.Exit<A> | Fiber.RuntimeFiber<A>): Effect.Effect<A> => {
  if (Exit.isExit(started)) return started
  const effect = Effect.onInterrupt(Fiber.join(started), () => Fiber.interrupt(started))
  joined.set(effect, started)
  return effect
}

/** Calls `done` with the end of a started Effect: at once when it has ended. */
export const observe = <A>(started: Exit.Exit<A> | Fiber.RuntimeFiber<A>, done: (exit: Exit.Exit<A>) => void) =>
  Exit.isExit(started) ? done(started) : started.addObserver(done)
