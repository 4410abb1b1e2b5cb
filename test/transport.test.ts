/**
 * The transport rules of docs/http-api.md, over real sockets: a refused body is answered even to a client still sending it
 * (the server discards the rest for a bounded amount and time before it closes the connection), and a request with
 * `Expect: 100-continue` refused before its body is read gets its final answer without `100 Continue`.
 */
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import * as HttpServer from "@effect/platform/HttpServer"
import { afterAll, assert, beforeAll, describe, it, onTestFinished } from "@effect/vitest"
import { Effect, Layer, ManagedRuntime } from "effect"
import * as ChildProcess from "node:child_process"
import * as Http from "node:http"
import * as Net from "node:net"
import * as AdminHttpApp from "route-registry/AdminHttpApp"
import * as AdminListener from "route-registry/AdminListener"
import * as RouteRepository from "route-registry/RouteRepository"
import type * as RoutingHandler from "route-registry/RoutingHandler"
import * as NodeTransport from "../src/internal/transport/nodeTransport.js"
import { closeServer, listen } from "./utils/adapters.js"
import { ADMIN, READER, tokens } from "./utils/httpContract.js"
import { start as startExample } from "./utils/spawned.js"
import { eventually } from "./utils/waiting.js"

const KiB = 1024
const MiB = 1024 * KiB
const services = Layer.merge(RouteRepository.layerMemory, tokens)

// ---------------------------------------------------------------------------------------------------------------
// Hosts: each adapter on a real node:http server
// ---------------------------------------------------------------------------------------------------------------

interface Host {
  readonly origin: string
  readonly port: number
  /** Bytes each closed connection had read from its socket, in the order they closed. */
  readonly bytesRead: Array<number>
  readonly close: () => Promise<void>
}

interface HostKind {
  readonly name: string
  /** `checkContinue`: the server hands "checkContinue" requests to the adapter too, so Node sends no 100 itself. */
  readonly start: (checkContinue: boolean, options?: RoutingHandler.Options) => Promise<Host>
}

const track = (server: Http.Server, bytesRead: Array<number>) =>
  server.on("connection", (socket) => socket.on("close", () => bytesRead.push(socket.bytesRead)))

const nodeListenerHost: HostKind = {
  name: "AdminListener on node:http",
  start: async (checkContinue, options) => {
    const listener = await AdminListener.fromLayer(services, options)
    const server = Http.createServer(listener)
    if (checkContinue) server.on("checkContinue", listener)
    const bytesRead: Array<number> = []
    track(server, bytesRead)
    const origin = await listen(server)
    return {
      origin,
      port: Number(new URL(origin).port),
      bytesRead,
      close: () => closeServer(server).then(listener.dispose)
    }
  }
}

const httpAppHost: HostKind = {
  name: "AdminHttpApp on NodeHttpServer",
  start: async (checkContinue, options) => {
    const bytesRead: Array<number> = []
    const makeServer = () => {
      const server = Http.createServer()
      // NodeHttpServer listens for "request" only: the host hands "checkContinue" requests to the same handler.
      if (checkContinue) server.on("checkContinue", (req, res) => server.emit("request", req, res))
      return track(server, bytesRead)
    }
    const serve = Layer.unwrapEffect(Effect.map(AdminHttpApp.make(options), (app) => HttpServer.serve(app)))
    const runtime = ManagedRuntime.make(
      serve.pipe(
        Layer.provide(services),
        Layer.provideMerge(NodeHttpServer.layer(makeServer, { port: 0, host: "127.0.0.1" }))
      )
    )
    const address = await runtime.runPromise(Effect.map(HttpServer.HttpServer, (server) => server.address))
    const port = address._tag === "TcpAddress" ? address.port : 0
    return { origin: `http://127.0.0.1:${port}`, port, bytesRead, close: () => runtime.dispose() }
  }
}

// ---------------------------------------------------------------------------------------------------------------
// A raw HTTP/1.1 client on a net socket
// ---------------------------------------------------------------------------------------------------------------

