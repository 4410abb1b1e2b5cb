/**
 * The router's rules that hold whatever its form (the Node listener under any host, the Effect app on
 * `NodeHttpServer`): host functions that misbehave after answering never take the process down or leave a connection
 * hanging, and are logged once per route; a routed body that does not arrive in time is answered 408 or, once
 * answered, does not hold the connection. Each form registers the same behaviours under the same names, written in
 * its own idiom, and runs `routerContract` over a server of its own.
 */
import * as NodeHttpServerRequest from "@effect/platform-node/NodeHttpServerRequest"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import { assert, it } from "@effect/vitest"
import { Effect, Stream } from "effect"
import type * as Http from "node:http"
import * as Net from "node:net"
import * as Problem from "route-registry/Problem"
import * as RouterHttpApp from "route-registry/RouterHttpApp"
import * as RouterListener from "route-registry/RouterListener"
import { configContract, HeaderConfig } from "./configContract.js"
import type { LogLine } from "./routerHost.js"
import { splitContract, variantBody, VARIANTS } from "./splitContract.js"

/** The body timeout the contract's servers are started with. */
export const BODY_TIMEOUT_MILLIS = 300

const FIRST = "first answer"

// --- the behaviours, in each form -----------------------------------------------------------------------------------

const plain = (res: Http.ServerResponse, status: number, body: string) =>
  res.writeHead(status, { "content-type": "text/plain", "content-length": Buffer.byteLength(body) }).end(body)

// Reads the whole body, then answers with its length.
const readAll = (req: Http.IncomingMessage, res: Http.ServerResponse) => {
  let size = 0
  req.on("data", (chunk: Buffer) => (size += chunk.length))
  req.on("end", () => plain(res, 200, `read ${size} bytes`))
}

/** The behaviours as Node route functions. */
export const nodeFunctions: RouterListener.Functions = {
  handlers: {
    ok: (_req, res) => plain(res, 200, "ok"),
    answersTwice: (_req, res) => {
      res.end(FIRST)
      res.end("second answer")
    },
    writesAfterEnd: (_req, res) => {
      res.end(FIRST)
      res.write("more")
    },
    throwsAfterWriteHead: (_req, res) => {
      res.writeHead(200, { "content-type": "text/plain", "content-length": 100 })
      res.write("part of it")
      throw new Error("boom after writeHead")
    },
    failsMidAnswer: async (_req, res) => {
      res.writeHead(200, { "content-type": "text/plain" })
      res.write("part of it")
      await new Promise((resolve) => setTimeout(resolve, 10))
      throw new Error("boom mid-answer")
    },
    readsBody: readAll,
    ignoresBody: (_req, res) => plain(res, 200, "answered without reading the body"),
    ...Object.fromEntries(VARIANTS.map((name): [string, RouterListener.RouteFunction] => [
      name,
      (req, res) => plain(res, 200, variantBody(name, RouterListener.matchOf(req)?.split))
    ]))
  },
  middleware: {
    setHeader: RouterListener.configured(HeaderConfig, (_req, res, next, config) => {
      res.setHeader(config.name, config.value.repeat(config.repeat))
      next()
    }),
    plain: (_req, _res, next) => next()
  }
}

// The Node response beneath an Effect request, for the behaviours that misuse it.
const nodeResponse = Effect.map(HttpServerRequest.HttpServerRequest, NodeHttpServerRequest.toServerResponse)

/** The behaviours as Effect handlers. */
export const effectFunctions: RouterHttpApp.Functions<never, never> = {
  handlers: {
    ok: HttpServerResponse.text("ok"),
    answersTwice: Effect.map(nodeResponse, (res) => {
      res.end(FIRST)
      res.end("second answer")
      return HttpServerResponse.text("third answer")
    }),
    writesAfterEnd: Effect.map(nodeResponse, (res) => {
      res.end(FIRST)
      res.write("more")
      return HttpServerResponse.empty()
    }),
    throwsAfterWriteHead: Effect.flatMap(nodeResponse, (res) => {
      res.writeHead(200, { "content-type": "text/plain", "content-length": 100 })
      res.write("part of it")
      return Effect.die(new Error("boom after writeHead"))
    }),
    // A streamed answer whose stream fails after its first chunk: the platform would end it as if whole.
    failsMidAnswer: Effect.succeed(HttpServerResponse.stream(
      Stream.concat(
        Stream.make(new TextEncoder().encode("part of it")),
        Stream.fromEffect(Effect.zipRight(Effect.sleep(10), Effect.die(new Error("boom mid-answer"))))
      ),
      { contentType: "text/plain" }
    )),
    readsBody: Effect.flatMap(
      HttpServerRequest.HttpServerRequest,
      (request) => Effect.map(request.arrayBuffer, (body) => HttpServerResponse.text(`read ${body.byteLength} bytes`))
    ).pipe(Effect.orDie),
    ignoresBody: HttpServerResponse.text("answered without reading the body"),
    ...Object.fromEntries(VARIANTS.map((name) => [
      name,
      Effect.map(RouterHttpApp.Match, (match) => HttpServerResponse.text(variantBody(name, match.split)))
    ]))
  },
  middleware: {
    setHeader: RouterHttpApp.configured(
      HeaderConfig,
      (app, config) => Effect.map(app, HttpServerResponse.setHeader(config.name, config.value.repeat(config.repeat)))
    ),
    plain: (app) => app
  }
}

