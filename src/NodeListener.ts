/**
 * The routing API as a Node request listener `(req, res, next?)`, for `node:http`, Express and Fastify. It works on
 * Node's `req` and `res` directly: no per-request platform machinery stands between the socket and the core.
 *
 * @since 0.1.0
 */
import type { Layer } from "effect"
import { Cause, Effect, Exit, FiberRef, Runtime, Scheduler } from "effect"
import type { IncomingMessage, ServerResponse } from "node:http"
import * as AdapterLayer from "./internal/http/adapterLayer.js"
import * as Answers from "./internal/http/answers.js"
import * as Body from "./internal/http/body.js"
import * as BodyRead from "./internal/http/bodyRead.js"
import * as ListQuery from "./internal/http/listQuery.js"
import * as NodeHeaders from "./internal/http/nodeHeaders.js"
import * as NodeTransport from "./internal/http/nodeTransport.js"
import * as Target from "./internal/http/target.js"
import * as Now from "./internal/now.js"
import type { InvalidOption } from "./InvalidOption.js"
import * as Problem from "./Problem.js"
import * as RoutingHandler from "./RoutingHandler.js"

/**
 * A Node request listener. With `next` (Express, Connect), a request outside `/v1/routing` is passed on; without
 * it (plain `node:http`), it is answered `404` with the problem code `not_found`.
 *
 * @since 0.1.0
 */
export interface Listener {
  (req: IncomingMessage, res: ServerResponse, next?: (error?: unknown) => void): void
  /**
   * Ends every change stream open now (`GET /v1/routing/changes`), whose followers resume from their cursors: call it
   * when shutting down, as `server.close()` waits for open connections. `dispose` calls it first.
   *
   * @since 0.4.0
   */
  readonly closeStreams: () => void
}

/**
 * A listener that owns its services; `dispose` releases them (closing, for instance, a database pool).
 *
 * @since 0.1.0
 */
export interface DisposableListener extends Listener {
  readonly dispose: () => Promise<void>
}

/**
 * @since 0.1.0
 */
export type Options = RoutingHandler.Options

class NodeRequest implements RoutingHandler.Request {
  /** The body, which the listener reads itself when the core asks for it while the request is being handled. */
  bodyRead: BodyRead.BodyRead | undefined = undefined
  constructor(readonly req: IncomingMessage, readonly res: ServerResponse, readonly path: string) {}
  get method() {
    return this.req.method ?? "GET"
  }
  get query() {
    return ListQuery.queryOf(this.req.url ?? "")
  }
  get base() {
    // Express and Connect cut a mount path from `req.url` and keep the target as received in `originalUrl`.
    return Target.baseOf((this.req as { readonly originalUrl?: unknown }).originalUrl, this.req.url ?? "/")
  }
  header(name: string) {
    return NodeHeaders.header(this.req, name)
  }
  body(maxBytes: number, timeoutMillis: number) {
    this.bodyRead ??= new BodyRead.BodyRead(Body.fromIncomingMessage(this.req, this.res))
    return this.bodyRead.reader(maxBytes, timeoutMillis)
  }
}

/**
 * An answer's head as `writeHead` takes it: name, value, name, value …, with its `Content-Length` unless it has no
 * body. An explicit length spares the chunked encoding; 204 and 304 have no body, and a 204 must not carry a length
 * (RFC 9110 §8.6).
 */
const headOf = (response: RoutingHandler.Response): Array<string> => {
  const head: Array<string> = []
  const headers = response.headers
  for (const name in headers) head.push(name, headers[name]!)
  if (!Answers.hasNoBody(response.status) && response.stream === undefined) {
    head.push("content-length", String(Buffer.byteLength(response.body)))
  }
  return head
}

const write = (req: IncomingMessage, res: ServerResponse, response: RoutingHandler.Response) => {
  if (res.headersSent || res.destroyed) return
  // A problem's status line says its title, as its body does.
  const head = Answers.isReused(response) ? (response.nodeHead ??= headOf(response)) : headOf(response)
  const phrase = Problem.titles[response.status]
  if (phrase === undefined) res.writeHead(response.status, head)
  else res.writeHead(response.status, phrase, head)
  if (response.stream !== undefined) NodeTransport.openStream(res, response.stream)
  else NodeTransport.end(req, res, response.headers, response.body)
}