interface Outcome {
  /** Every byte received, as latin1 text. */
  readonly received: string
  /** The error the connection ended with (a reset, say), or `undefined` when it ended cleanly. */
  readonly error: string | undefined
  /** Milliseconds from the first final answer's arrival to the connection's close. */
  readonly closedAfter: number
}

interface Script {
  readonly head: string
  /** Called once connected, after the head is written: starts sending the body, if any. */
  readonly onConnect?: (socket: Net.Socket) => void
  /** Called on every arrival with everything received so far. */
  readonly onReceive?: (received: string, socket: Net.Socket) => void
}

const exchange = (port: number, script: Script): Promise<Outcome> =>
  new Promise((resolve) => {
    const socket = Net.connect(port, "127.0.0.1")
    let received = ""
    let error: string | undefined = undefined
    let answeredAt = 0
    socket.on("connect", () => {
      socket.write(script.head)
      script.onConnect?.(socket)
    })
    socket.on("data", (chunk: Buffer) => {
      received += chunk.toString("latin1")
      if (answeredAt === 0 && finalResponse(received) !== undefined) answeredAt = Date.now()
      script.onReceive?.(received, socket)
    })
    socket.on("error", (e: NodeJS.ErrnoException) => void (error ??= e.code ?? e.message))
    socket.on("close", () => resolve({ received, error, closedAfter: Date.now() - answeredAt }))
  })

interface Parsed {
  readonly status: number
  readonly head: string
  readonly body: string
}

/** The first final (non-1xx) response in `received`, once complete (its body as long as its Content-Length). */
const finalResponse = (received: string): Parsed | undefined => {
  let at = 0
  for (;;) {
    const end = received.indexOf("\r\n\r\n", at)
    if (end === -1) return undefined
    const head = received.slice(at, end)
    const status = Number(head.slice(9, 12))
    if (status >= 200) {
      const length = Number(/\r\ncontent-length: *(\d+)/i.exec(head)?.[1] ?? 0)
      const body = received.slice(end + 4, end + 4 + length)
      return body.length === length ? { status, head, body } : undefined
    }
    at = end + 4
  }
}

const headOf = (method: string, headers: Record<string, string | number>) =>
  `${method} /v1/routing HTTP/1.1\r\nHost: x\r\n` +
  Object.entries(headers).map(([name, value]) => `${name}: ${value}\r\n`).join("") + "\r\n"

const admin = { authorization: `Bearer ${ADMIN}`, "content-type": "application/json" }

/** Sends a chunked body as fast as the socket takes it, until the socket closes. */
const pumpChunked = (socket: Net.Socket) => {
  const frame = Buffer.concat([
    Buffer.from(`${(64 * KiB).toString(16)}\r\n`),
    Buffer.alloc(64 * KiB, " "),
    Buffer.from("\r\n")
  ])
  const next = () => {
    while (socket.writable) {
      if (!socket.write(frame)) return void socket.once("drain", next)
    }
  }
  next()
}

/** Sends `size` bytes every `everyMillis` until the socket closes. */
const trickle = (socket: Net.Socket, size: number, everyMillis: number) => {
  const timer = setInterval(
    () => socket.writable ? socket.write(Buffer.alloc(size, " ")) : clearInterval(timer),
    everyMillis
  )
  socket.on("close", () => clearInterval(timer))
}

// The client runs in a process of its own, as a real client does: sharing the server's event loop, it could never
// be caught mid-write by the server closing the connection.
const STREAMING_CLIENT = `
const outcomes = []
for (let round = 0; round < Number(process.env.ROUNDS); round++) {
  let sent = 0
  const body = new ReadableStream({
    pull(controller) {
      if (sent >= 200 * 1024) return controller.close()
      sent += 16 * 1024
      controller.enqueue(new Uint8Array(16 * 1024).fill(32))
    }
  })
  outcomes.push(await fetch(process.env.ORIGIN + "/v1/routing", {
    method: "POST",
    headers: { authorization: "Bearer " + process.env.TOKEN, "content-type": "application/json" },
    body,
    duplex: "half"
  }).then(
    async (response) => ({
      status: response.status,
      connection: response.headers.get("connection"),
      code: (await response.json()).code
    }),
    (error) => ({ error: String(error.cause?.code ?? error) })
  ))
}
console.log(JSON.stringify(outcomes))
`