// --- a form and the contract ------------------------------------------------------------------------------------------

export interface RunningRouter {
  readonly origin: string
  /** Stores a route through the server's own API. */
  readonly create: (
    route: {
      readonly method: string
      readonly path: string
      readonly handler: string
      readonly [field: string]: unknown
    }
  ) => Promise<unknown>
  readonly logs: ReadonlyArray<LogLine>
  readonly close: () => Promise<void>
}

export interface RouterForm {
  readonly name: string
  /** A server whose router has the contract's behaviours and `BODY_TIMEOUT_MILLIS`. */
  readonly start: () => Promise<RunningRouter>
}

/** What a server sent on one connection, and when it closed it (`undefined`: it was still open at the end). */
export interface Conversation {
  readonly received: string
  readonly closedAfterMillis: number | undefined
}

/**
 * Opens a connection and sends each `[afterMillis, data]` at that time from the start, then listens until the server
 * closes the connection or `waitMillis` have passed.
 */
export const converse = (
  origin: string,
  steps: ReadonlyArray<readonly [afterMillis: number, data: string]>,
  waitMillis: number
): Promise<Conversation> =>
  new Promise((resolve) => {
    const url = new URL(origin)
    const socket = Net.connect(Number(url.port), url.hostname)
    const start = Date.now()
    let received = ""
    const timers = steps.map(([after, data]) => setTimeout(() => socket.writable && socket.write(data), after))
    const finish = (closedAfterMillis: number | undefined) => {
      timers.forEach(clearTimeout)
      clearTimeout(deadline)
      socket.destroy()
      resolve({ received, closedAfterMillis })
    }
    const deadline = setTimeout(() => finish(undefined), waitMillis)
    socket.on("data", (chunk) => (received += chunk))
    socket.on("close", () => finish(Date.now() - start))
    socket.on("error", () => {}) // a reset ends the conversation like a close
  })

