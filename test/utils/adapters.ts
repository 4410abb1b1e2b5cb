/**
 * Each adapter, started for real: the Node listener on a `node:http` server, the `HttpApp` on `NodeHttpServer`,
 * and the web handler called with web `Request`s in process (its transport). Tests talk to them through `send`.
 */
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import * as HttpServer from "@effect/platform/HttpServer"
import { Effect, Layer, ManagedRuntime } from "effect"
import * as Http from "node:http"
import * as Net from "node:net"
import type { AddressInfo } from "node:net"
import * as AdminHttpApp from "route-registry/AdminHttpApp"
import * as AdminListener from "route-registry/AdminListener"
import * as AdminWebHandler from "route-registry/AdminWebHandler"
import type * as Authenticator from "route-registry/Authenticator"
import type * as RouteRepository from "route-registry/RouteRepository"
import type * as RoutingHandler from "route-registry/RoutingHandler"

export interface Sent {
  readonly method: string
  readonly path: string
  readonly headers?: Record<string, string>
  readonly body?: string | Uint8Array | ReadableStream<Uint8Array>
}

export interface Received {
  readonly status: number
  readonly headers: Headers
  readonly text: string
  readonly json: any
}

export interface Served {
  readonly send: (request: Sent) => Promise<Received>
  /** A fetch function reaching the server, with the origin to use (for clients such as the typed client). */
  readonly fetch: typeof globalThis.fetch
  readonly origin: string
  readonly close: () => Promise<void>
}

export type Services = Layer.Layer<RouteRepository.RouteRepository | Authenticator.Authenticator, unknown>

export interface Adapter {
  readonly name: string
  readonly start: (services: Services, options?: RoutingHandler.Options) => Promise<Served>
}

const received = async (response: Response): Promise<Received> => {
  const text = await response.text()
  let json: unknown = undefined
  try {
    json = JSON.parse(text)
  } catch {
    // not JSON: tests look at `text`
  }
  return { status: response.status, headers: response.headers, text, json }
}

const init = (request: Sent): RequestInit & { duplex?: "half" } => ({
  method: request.method,
  headers: request.headers ?? {},
  ...(request.body === undefined ? {} : { body: request.body as BodyInit, duplex: "half" })
})

/** Sends through a real socket with the platform's fetch. */
export const fetchFrom = (origin: string) => (request: Sent) =>
  fetch(origin + request.path, init(request)).then(received)

/**
 * Sends each request on a connection of its own (`node:http`, no agent): nothing is sent on a kept-alive socket the
 * server may be closing at that moment, which a POST, not retried by fetch, would meet as "other side closed" on a
 * loaded machine. For tests that count every answer.
 */
export const freshConnectionTo = (origin: string) => (request: Sent): Promise<Received> =>
  new Promise((resolve, reject) => {
    const body = request.body
    if (body instanceof ReadableStream) return reject(new Error("freshConnectionTo sends a text or bytes body"))
    const req = Http.request(origin + request.path, {
      method: request.method,
      headers: request.headers ?? {},
      agent: false
    })
    req.on("error", reject)
    req.on("response", (res) => {
      const chunks: Array<Buffer> = []
      res.on("data", (chunk: Buffer) => chunks.push(chunk)).on("error", reject).on("end", () => {
        const headers = new Headers()
        for (const [name, value] of Object.entries(res.headers)) {
          for (const one of Array.isArray(value) ? value : value === undefined ? [] : [value]) headers.append(name, one)
        }
        const text = Buffer.concat(chunks).toString("utf8")
        let json: unknown = undefined
        try {
          json = JSON.parse(text)
        } catch {
          // not JSON: tests look at `text`
        }
        resolve({ status: res.statusCode!, headers, text, json })
      })
    })
    req.end(body)
  })

export const listen = (server: Http.Server): Promise<string> =>
  new Promise((resolve) =>
    server.listen(0, "127.0.0.1", () => resolve(`http://127.0.0.1:${(server.address() as AddressInfo).port}`))
  )

export const closeServer = (server: Http.Server): Promise<void> =>
  new Promise((resolve) => {
    server.closeAllConnections()
    server.close(() => resolve())
  })

/** Serves `listener` on a `node:http` server on a free port; `close` closes it, then calls `dispose`. */
export const serveNode = async (listener: Http.RequestListener, dispose: () => Promise<void>): Promise<Served> => {
  const server = Http.createServer(listener)
  const origin = await listen(server)
  return {
    send: fetchFrom(origin),
    fetch: globalThis.fetch,
    origin,
    close: async () => {
      await closeServer(server)
      await dispose()
    }
  }
}

export const nodeListener: Adapter = {
  name: "AdminListener on node:http",
  start: async (services, options) => {
    const listener = await AdminListener.fromLayer(services, options)
    return serveNode(listener, listener.dispose)
  }
}

export const webHandler: Adapter = {
  name: "AdminWebHandler (fetch Request/Response)",
  start: async (services, options) => {
    const handler = await AdminWebHandler.fromLayer(services, options)
    return {
      send: (request) => handler(new Request(`http://localhost${request.path}`, init(request))).then(received),
      fetch: (input, init) => handler(new Request(input, init)),
      origin: "http://localhost",
      close: () => handler.dispose()
    }
  }
}

export const httpApp: Adapter = {
  name: "AdminHttpApp on NodeHttpServer",
  start: async (services, options) => {
    const serve = Layer.unwrapEffect(Effect.map(AdminHttpApp.make(options), (app) => HttpServer.serve(app)))
    const runtime = ManagedRuntime.make(
      serve.pipe(
        Layer.provide(services),
        Layer.provideMerge(NodeHttpServer.layer(() => Http.createServer(), { port: 0, host: "127.0.0.1" }))
      )
    )
    const address = await runtime.runPromise(Effect.map(HttpServer.HttpServer, (server) => server.address))
    const origin = address._tag === "TcpAddress" ? `http://127.0.0.1:${address.port}` : ""
    return { send: fetchFrom(origin), fetch: globalThis.fetch, origin, close: () => runtime.dispose() }
  }
}

export const adapters: ReadonlyArray<Adapter> = [nodeListener, webHandler, httpApp]

/** Sends `head` (request line and header lines, CRLF-terminated, no body) on a fresh socket; resolves the raw answer. */
export const rawRequest = (origin: string, head: string): Promise<string> =>
  new Promise((resolve, reject) => {
    const url = new URL(origin)
    const socket = Net.connect(Number(url.port), url.hostname)
    let text = ""
    socket.on("data", (chunk) => {
      text += chunk
      // One whole answer: headers and, with a Content-Length, the body.
      const end = text.indexOf("\r\n\r\n")
      const length = /content-length: (\d+)/i.exec(text)
      if (end !== -1 && length !== null && Buffer.byteLength(text) >= end + 4 + Number(length[1])) socket.end()
    })
    socket.on("close", () => resolve(text))
    socket.on("error", reject)
    socket.write(head + "\r\n")
  })
