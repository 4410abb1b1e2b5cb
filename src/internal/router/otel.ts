/**
 * The OpenTelemetry names of a request a stored route serves (docs/observability.md), reached through `@opentelemetry/api`
 * alone: the host's HTTP server span is named `<METHOD> <pattern>` and given `http.route` and the route's id, and the
 * HTTP instrumentation's RPC metadata gets the pattern, which `@opentelemetry/instrumentation-http` puts on the span
 * and on its `http.server.request.duration` points when the response ends (as the framework instrumentations do with
 * their own route templates). `@opentelemetry/api` is an optional peer, imported when a router is made: without it,
 * nothing is loaded and every call here returns at once.
 *
 * @internal
 */
import type * as Route from "../../Route.js"
import * as When from "../route/when.js"

/** Where the route's attributes are written: an OpenTelemetry span, or an adapter over an Effect span. */
export interface Attributes {
  readonly setAttribute: (key: string, value: string | ReadonlyArray<string>) => unknown
}

/** The part of an OpenTelemetry span the routers write. */
export interface Span extends Attributes {
  readonly updateName: (name: string) => unknown
  readonly spanContext: () => { readonly spanId: string }
}

interface Context {
  readonly getValue: (key: symbol) => unknown
}

// What `@opentelemetry/core`'s `getRPCMetadata` reads: the HTTP instrumentation's server span and the route it names
// the span and its metric points after.
interface RpcMetadata {
  readonly type?: unknown
  readonly span?: Span
  route?: string
}

interface Api {
  readonly context: { readonly active: () => Context }
  readonly trace: { readonly getSpan: (context: Context) => Span | undefined }
  readonly createContextKey: (description: string) => symbol
}

let api: Api | undefined
let rpcMetadataKey: symbol | undefined
let loading: Promise<void> | undefined

/**
 * Imports `@opentelemetry/api` once, if the host has it; settles either way. Routers await it when they are made, so
 * that their first request is named as the rest are.
 */
export const load = (): Promise<void> =>
  loading ??= import("@opentelemetry/api").then((loaded: unknown) => {
    api = loaded as Api
    // `@opentelemetry/core`'s key: `createContextKey` is `Symbol.for`, so any copy of either package finds it.
    rpcMetadataKey = api.createContextKey("OpenTelemetry SDK Context Key RPC_METADATA")
  }, () => {})

/** `@opentelemetry/api` as loaded (`undefined` before `load` settled, or without it), for the tracer over it. */
export const loadedApi = (): unknown => api

// A stored route's `when` is never changed in place (a new version is a new object): its canonical JSON is computed
// once per version, not per request.
const whenJson = new WeakMap<When.When, string>()

const canonicalWhen = (when: When.When): string => {
  let json = whenJson.get(when)
  if (json === undefined) whenJson.set(when, json = When.keyOf(when))
  return json
}

/**
 * Writes the attributes of a request `route` served: `http.route` and `route_registry.route.id`; the handler a split
 * chose as `route_registry.route.handler`; the route's conditions, all of which the request met, as
 * `route_registry.route.when` (their canonical JSON), and its tags as `route_registry.route.tags`. Each only when the
 * route has it, so a route without them costs nothing more.
 */
export const setRouteAttributes = (span: Attributes, route: Route.StoredRoute, handler: string | undefined): void => {
  span.setAttribute("http.route", route.path)
  span.setAttribute("route_registry.route.id", route.id)
  if (handler !== undefined) span.setAttribute("route_registry.route.handler", handler)
  if (route.when !== undefined) span.setAttribute("route_registry.route.when", canonicalWhen(route.when))
  if (route.tags !== undefined) span.setAttribute("route_registry.route.tags", route.tags)
}

/** Gives `span` the name and attributes of a request `route` served (`setRouteAttributes`). */
export const annotate = (span: Span, method: string, route: Route.StoredRoute, handler?: string): void => {
  span.updateName(`${method} ${route.path}`)
  setRouteAttributes(span, route, handler)
}

/**
 * Names the host's HTTP server span (the one the HTTP instrumentation made for this request, in the active context)
 * after `route`, and sets the route its metric points carry; returns that span, or `undefined` when there is none
 * (no `@opentelemetry/api`, no SDK, no HTTP instrumentation).
 */
export const nameServerSpan = (method: string, route: Route.StoredRoute, handler?: string): Span | undefined => {
  if (api === undefined) return undefined
  const metadata = api.context.active().getValue(rpcMetadataKey!) as RpcMetadata | undefined
  if (metadata?.type !== "http" || metadata.span === undefined) return undefined
  metadata.route = route.path
  annotate(metadata.span, method, route, handler)
  return metadata.span
}

/** The active span, when it is the one whose id is `spanId` (an Effect span, through `@effect/opentelemetry`). */
export const activeSpan = (spanId: string): Span | undefined => {
  if (api === undefined) return undefined
  const span = api.trace.getSpan(api.context.active())
  return span?.spanContext().spanId === spanId ? span : undefined
}