const immediate = Scheduler.make((task) => task())

const respond = (
  runFork: ReturnType<typeof Runtime.runFork<never>>,
  req: IncomingMessage,
  res: ServerResponse,
  exit: Exit.Exit<RoutingHandler.Response>
) => {
  // The core answers every failure; a fiber that ends without an answer was interrupted from outside.
  if (Exit.isFailure(exit)) runFork(Effect.logWarning("route-registry: a request ended without an answer", exit.cause))
  try {
    write(req, res, Exit.isSuccess(exit) ? exit.value : RoutingHandler.internalError)
  } catch (error) {
    // Node refused the response (an invalid header value, say): answer 500 rather than throw into the host.
    runFork(Effect.logError("route-registry: could not write a response", Cause.die(error)))
    if (res.headersSent) res.destroy()
    else write(req, res, RoutingHandler.internalError)
  }
}

/**
 * The listener over the services in context, run on the calling runtime (its logger, clock and tracer).
 *
 * @since 0.1.0
 */
export const make = (
  options: Options = {}
): Effect.Effect<Listener, InvalidOption, RoutingHandler.Services> =>
  Effect.gen(function*() {
    const handler = yield* RoutingHandler.make(options)
    // Resumed fibers continue at once (an immediate scheduler), so a POST answers inside the body's "end" event,
    // as a hand-written Node server does; answering from a later microtask halves Node's throughput.
    const runtime = Runtime.setFiberRef(yield* Effect.runtime<never>(), FiberRef.currentScheduler, immediate)
    const runFork = Runtime.runFork(runtime)
    // The clock this runtime's fibers read, for the steps decided without one.
    const given: Now.Given = { clock: yield* Effect.clock }
    const answer = (req: IncomingMessage, res: ServerResponse, effect: Effect.Effect<RoutingHandler.Response>) => {
      // Decided without waiting: answer now, inside this callback, with no fiber to run.
      if (Exit.isExit(effect)) return respond(runFork, req, res, effect as Exit.Exit<RoutingHandler.Response>)
      runFork(effect).addObserver((exit) => respond(runFork, req, res, exit))
    }
    const listener = (req: IncomingMessage, res: ServerResponse, next?: (error?: unknown) => void) => {
      const request = new NodeRequest(req, res, Target.pathOf(req.url ?? "/"))
      const effect = handler.handle(request)
      if (effect === undefined) {
        if (next === undefined) return write(req, res, RoutingHandler.notFound)
        // The host answers as if Node had sent the 100 itself (as it does without a "checkContinue" listener).
        NodeTransport.sendContinue(req, res)
        return next()
      }
      if (!Now.isPending(effect)) return answer(req, res, effect)
      const bodyRead = request.bodyRead
      const wanted = bodyRead?.wanted()
      if (bodyRead === undefined || wanted === undefined) return answer(req, res, Now.resolve(effect, given))
      // Everything before the body passed at once: the body is read here, and the steps after it are decided in its
      // "end" event, with no fiber when the services answer at once.
      Body.readIncomingMessage(req, res, wanted.maxBytes, wanted.timeoutMillis, (body) =>
        answer(req, res, bodyRead.answer(effect, body, given)))
    }
    return Object.assign(listener, { closeStreams: handler.closeStreams })
  })

/**
 * Builds the services of `layer` now (so a bad configuration or an unreachable database fails here, not on the
 * first request) and returns the listener; `dispose` releases the services. Rejects with `InvalidOption`, before
 * building anything, when an option is out of its range.
 *
 * @since 0.1.0
 */
export const fromLayer = <E>(
  layer: Layer.Layer<RoutingHandler.Services, E>,
  options: Options = {}
): Promise<DisposableListener> => AdapterLayer.fromLayer(layer, options, make)