/** The head of an HTTP/1.1 request (keep-alive) with the given headers. */
export const head = (method: string, path: string, headers: Record<string, string | number> = {}): string =>
  [`${method} ${path} HTTP/1.1`, "Host: x", ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`), "", ""].join(
    "\r\n"
  )

/** The answers in what a server sent: status, lowercase headers and body (by Content-Length, else what follows). */
export const answersIn = (received: string) => {
  const answers: Array<{ status: number; headers: Record<string, string>; body: string }> = []
  let rest = received
  while (rest.startsWith("HTTP/1.1 ")) {
    const end = rest.indexOf("\r\n\r\n")
    if (end === -1) break
    const [statusLine, ...lines] = rest.slice(0, end).split("\r\n")
    const headers = Object.fromEntries(lines.map((line) => {
      const colon = line.indexOf(":")
      return [line.slice(0, colon).toLowerCase(), line.slice(colon + 1).trim()]
    }))
    const length = headers["content-length"] === undefined ? rest.length : Number(headers["content-length"])
    const body = rest.slice(end + 4, end + 4 + length)
    answers.push({ status: Number(statusLine!.split(" ")[1]), headers, body })
    rest = rest.slice(end + 4 + body.length)
  }
  return answers
}

const errorsAbout = (logs: ReadonlyArray<LogLine>, path: string) =>
  logs.filter((line) => line.level === "ERROR" && line.message.includes(` ${path} (`))

// Long enough for any close the router makes (the 408's discarding of the rest of the body lasts at most 2 s).
const PATIENCE_MILLIS = 5_000

/** The contract's tests, each on a fresh server of `form`. */
export const routerContract = (form: RouterForm) => {
  const withServer = (name: string, test: (server: RunningRouter) => Promise<void>) =>
    it(name, async () => {
      const server = await form.start()
      try {
        await test(server)
      } finally {
        await server.close()
      }
    })

  withServer(
    "a function that answers twice or writes after its answer ended: the first answer stands, the process serves on, logged once per route",
    async (server) => {
      for (const handler of ["answersTwice", "writesAfterEnd"]) {
        await server.create({ method: "GET", path: `/${handler}`, handler })
      }
      await server.create({ method: "GET", path: "/ok", handler: "ok" })
      for (let i = 0; i < 3; i++) {
        for (const path of ["/answersTwice", "/writesAfterEnd"]) {
          const response = await fetch(server.origin + path)
          assert.strictEqual(response.status, 200)
          assert.strictEqual(await response.text(), FIRST)
        }
      }
      await new Promise((resolve) => setTimeout(resolve, 50)) // Node emits the error on the next tick
      assert.strictEqual(await (await fetch(`${server.origin}/ok`)).text(), "ok")
      for (const path of ["/answersTwice", "/writesAfterEnd"]) {
        const logged = errorsAbout(server.logs, path)
        assert.strictEqual(logged.length, 1, JSON.stringify(server.logs))
        assert.include(logged[0]!.message, "answered twice")
      }
    }
  )

  withServer(
    "a function that fails after its answer started: the answer is cut and the connection closed, never left hanging; logged once per route",
    async (server) => {
      for (const handler of ["throwsAfterWriteHead", "failsMidAnswer"]) {
        await server.create({ method: "GET", path: `/${handler}`, handler })
      }
      await server.create({ method: "GET", path: "/ok", handler: "ok" })
      for (let i = 0; i < 2; i++) {
        for (const path of ["/throwsAfterWriteHead", "/failsMidAnswer"]) {
          const { closedAfterMillis, received } = await converse(
            server.origin,
            [[0, head("GET", path)]],
            PATIENCE_MILLIS
          )
          assert.isDefined(closedAfterMillis, `${path} left the connection open: ${received}`)
          // What got out before the cut, if anything, cannot pass for whole: no chunked terminator, and fewer bytes
          // than its Content-Length says.
          assert.notInclude(received, "\r\n0\r\n\r\n")
          for (const answer of answersIn(received)) assert.isBelow(answer.body.length, 100)
        }
      }
      assert.strictEqual(await (await fetch(`${server.origin}/ok`)).text(), "ok")
      for (const path of ["/throwsAfterWriteHead", "/failsMidAnswer"]) {
        const logged = errorsAbout(server.logs, path)
        assert.strictEqual(logged.length, 1, JSON.stringify(server.logs))
        assert.include(logged[0]!.message, "failed after its answer had started")
      }
    }
  )

  withServer(
    "a body that has not arrived by the body timeout, nothing answered: 408 request_timeout with Connection: close, the routing API's own problem",
    async (server) => {
      await server.create({ method: "POST", path: "/upload", handler: "readsBody" })
      const started = Date.now()
      const { closedAfterMillis, received } = await converse(
        server.origin,
        [[0, head("POST", "/upload", { "content-type": "text/plain", "content-length": 100 }) + "only ten b"]],
        PATIENCE_MILLIS
      )
      assert.isDefined(closedAfterMillis, received)
      const [answer, ...more] = answersIn(received)
      assert.strictEqual(more.length, 0)
      assert.strictEqual(answer!.status, 408, received)
      assert.strictEqual(answer!.headers["content-type"], Problem.CONTENT_TYPE)
      assert.strictEqual(answer!.headers.connection, "close")
      assert.deepStrictEqual(
        JSON.parse(answer!.body),
        Problem.make(
          "request_timeout",
          `The body did not arrive within ${BODY_TIMEOUT_MILLIS} ms: send it in full, without pauses.`
        )
      )
      assert.isAtLeast(Date.now() - started, BODY_TIMEOUT_MILLIS)
    }
  )

  withServer(
    "a whole answer to a request whose body is still coming stands, and the connection is closed at the body timeout rather than held for the body",
    async (server) => {
      await server.create({ method: "POST", path: "/ignore", handler: "ignoresBody" })
      const { closedAfterMillis, received } = await converse(
        server.origin,
        [
          [0, head("POST", "/ignore", { "content-type": "text/plain", "content-length": 1000 }) + "a"],
          ...Array.from({ length: 20 }, (_, i) => [100 * (i + 1), "b"] as const) // a byte every 100 ms, for 2 s
        ],
        PATIENCE_MILLIS
      )
      const [answer] = answersIn(received)
      assert.strictEqual(answer!.status, 200, received)
      assert.strictEqual(answer!.body, "answered without reading the body")
      assert.isDefined(closedAfterMillis, "the connection was held open for the rest of the body")
      assert.isBelow(closedAfterMillis!, 1_500)
    }
  )

  withServer(
    "a body that arrives in time is served, and the connection stays open for the next request after the body timeout",
    async (server) => {
      await server.create({ method: "POST", path: "/upload", handler: "readsBody" })
      await server.create({ method: "GET", path: "/ok", handler: "ok" })
      const { closedAfterMillis, received } = await converse(
        server.origin,
        [
          [0, head("POST", "/upload", { "content-type": "text/plain", "content-length": 10 }) + "hello"],
          [100, "world"],
          // Past the body timeout of the first request: its deadline must have gone with its body.
          [BODY_TIMEOUT_MILLIS + 300, head("GET", "/ok")]
        ],
        BODY_TIMEOUT_MILLIS + 800
      )
      assert.strictEqual(closedAfterMillis, undefined, received)
      assert.deepStrictEqual(answersIn(received).map((answer) => [answer.status, answer.body]), [
        [200, "read 10 bytes"],
        [200, "ok"]
      ])
    }
  )

  splitContract(withServer)
  configContract(withServer, "ok")
}
