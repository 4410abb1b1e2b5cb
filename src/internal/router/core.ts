/**
 * The core both routers share, whatever the form of the host's functions (Connect-style for `RouterListener`, `HttpApp`s
 * for `RouterHttpApp`): resolving a route's function names once per stored version of the route, and warning once
 * about a name no function is registered under. A framework integration builds on it the same way: give it the
 * host's functions and how to make one runnable thing of a route's middleware and handler.
 *
 * @internal
 */
import { Effect, Either } from "effect"
import * as Catalog from "../../Catalog.js"
import type * as Route from "../../Route.js"
import * as Fields from "../route/fields.js"

/**
 * The host's functions by the names routes give them: handlers of type `H`, middleware of type `M`, or (0.5.0)
 * middleware taking a config, `C`, registered with its schema.
 */
export interface Functions<H, M, C = never> {
  readonly handlers: Readonly<Record<string, H>>
  readonly middleware?: Readonly<Record<string, M | Catalog.Configured<C>>> | undefined
}

/**
 * A route whose middleware configs do not decode (a config its schema refuses, or one for a middleware registered
 * without a schema): it answers `503 route_misconfigured`. One per stored version of the route.
 */
export class Misconfigured {
  /** Set once the router has logged it. */
  logged = false
  constructor(readonly route: Route.StoredRoute, readonly issues: ReadonlyArray<Route.FieldIssue>) {}
  get message(): string {
    return `route-registry: the route ${this.route.id} (${this.route.method} ${this.route.path}, revision ${this.route.revision}) ` +
      `is misconfigured and answers 503 route_misconfigured: ${
        this.issues.map((issue) => `${issue.path}: ${issue.message}`).join("; ")
      }`
  }
}

/** What a router asks of its core for a matched route. */
export interface RouterCore<A> {
  /**
   * What `build` made of the route's functions, or the first name of the route registered nowhere; with `handler`,
   * of the route's middleware and that handler (a split's choice) instead of the route's own.
   */
  readonly resolve: (route: Route.StoredRoute, handler?: string) => A | string | Misconfigured
  /** Whether `name` is missing for the first time (bounded by `MISSING_NAMES`), so a router warns once per name. */
  readonly firstMiss: (name: string) => boolean
  /** The warning that no function is registered under `name`, the first time it is asked; `undefined` after. */
  readonly warnMissing: (name: string) => Effect.Effect<void> | undefined
  /** The log line of a misconfigured route version, the first time it is asked; `undefined` after. */
  readonly misconfiguredOnce: (misconfigured: Misconfigured) => string | undefined
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
 * called once per stored version of a route (an update is a new object, so it is built anew). `bind` makes a
 * middleware of one registered with a config schema and the route's decoded config: configs are decoded once per
 * stored version of a route, the first time it is resolved, and a function then only reads its config.
 */
export const make = <H, M, A, C = never>(
  functions: Functions<H, M, C>,
  build: (middleware: ReadonlyArray<M>, handler: H, route: Route.StoredRoute) => A,
  bind: (middleware: C, config: unknown) => M
): RouterCore<A> => {
  const middleware = functions.middleware ?? {}
  const built = new WeakMap<Route.StoredRoute, A | string | Misconfigured>()
  // A split's other handlers, by name, per stored version of a route: at most 8 each (its targets).
  const builtTargets = new WeakMap<Route.StoredRoute, Map<string, A | string | Misconfigured>>()
  // Each stored version's middleware, its configs decoded: shared by its handler and a split's targets.
  const chains = new WeakMap<Route.StoredRoute, ReadonlyArray<M> | string | Misconfigured>()
  const warned = new Set<string>()
  const chainNew = (route: Route.StoredRoute): ReadonlyArray<M> | string | Misconfigured => {
    const fns: Array<M> = []
    const issues: Array<Route.FieldIssue> = []
    for (let i = 0; i < route.middleware.length; i++) {
      const entry = route.middleware[i]!
      const name = Fields.nameOf(entry)
      const fn = own(middleware, name)
      if (fn === undefined) return name
      const schema = Catalog.isConfigured(fn) ? fn.config : undefined
      const decoded = Catalog.decodeConfig(schema, name, Fields.configOf(entry), `middleware[${i}].config`)
      if (Either.isLeft(decoded)) issues.push(...decoded.left)
      else fns.push(schema === undefined ? fn as M : bind((fn as Catalog.Configured<C>).middleware, decoded.right))
    }
    return issues.length > 0 ? new Misconfigured(route, issues) : fns
  }
  const resolveNew = (route: Route.StoredRoute, name: string): A | string | Misconfigured => {
    let fns = chains.get(route)
    if (fns === undefined) chains.set(route, fns = chainNew(route))
    if (typeof fns === "string" || fns instanceof Misconfigured) return fns
    const handler = own(functions.handlers, name)
    return handler === undefined ? name : build(fns, handler, route)
  }
  const resolveTarget = (route: Route.StoredRoute, name: string): A | string | Misconfigured => {
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
    warnMissing: (name) => core.firstMiss(name) ? Effect.logWarning(missingMessage(name)) : undefined,
    // Once per stored version: the version is what is wrong, and the next one may be right.
    misconfiguredOnce: (misconfigured) => {
      if (misconfigured.logged) return undefined
      misconfigured.logged = true
      return misconfigured.message
    }
  }
  return core
}