// A raw client sending a declared 2 MiB body at once, reporting what it received and how the connection ended.
const DECLARED_CLIENT = `
import * as Net from "node:net"
const outcomes = []
for (let round = 0; round < Number(process.env.ROUNDS); round++) {
  outcomes.push(await new Promise((resolve) => {
    const socket = Net.connect(Number(process.env.PORT), "127.0.0.1")
    let received = ""
    let error = null
    socket.on("data", (chunk) => (received += chunk.toString("latin1")))
    socket.on("error", (e) => (error ??= e.code))
    socket.on("close", () => resolve({ received, error }))
    socket.write("POST /v1/routing HTTP/1.1\\r\\nHost: x\\r\\nAuthorization: Bearer " + process.env.TOKEN +
      "\\r\\nContent-Type: application/json\\r\\nContent-Length: 2097152\\r\\n\\r\\n")
    socket.write(Buffer.alloc(2097152, " "))
  }))
}
console.log(JSON.stringify(outcomes))
`

/** Runs `script` (an ES module) in a node process of its own and resolves with the JSON it prints. */
const inAnotherProcess = (script: string, env: Record<string, string>): Promise<any> =>
  new Promise((resolve, reject) => {
    const child = ChildProcess.spawn(process.execPath, ["--input-type=module", "-e", script], {
      env: { PATH: process.env.PATH ?? "", TOKEN: ADMIN, ...env },
      stdio: ["ignore", "pipe", "inherit"]
    })
    let output = ""
    child.stdout.on("data", (chunk) => (output += chunk))
    child.on("error", reject)
    child.on("exit", () => resolve(JSON.parse(output)))
  })

const closesWhenAnswered = (received: string, socket: Net.Socket) => {
  if (finalResponse(received) !== undefined) socket.end()
}

const assertTooLarge = (outcome: Outcome) => {
  const answer = finalResponse(outcome.received)
  assert.isDefined(answer, `no complete answer in ${JSON.stringify(outcome.received.slice(0, 200))}`)
  assert.match(outcome.received, /^HTTP\/1\.1 413 /)
  assert.match(answer!.head, /\r\nconnection: close/i)
  assert.strictEqual(JSON.parse(answer!.body).code, "payload_too_large")
}

// ---------------------------------------------------------------------------------------------------------------
// A refused body is answered, even to a client still sending it
// ---------------------------------------------------------------------------------------------------------------

const ROUNDS = 20

