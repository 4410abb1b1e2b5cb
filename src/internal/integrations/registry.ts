/**
 * What the framework integrations share: their options, the services one mounted registry owns (a store,
 * the live table over it, the routing API's core over both), the resolution of a route's function names, and the
 * routing API answered over a request view any framework can fill.
 *
 * @internal
 */
import { Cause, Effect, Layer, Logger, LogLevel } from "effect"
import type * as Authenticator from "../../Authenticator.js"
import * as Catalog from "../../Catalog.js"
import * as HostPaths from "../../HostPaths.js"
import type * as Route from "../../Route.js"
import * as RouteRepository from "../../RouteRepository.js"
import * as RouteTable from "../../RouteTable.js"
import * as RoutingHandler from "../../RoutingHandler.js"
import * as Telemetry from "../../Telemetry.js"
import * as Disposable from "../disposable.js"
import * as Runner from "../http/runner.js"
import * as RouterCore from "../router/core.js"
import * as Otel from "../router/otel.js"
import * as OtelTracer from "../router/otelTracer.js"
import * as Answers from "../router/problems.js"
import * as ApiPrefix from "./apiPrefix.js"

/**
 * The options of every integration: the services, the host's functions by name (`F`: the framework's own handler
 * type) and the routing API's limits.
 */
export interface Options<F, M = F, C = never> extends RoutingHandler.Options {
  /** Provides the `Authenticator` the routing API checks tokens with. */
  readonly authenticator: Layer.Layer<Authenticator.Authenticator, unknown>
  /** Provides the `RouteRepository`; the in-memory store when omitted. */
  readonly store?: Layer.Layer<RouteRepository.RouteRepository, unknown> | undefined
  /** The route handlers, by the names routes give them. */
  readonly handlers: Readonly<Record<string, F>>
  /** The route middleware, by the names routes give them; (0.5.0) one may take a config (`Catalog.configured`). */
  readonly middleware?: Readonly<Record<string, M | Catalog.Configured<C>>> | undefined
  /** Refuse creates and updates naming a function not registered here (catalog checking). */
  readonly catalog?: true | undefined
  /**
   * The paths the host serves itself, below the mount as stored routes are (`HostPaths`): no stored route may take
   * them (`400 invalid_route`), `match` answers them as the host's, and the router hands them to the framework.
   */
  readonly hostPaths?: ReadonlyArray<string> | undefined
  /**
   * Turns the library's telemetry on (`Telemetry.layer`): `true`, or `Telemetry.layer`'s options. Off when omitted.
   * On, the routing API's spans go to the host's OpenTelemetry SDK (through `@opentelemetry/api`), as children of the
   * host's HTTP server span.
   */
  readonly telemetry?: true | Telemetry.Options | undefined
  /**
   * The path below the mount the routing API is served under (`"/admin"`: `/admin/v1/routing`), while the stored
   * routes serve at the mount itself; a static path without a trailing slash. The mount's root when omitted.
   */
  readonly apiPrefix?: string | undefined
}

/** Where the library's log lines go: the framework's logger. */
export type Log = (level: "error" | "warn" | "info" | "debug", message: string) => void

/** A route's functions: its middleware in the stored order, then its handler. */
export interface Chain<F, M> {
  readonly middleware: ReadonlyArray<M>
  readonly handler: F
}

/** One mounted registry: its services, built, and what the integration needs of them. */
export interface Registry<F, M> {
  readonly api: RoutingHandler.RoutingHandler
  /** What the router decides for a request (`HostPaths.lookup`): a path the host serves is not found. */
  readonly lookup: (
    method: string,
    target: string,
    headers: RouteTable.Headers
  ) => RouteTable.Resolution<Route.StoredRoute>
  /**
   * The route's functions, or the first name this process has not registered (logged once per name), or `undefined`
   * for a route whose middleware configs do not decode (logged once per stored version).
   */
  readonly chainOf: (route: Route.StoredRoute, handler?: string) => Chain<F, M> | string | undefined
  /** Runs an answer of the routing API's core: a completed one at once, without a fiber. */
  readonly run: (
    effect: Effect.Effect<RoutingHandler.Response>
  ) => RoutingHandler.Response | Promise<RoutingHandler.Response>
  readonly dispose: () => Promise<void>
}

const levelOf = (level: LogLevel.LogLevel): Parameters<Log>[0] =>
  LogLevel.greaterThanEqual(level, LogLevel.Error)
    ? "error"
    : LogLevel.greaterThanEqual(level, LogLevel.Warning)
    ? "warn"
    : LogLevel.greaterThanEqual(level, LogLevel.Info)
    ? "info"
    : "debug"

