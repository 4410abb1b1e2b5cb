/**
 * How the adapters run the core's answers: on a fiber of the host's runtime (its logger, clock and tracer) whose
 * resumptions continue at once (an immediate scheduler), so that an answer needing nothing asynchronous is complete
 * when the call that asked returns, and one that waits (a body, a database) is given inside the callback that ends the
 * wait, as a hand-written Node server answers; answering from a later task halves Node's throughput (bench/).
 * `RoutingHandler.handle` itself starts nothing: its Effect is run here, once, by the adapter that asked.
 *
 * The core's steps chain through `flatMapNow` and `catchNow`, which continue at once when what they follow has
 * already ended (an `Exit`: a token decided at once, a route read from memory), so that such an answer is an `Exit`
 * itself and `make`'s starter needs no fiber for it: a fiber cost a GET from memory about a third of its CPU in the
 * core (docs/performance.md, The admin read path back). An Effect that only reads what a fiber of the runtime would
 * read (its services and references: the request's span of such an answer) carries how to answer from the runtime
 * itself (`withRuntime`), and is answered so, with no fiber either.
 *
 * @internal
 */
import type { Cause, Fiber } from "effect"
import { Effect, Exit, FiberRef, Runtime, Scheduler } from "effect"

const immediate = Scheduler.make((task) => task())

const FROM_RUNTIME = Symbol("route-registry/Runner/fromRuntime")

// An Effect that carries its answer from a runtime (`withRuntime`).
interface FromRuntime<A> extends Effect.Effect<A> {
  readonly [FROM_RUNTIME]: (runtime: Runtime.Runtime<never>) => Exit.Exit<A>
}

/**
 * `effect`, which the runner answers instead with `fromRuntime` of its runtime: both must answer alike, `effect` on a
 * fiber of that runtime (with its context and references) and `fromRuntime` from the runtime's own.
 */
export const withRuntime = <A>(
  effect: Effect.Effect<A>,
  fromRuntime: (runtime: Runtime.Runtime<never>) => Exit.Exit<A>
): Effect.Effect<A> => Object.assign(effect, { [FROM_RUNTIME]: fromRuntime })

// A throw is a defect of the answer, as it is on a fiber.
const fromRuntime = <A>(effect: FromRuntime<A>, runtime: Runtime.Runtime<never>): Exit.Exit<A> => {
  try {
    return effect[FROM_RUNTIME](runtime)
  } catch (error) {
    return Exit.die(error)
  }
}

/** Starts an Effect now: its end when nothing in it waited, else the fiber it waits in. */
export type Start = <A>(effect: Effect.Effect<A>) => Exit.Exit<A> | Fiber.RuntimeFiber<A>

/** Starts Effects on `runtime`, resumed at once. */
export const make = (runtime: Runtime.Runtime<never>): Start => {
  const resumed = Runtime.setFiberRef(runtime, FiberRef.currentScheduler, immediate)
  const runFork = Runtime.runFork(resumed)
  return <A>(effect: Effect.Effect<A>) => {
    if (Exit.isExit(effect)) return effect as Exit.Exit<A>
    if (FROM_RUNTIME in effect) return fromRuntime(effect as FromRuntime<A>, resumed)
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

/** As `Effect.flatMap`, calling `f` at once when `effect` has already ended. */
export const flatMapNow = <A, E, B, E2>(
  effect: Effect.Effect<A, E>,
  f: (a: A) => Effect.Effect<B, E2>
): Effect.Effect<B, E | E2> => {
  if (!Exit.isExit(effect)) return Effect.flatMap(effect, f)
  const exit = effect as Exit.Exit<A, E>
  return Exit.isSuccess(exit) ? f(exit.value) : exit as Exit.Exit<never, E>
}

/** Handlers by tag, as `Effect.catchTags` takes them, of every tag `E` fails with. */
export type Cases<E extends { readonly _tag: string }, B> = {
  readonly [Tag in E["_tag"]]: (error: Extract<E, { readonly _tag: Tag }>) => Effect.Effect<B>
}

// The handler's answer to an ended Effect's one failure, when it has one.
const handled = <E extends { readonly _tag: string }, B>(
  cause: Cause.Cause<E>,
  cases: Cases<E, B>
): Effect.Effect<B> | undefined => {
  if (cause._tag !== "Fail") return undefined
  const tag: unknown = (cause.error as { readonly _tag?: unknown } | null)?._tag
  return typeof tag === "string" && Object.hasOwn(cases, tag)
    ? (cases as unknown as Record<string, (error: E) => Effect.Effect<B>>)[tag]!(cause.error)
    : undefined
}

/**
 * As `Effect.catchTags(effect, cases)` then `Effect.catchAllCause(otherwise)`, answering at once the failure of an
 * `effect` that has already ended.
 */
export const catchNow = <A, E extends { readonly _tag: string }, B>(
  effect: Effect.Effect<A, E>,
  cases: Cases<E, B>,
  otherwise: (cause: Cause.Cause<never>) => Effect.Effect<A | B>
): Effect.Effect<A | B> => {
  if (!Exit.isExit(effect)) {
    return Effect.catchAllCause(Effect.catchTags(effect, cases as any) as Effect.Effect<A | B>, otherwise)
  }
  const exit = effect as Exit.Exit<A, E>
  if (Exit.isSuccess(exit)) return exit as Exit.Exit<A>
  return handled(exit.cause, cases) ?? otherwise(exit.cause as Cause.Cause<never>)
}