for (const kind of [nodeListenerHost, httpAppHost]) {
  describe(kind.name, () => {
    let host: Host
    beforeAll(async () => {
      host = await kind.start(true)
    })
    afterAll(() => host.close())

    describe("a body over the limit (64 KiB) is answered 413 while the client still sends it", () => {
      it(`fetch streaming 200 KiB chunked in 16 KiB pieces receives the 413, ${ROUNDS} times in ${ROUNDS}`, async () => {
        const outcomes = await inAnotherProcess(STREAMING_CLIENT, { ORIGIN: host.origin, ROUNDS: String(ROUNDS) })
        assert.deepStrictEqual(
          outcomes,
          Array.from({ length: ROUNDS }, () => ({ status: 413, connection: "close", code: "payload_too_large" }))
        )
      })

      it(`a 2 MiB body sent at once behind its Content-Length: 413, then a clean close (no reset), ${ROUNDS} times`, async () => {
        const outcomes: Array<{ received: string; error: string | null }> = await inAnotherProcess(DECLARED_CLIENT, {
          PORT: String(host.port),
          ROUNDS: String(ROUNDS)
        })
        assert.strictEqual(outcomes.length, ROUNDS)
        for (const { error, received } of outcomes) {
          assertTooLarge({ received, error: error ?? undefined, closedAfter: 0 })
          assert.isNull(error)
        }
      })

      it(`a chunked body sent at full speed for ever: 413, then cut off after the amount bound, ${ROUNDS} times`, async () => {
        for (let round = 0; round < ROUNDS; round++) {
          const closed = host.bytesRead.length
          const outcome = await exchange(host.port, {
            head: headOf("POST", { ...admin, "transfer-encoding": "chunked" }),
            onConnect: pumpChunked
          })
          assertTooLarge(outcome)
          await Effect.runPromise(eventually("the host to read more of the body", () => host.bytesRead.length > closed))
          const read = host.bytesRead[closed]!
          assert.isAtLeast(read, 1 * MiB, "the contract's least amount read and discarded")
          assert.isAtMost(read, NodeTransport.LINGER_BYTES + 1 * MiB, "read without bound")
        }
      })

      it("a body trickling in for ever: 413, then cut off after the time bound (at least 1 s)", async () => {
        const outcome = await exchange(host.port, {
          head: headOf("POST", { ...admin, "content-length": 1024 * MiB }),
          onConnect: (socket) => trickle(socket, KiB, 20)
        })
        assertTooLarge(outcome)
        assert.isAtLeast(outcome.closedAfter, 1_000, "closed before the contract's least time")
      })

      it("Content-Length over the limit, no body sent: 413, then the server closes the connection cleanly", async () => {
        const outcome = await exchange(host.port, { head: headOf("POST", { ...admin, "content-length": 10 * MiB }) })
        assertTooLarge(outcome)
        assert.isUndefined(outcome.error)
      })
    })

    describe("Expect: 100-continue", () => {
      const length = { "content-length": 100 }
      const refusals: ReadonlyArray<[string, number, string, Record<string, string | number>]> = [
        ["no token", 401, "POST", { "content-type": "application/json", ...length }],
        ["an unknown token", 401, "POST", { ...admin, authorization: "Bearer nobody", ...length }],
        ["a malformed token", 400, "POST", { ...admin, authorization: "Bearer a b", ...length }],
        ["a token without the scope", 403, "POST", { ...admin, authorization: `Bearer ${READER}`, ...length }],
        ["another method", 405, "PUT", { ...admin, ...length }],
        ["another content type", 415, "POST", { ...admin, "content-type": "text/plain", ...length }],
        ["a Content-Length over the limit", 413, "POST", { ...admin, "content-length": 2 * MiB }]
      ]
      for (const [name, status, method, headers] of refusals) {
        it(`${name}: the final answer ${status} comes first, never a 100`, async () => {
          const outcome = await exchange(host.port, {
            head: headOf(method, { ...headers, expect: "100-continue" }),
            onReceive: closesWhenAnswered
          })
          assert.match(outcome.received, new RegExp(`^HTTP/1\\.1 ${status} `))
          assert.notInclude(outcome.received, "HTTP/1.1 100")
          assert.strictEqual(finalResponse(outcome.received)?.status, status)
        })
      }

      it("a valid request gets 100 Continue, sends its body, then gets 201", async () => {
        const body = JSON.stringify({ method: "GET", path: `/continue/${kind.name.length}`, handler: "h" })
        let sentBody = false
        const outcome = await exchange(host.port, {
          head: headOf("POST", { ...admin, "content-length": body.length, expect: "100-continue" }),
          onReceive: (received, socket) => {
            if (!sentBody && received.startsWith("HTTP/1.1 100 Continue\r\n\r\n")) {
              sentBody = true
              socket.write(body)
            }
            closesWhenAnswered(received, socket)
          }
        })
        assert.isTrue(outcome.received.startsWith("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 "), outcome.received)
      })
    })

    it("on a server that lets Node send the 100: exactly one 100, then 201", async () => {
      const plain = await kind.start(false)
      onTestFinished(() => plain.close())
      const body = JSON.stringify({ method: "GET", path: "/node-sends-100", handler: "h" })
      const outcome = await exchange(plain.port, {
        head: headOf("POST", { ...admin, "content-length": body.length, expect: "100-continue" }),
        onReceive: (received, socket) => {
          if (received === "HTTP/1.1 100 Continue\r\n\r\n") socket.write(body)
          closesWhenAnswered(received, socket)
        }
      })
      assert.match(outcome.received, /^HTTP\/1\.1 100 Continue\r\n\r\nHTTP\/1\.1 201 /)
      assert.strictEqual(outcome.received.split("HTTP/1.1 100").length, 2)
    })

    it("a body that stalls past the body timeout: 408 with Connection: close; the rest sent after is not reset", async () => {
      const slow = await kind.start(true, { bodyTimeoutMillis: 300 })
      onTestFinished(() => slow.close())
      let rest = false
      const outcome = await exchange(slow.port, {
        head: headOf("POST", { ...admin, "content-length": 1000 }),
        onConnect: (socket) => socket.write("{\"method\""),
        onReceive: (received, socket) => {
          if (rest || finalResponse(received) === undefined) return
          rest = true
          socket.write(" ".repeat(991))
        }
      })
      const answer = finalResponse(outcome.received)
      assert.strictEqual(answer?.status, 408)
      assert.match(answer!.head, /\r\nconnection: close/i)
      assert.strictEqual(JSON.parse(answer!.body).code, "request_timeout")
      assert.isUndefined(outcome.error)
    })
  })
}