/** The library's Effect logs, written to the framework's logger (with the cause, when there is one). */
const loggerTo = (log: Log) =>
  Logger.replace(
    Logger.defaultLogger,
    Logger.make(({ cause, logLevel, message }) => {
      const text = (Array.isArray(message) ? message : [message]).map(String).join(" ")
      log(levelOf(logLevel), Cause.isEmpty(cause) ? text : `${text}\n${Cause.pretty(cause)}`)
    })
  )

// The library's telemetry, and Effect's tracer over the host's OpenTelemetry, whose spans it then reaches (a runtime of
// the integration's own has no tracer of the host's otherwise).
const telemetryOf = (options: Pick<Options<unknown>, "telemetry">): Layer.Layer<never> => {
  if (options.telemetry === undefined) return Layer.empty
  const telemetry = Telemetry.layer(options.telemetry === true ? {} : options.telemetry)
  const tracer = OtelTracer.loaded()
  return tracer === undefined ? telemetry : Layer.merge(telemetry, Layer.setTracer(tracer))
}

const servicesOf = <F, M, C>(options: Options<F, M, C>, log: Log) => {
  const telemetry = telemetryOf(options)
  const store = RouteTable.layer.pipe(
    Layer.provideMerge(options.store ?? RouteRepository.layerMemory),
    Layer.provideMerge(telemetry)
  )
  const catalog = Layer.merge(
    options.catalog === true
      ? Catalog.layer(Catalog.namesOf(options))
      : Layer.empty,
    options.hostPaths === undefined
      ? Layer.empty
      : Layer.succeed(HostPaths.HostPaths, HostPaths.make(options.hostPaths))
  )
  // The table's store last: where one layer provides both services, the store the API writes through must be the one
  // the table follows.
  return Layer.mergeAll(options.authenticator, catalog, store).pipe(Layer.provide(loggerTo(log)))
}

const bind = <F, M, C>(options: Options<F, M, C>, log: Log, bindConfig: (fn: C, config: unknown) => M) =>
  Effect.gen(function*() {
    const {
      apiPrefix: _p,
      authenticator: _a,
      catalog: _c,
      handlers,
      hostPaths: _h,
      middleware = {},
      store: _s,
      telemetry: _t,
      ...limits
    } = options
    const api = yield* Effect.orDie(RoutingHandler.make(limits))
    const table = yield* RouteTable.RouteTable
    const hostPaths = yield* HostPaths.HostPaths
    const lookup = (method: string, target: string, headers: RouteTable.Headers) =>
      HostPaths.lookup(hostPaths, table, method, target, headers)
    const start = Runner.make(yield* Effect.runtime<never>())
    const core = RouterCore.make<F, M, Chain<F, M>, C>(
      { handlers, middleware },
      (middleware, handler) => ({ middleware, handler }),
      bindConfig
    )
    const chainOf = (route: Route.StoredRoute, handler?: string): Chain<F, M> | string | undefined => {
      const chain = core.resolve(route, handler)
      if (typeof chain === "string" && core.firstMiss(chain)) log("warn", RouterCore.missingMessage(chain))
      if (!(chain instanceof RouterCore.Misconfigured)) return chain
      const message = core.misconfiguredOnce(chain)
      if (message !== undefined) log("error", message)
      return undefined
    }
    const run = (effect: Effect.Effect<RoutingHandler.Response>) =>
      Runner.value(start(effect), RoutingHandler.internalError)
    return { api, lookup, chainOf, run }
  })

/**
 * Builds the services of `options` now (the table is loaded before this resolves) and binds the routing API's core
 * to them. Rejects with `InvalidOption` before building anything when `apiPrefix` is unusable or a limit is out of its
 * range, or a host path cannot be declared.
 */
export const start = <F, M, C = never>(
  options: Options<F, M, C>,
  log: Log,
  bindConfig: (fn: C, config: unknown) => M
): Promise<Registry<F, M>> => {
  const invalid = ApiPrefix.check(options.apiPrefix) ?? RoutingHandler.checkOptions(options) ??
    (options.hostPaths === undefined ? undefined : HostPaths.check(options.hostPaths))
  if (invalid !== undefined) return Promise.reject(invalid)
  // Open change streams are closed first: a server closing waits for its connections, and they never end.
  return Otel.load().then(() => Disposable.fromLayer(servicesOf(options, log), bind(options, log, bindConfig))).then((
    registry
  ) => ({
    ...registry,
    dispose: () => {
      registry.api.closeStreams()
      return registry.dispose()
    }
  }))
}

/**
 * The parameters in a record without a prototype, as the frameworks' own routers make theirs: a parameter named like
 * an `Object.prototype` member (`__proto__`, `toString`) is a value like any other, and a name the route does not
 * have reads `undefined`.
 */
export const ownParams = (params: Readonly<Record<string, string>>): Record<string, string> =>
  Object.assign(Object.create(null) as Record<string, string>, params)

/** The problem answers of the router, for the integrations to send in their framework's way. */
export const answers = Answers
