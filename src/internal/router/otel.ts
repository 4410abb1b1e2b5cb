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

/** The part of an OpenTelemetry span the routers write. */
export interface Span {
  readonly updateName: (name: string) => unknown
  readonly setAttribute: (key: string, value: string) => unknown
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

/**
 * Gives `span` the name and attributes of a request `route` served; `handler`, the handler a split chose, is recorded
 * as `route_registry.route.handler` (only for a route with a split).
 */
export const annotate = (span: Span, method: string, route: Route.StoredRoute, handler?: string): void => {
  span.updateName(`${method} ${route.path}`)
  span.setAttribute("http.route", route.path)
  span.setAttribute("route_registry.route.id", route.id)
  if (handler !== undefined) span.setAttribute("route_registry.route.handler", handler)
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