describe("AdminListener: a request passed to next() on a server listening for checkContinue", () => {
  it("gets the 100 before the host reads its body", async () => {
    const listener = await AdminListener.fromLayer(services)
    const host: Http.RequestListener = (req, res) =>
      listener(req, res, () => {
        let body = ""
        req.on("data", (chunk) => (body += chunk))
        req.on("end", () => res.end(`host read ${body}`))
      })
    const server = Http.createServer(host).on("checkContinue", host)
    const port = Number(new URL(await listen(server)).port)
    onTestFinished(async () => {
      await closeServer(server)
      await listener.dispose()
    })
    const outcome = await exchange(port, {
      head: "POST /elsewhere HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n",
      onReceive: (received, socket) => {
        if (received === "HTTP/1.1 100 Continue\r\n\r\n") socket.write("hello")
        closesWhenAnswered(received, socket)
      }
    })
    assert.match(outcome.received, /^HTTP\/1\.1 100 Continue\r\n\r\nHTTP\/1\.1 200 /)
    assert.strictEqual(finalResponse(outcome.received)?.body, "host read hello")
  })
})

describe("examples/server.ts (npm start) with Expect: 100-continue", () => {
  it("refuses a request without a token before its body, and takes a valid one after a 100", async () => {
    const server = await startExample("examples/server.ts", { ROUTING_ADMIN_TOKENS: ADMIN })
    const port = Number(new URL(server.origin).port)
    onTestFinished(async () => {
      await server.stop()
    })
    const refused = await exchange(port, {
      head: headOf("POST", { "content-type": "application/json", "content-length": 100, expect: "100-continue" }),
      onReceive: closesWhenAnswered
    })
    assert.match(refused.received, /^HTTP\/1\.1 401 /)
    const body = JSON.stringify({ method: "GET", path: "/from-npm-start", handler: "h" })
    const created = await exchange(port, {
      head: headOf("POST", { ...admin, "content-length": body.length, expect: "100-continue" }),
      onReceive: (received, socket) => {
        if (received === "HTTP/1.1 100 Continue\r\n\r\n") socket.write(body)
        closesWhenAnswered(received, socket)
      }
    })
    assert.match(created.received, /^HTTP\/1\.1 100 Continue\r\n\r\nHTTP\/1\.1 201 /)
  })
})
