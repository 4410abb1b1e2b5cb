/**
 * The core both routers share, whatever the form of the host's functions (Connect-style for `RouterListener`, `HttpApp`s
 * for `RouterHttpApp`): resolving a route's function names once per stored version of the route, and warning once
 * about a name no function is registered under. A framework integration builds on it the same way: give it the
 * host's functions and how to make one runnable thing of a route's middleware and handler.
 *
 * @internal
 */
import { Effect } from "effect"
import type * as Route from "../../Route.js"

/** The host's functions by the names routes give them: handlers of type `H`, middleware of type `M`. */
export interface Functions<H, M> {
  readonly handlers: Readonly<Record<string, H>>
  readonly middleware?: Readonly<Record<string, M>> | undefined
}

/** What a router asks of its core for a matched route. */
export interface RouterCore<A> {
  /**
   * What `build` made of the route's functions, or the first name of the route registered nowhere; with `handler`,
   * of the route's middleware and that handler (a split's choice) instead of the route's own.
   */
  readonly resolve: (route: Route.StoredRoute, handler?: string) => A | string
  /** Whether `name` is missing for the first time (bounded by `MISSING_NAMES`), so a router warns once per name. */
  readonly firstMiss: (name: string) => boolean
  /** The warning that no function is registered under `name`, the first time it is asked; `undefined` after. */
  readonly warnMissing: (name: string) => Effect.Effect<void> | undefined
}

/**
 * How many missing names are remembered as warned about. The names come from stored routes, which anyone with the
 * write scope can create, so the memory is capped: when it is full it is emptied, and a name may be warned about
 * again after 1,000 other missing names have been.
 */
export const MISSING_NAMES = 1_000

/** The warning for a name no function is registered under. */
export const missingMessage = (name: string): string =>
  `route-registry: no function is registered under the name ${JSON.stringify(name)}`

const own = <F>(record: Readonly<Record<string, F>>, name: string): F | undefined =>
  Object.prototype.hasOwnProperty.call(record, name) ? record[name] : undefined

/**
 * The core over `functions`. `build` makes one runnable thing of a route's middleware (in order) and handler; it is
 * called once per stored version of a route (an update is a new object, so it is built anew).
 */
export const make = <H, M, A>(
  functions: Functions<H, M>,
  build: (middleware: ReadonlyArray<M>, handler: H, route: Route.StoredRoute) => A
): RouterCore<A> => {
  const middleware = functions.middleware ?? {}
  const built = new WeakMap<Route.StoredRoute, A | string>()
  // A split's other handlers, by name, per stored version of a route: at most 8 each (its targets).
  const builtTargets = new WeakMap<Route.StoredRoute, Map<string, A | string>>()
  const warned = new Set<string>()
  const resolveNew = (route: Route.StoredRoute, name: string): A | string => {
    const fns: Array<M> = []
    for (const name of route.middleware) {
      const fn = own(middleware, name)
      if (fn === undefined) return name
      fns.push(fn)
    }
    const handler = own(functions.handlers, name)
    return handler === undefined ? name : build(fns, handler, route)
  }
  const resolveTarget = (route: Route.StoredRoute, name: string): A | string => {
    let targets = builtTargets.get(route)
    if (targets === undefined) builtTargets.set(route, targets = new Map())
    let resolved = targets.get(name)
    if (resolved === undefined) targets.set(name, resolved = resolveNew(route, name))
    return resolved
  }
  const core: RouterCore<A> = {
    resolve: (route, handler) => {
      if (handler !== undefined && handler !== route.handler) return resolveTarget(route, handler)
      let resolved = built.get(route)
      if (resolved === undefined) {
        resolved = resolveNew(route, route.handler)
        built.set(route, resolved)
      }
      return resolved
    },
    // Once per name: another process of the host may have it, and each request would say the same.
    firstMiss: (name) => {
      if (warned.has(name)) return false
      if (warned.size >= MISSING_NAMES) warned.clear()
      warned.add(name)
      return true
    },
    warnMissing: (name) => core.firstMiss(name) ? Effect.logWarning(missingMessage(name)) : undefined
  }
  return core
}
