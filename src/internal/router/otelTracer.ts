/**
 * Effect's tracer over OpenTelemetry's global tracer provider, reached through `@opentelemetry/api` alone (as the
 * routers' names are, `otel.ts`): for the framework integrations, which build their own runtime, so that with their
 * `telemetry` option on the routing API's spans (a request's, and its store operations') reach the SDK the host
 * registered, children of the host's HTTP server span. With no SDK registered, `@opentelemetry/api` hands out spans
 * that record nothing. `@effect/opentelemetry` does the same for a host's own Effect runtime; it is not a dependency of
 * the library (its peers are the whole SDK).
 *
 * @internal
 */
import type { Context, Exit, Option } from "effect"
import { Cause, Tracer } from "effect"
import * as Otel from "./otel.js"

/** The part of an OpenTelemetry span this tracer writes. */
interface OtelSpan {
  readonly spanContext: () => { readonly traceId: string; readonly spanId: string; readonly traceFlags: number }
  readonly setAttribute: (key: string, value: unknown) => unknown
  readonly setStatus: (status: { readonly code: number; readonly message?: string }) => unknown
  readonly addEvent: (name: string, attributes: Record<string, unknown> | undefined, time: HrTime) => unknown
  readonly end: (time: HrTime) => unknown
}

type HrTime = [seconds: number, nanos: number]

/** The part of `@opentelemetry/api` this tracer uses. */
export interface Api {
  readonly context: {
    readonly active: () => unknown
    readonly with: <A>(context: unknown, f: () => A) => A
  }
  readonly trace: {
    readonly getTracer: (name: string) => {
      readonly startSpan: (name: string, options: { kind: number; startTime: HrTime }, context: unknown) => OtelSpan
    }
    readonly getSpan: (context: unknown) => OtelSpan | undefined
    readonly setSpan: (context: unknown, span: OtelSpan) => unknown
    readonly wrapSpanContext: (spanContext: { traceId: string; spanId: string; traceFlags: number }) => OtelSpan
  }
}

// OpenTelemetry's SpanKind and SpanStatusCode, as numbers: the enums are the API's, whose values are fixed by the spec.
const KINDS: Record<Tracer.SpanKind, number> = { internal: 0, server: 1, client: 2, producer: 3, consumer: 4 }
const ERROR = 2
const SAMPLED = 1

const hrTime = (nanos: bigint): HrTime => [Number(nanos / 1_000_000_000n), Number(nanos % 1_000_000_000n)]

// An attribute value as OpenTelemetry takes it: a string, number or boolean (or an array of them), else its text.
const attributeValue = (value: unknown): unknown =>
  typeof value === "string" || typeof value === "number" || typeof value === "boolean" || Array.isArray(value)
    ? value
    : String(value)

class Span implements Tracer.Span {
  readonly _tag = "Span"
  readonly spanId: string
  readonly traceId: string
  readonly sampled: boolean
  readonly attributes = new Map<string, unknown>()
  status: Tracer.SpanStatus

  constructor(
    readonly otel: OtelSpan,
    readonly name: string,
    readonly parent: Option.Option<Tracer.AnySpan>,
    readonly context: Context.Context<never>,
    readonly links: Array<Tracer.SpanLink>,
    startTime: bigint,
    readonly kind: Tracer.SpanKind
  ) {
    const { spanId, traceFlags, traceId } = otel.spanContext()
    this.spanId = spanId
    this.traceId = traceId
    this.sampled = (traceFlags & SAMPLED) === SAMPLED
    this.status = { _tag: "Started", startTime }
  }

  end(endTime: bigint, exit: Exit.Exit<unknown, unknown>): void {
    this.status = { _tag: "Ended", startTime: this.status.startTime, endTime, exit }
    // A failure is named by its tag only (`RouteNotFound`, `StoreUnavailable`): never a message that could carry SQL.
    if (exit._tag === "Failure" && !Cause.isInterruptedOnly(exit.cause)) {
      const error = Cause.squash(exit.cause) as { readonly _tag?: unknown } | null
      this.otel.setStatus({ code: ERROR, message: typeof error?._tag === "string" ? error._tag : "defect" })
    }
    this.otel.end(hrTime(endTime))
  }

  attribute(key: string, value: unknown): void {
    this.attributes.set(key, value)
    this.otel.setAttribute(key, attributeValue(value))
  }

  event(name: string, startTime: bigint, attributes?: Record<string, unknown>): void {
    this.otel.addEvent(name, attributes, hrTime(startTime))
  }

  addLinks(links: ReadonlyArray<Tracer.SpanLink>): void {
    this.links.push(...links)
  }
}

// The OpenTelemetry context a span starts in: its Effect parent's span, or, with none, the active context (the host's
// HTTP server span, when its instrumentation made one).
const parentContext = (api: Api, parent: Option.Option<Tracer.AnySpan>): unknown => {
  const active = api.context.active()
  if (parent._tag === "None") return active
  const span = parent.value
  return api.trace.setSpan(
    active,
    span instanceof Span
      ? span.otel
      : api.trace.wrapSpanContext({ traceId: span.traceId, spanId: span.spanId, traceFlags: span.sampled ? 1 : 0 })
  )
}

/** Effect's tracer over `api`'s global tracer provider, under the library's name. */
export const make = (api: Api): Tracer.Tracer => {
  const tracer = api.trace.getTracer("route-registry")
  return Tracer.make({
    span: (name, parent, context, links, startTime, kind) => {
      const otelContext = parentContext(api, parent)
      // A request's span is a server span when nothing made one; inside the host's HTTP server span it is a step of
      // that request, as OpenTelemetry's conventions have one server span per request.
      const local = kind === "server" && api.trace.getSpan(otelContext) !== undefined ? "internal" : kind
      const otel = tracer.startSpan(name, { kind: KINDS[local], startTime: hrTime(startTime) }, otelContext)
      return new Span(otel, name, parent, context, [...links], startTime, local)
    },
    // What runs under one of these spans runs in its OpenTelemetry context too (a database driver's own spans nest).
    context: (f, fiber) => {
      const span = fiber.currentSpan
      return span instanceof Span ? api.context.with(api.trace.setSpan(api.context.active(), span.otel), f) : f()
    }
  })
}

/** The tracer over the host's OpenTelemetry, once `Otel.load` settled; `undefined` without `@opentelemetry/api`. */
export const loaded = (): Tracer.Tracer | undefined => {
  const api = Otel.loadedApi()
  return api === undefined ? undefined : make(api as Api)
}
