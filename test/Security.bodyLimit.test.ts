/**
 * Security: bounded body reading. The 413 path never buffers more than the limit, in the body readers and end to end.
 */
import { assert, describe, it, onTestFinished } from "@effect/vitest"
import { Effect, Exit, Fiber, Layer } from "effect"
import * as fc from "fast-check"
import { EventEmitter } from "node:events"
import * as Http from "node:http"
import type { IncomingMessage } from "node:http"
import * as AdminListener from "route-registry/AdminListener"
import * as RouteRepository from "route-registry/RouteRepository"
import * as RoutingHandler from "route-registry/RoutingHandler"
import * as Body from "../src/internal/transport/body.js"
import { closeServer, listen } from "./utils/adapters.js"
import { ADMIN, json, tokens } from "./utils/httpContract.js"

/** Just what the body reader uses of a Node request. */
class FakeIncomingMessage extends EventEmitter {
  readonly httpVersion = "1.1"
  pauses = 0
  pause() {
    this.pauses++
    return this
  }
}

const chunkSizes = fc.array(fc.integer({ min: 1, max: 1500 }), { minLength: 1, maxLength: 12 })
const limit = fc.integer({ min: 1, max: 4096 })

/** Index of the first chunk that takes the total past `max`, or -1. */
const crossing = (sizes: ReadonlyArray<number>, max: number) => {
  let total = 0
  return sizes.findIndex((size) => (total += size) > max)
}

const chunkOf = (size: number, i: number) => Buffer.alloc(size, i % 251)

describe("the 413 path never buffers more than the limit", () => {
  it("fromIncomingMessage stops at the first chunk past the limit: TooLarge, paused, no listener left", async () => {
    await fc.assert(
      fc.asyncProperty(limit, chunkSizes, async (max, sizes) => {
        const req = new FakeIncomingMessage()
        const fiber = Effect.runFork(Body.fromIncomingMessage(req as unknown as IncomingMessage)(max, 60_000))
        assert.strictEqual(req.listenerCount("data"), 1)
        const cross = crossing(sizes, max)
        sizes.forEach((size, i) => {
          req.emit("data", chunkOf(size, i))
          const reading = cross === -1 || i < cross
          assert.strictEqual(req.listenerCount("data"), reading ? 1 : 0, `after chunk ${i}`)
          assert.strictEqual(req.pauses, reading ? 0 : 1, `after chunk ${i}`)
        })
        if (cross === -1) req.emit("end")
        for (const event of ["data", "end", "close", "error"]) assert.strictEqual(req.listenerCount(event), 0, event)
        const exit = await Effect.runPromise(Fiber.await(fiber))
        if (cross === -1) {
          assert.isTrue(Exit.isSuccess(exit))
          const bytes = Exit.isSuccess(exit) ? exit.value : new Uint8Array()
          assert.isAtMost(bytes.length, max)
          assert.deepStrictEqual(Buffer.from(bytes), Buffer.concat(sizes.map(chunkOf)))
        } else {
          assert.deepStrictEqual(exit, Exit.fail("TooLarge"))
        }
      }),
      { numRuns: 500 }
    )
  })

  it("fromIncomingMessage lets go of the request when the reading is interrupted", async () => {
    const req = new FakeIncomingMessage()
    const fiber = Effect.runFork(Body.fromIncomingMessage(req as unknown as IncomingMessage)(1024, 60_000))
    req.emit("data", chunkOf(100, 0))
    await Effect.runPromise(Fiber.interrupt(fiber))
    for (const event of ["data", "end", "close", "error"]) assert.strictEqual(req.listenerCount(event), 0, event)
  })

  it("fromWebRequest stops pulling at the first chunk past the limit and cancels the stream", async () => {
    await fc.assert(
      fc.asyncProperty(limit, chunkSizes, async (max, sizes) => {
        let pulls = 0
        let cancelled = false
        const stream = new ReadableStream<Uint8Array>({
          pull: (controller) => {
            const size = sizes[pulls]
            pulls++
            if (size === undefined) controller.close()
            else controller.enqueue(new Uint8Array(chunkOf(size, pulls - 1)))
          },
          cancel: () => void (cancelled = true)
        }, { highWaterMark: 0 }) // pulled only when read
        const request = new Request("http://localhost/v1/routing", {
          method: "POST",
          body: stream,
          duplex: "half"
        } as RequestInit)
        const exit = await Effect.runPromiseExit(Body.fromWebRequest(request)(max, 60_000))
        await new Promise((resolve) => setTimeout(resolve, 1))
        const cross = crossing(sizes, max)
        if (cross === -1) {
          assert.isTrue(Exit.isSuccess(exit))
          const bytes = Exit.isSuccess(exit) ? exit.value : new Uint8Array()
          assert.deepStrictEqual(Buffer.from(bytes), Buffer.concat(sizes.map(chunkOf)))
          assert.isFalse(cancelled)
        } else {
          assert.deepStrictEqual(exit, Exit.fail("TooLarge"))
          assert.strictEqual(pulls, cross + 1, "pulled past the chunk that crossed the limit")
          assert.isTrue(cancelled, "the stream was not cancelled")
        }
      }),
      { numRuns: 300 }
    )
  })

  for (const max of [1024, RoutingHandler.DEFAULT_MAX_BODY_BYTES]) {
    it(`node:http end to end (limit ${max}): 5 MB streamed without Content-Length is answered 413 early`, async () => {
      const listener = await AdminListener.fromLayer(Layer.merge(RouteRepository.layerMemory, tokens), {
        maxBodyBytes: max
      })
      let delivered = 0 // body bytes delivered to the request stream's readers
      let consumed = -1 // ... when the answer was written (the rest is read only to be discarded, docs/http-api.md, "Errors")
      let socketBytes = -1 // bytes read from the socket (headers included) when the answer was written
      const server = Http.createServer((req, res) => {
        req.on("data", (chunk: Buffer) => void (delivered += chunk.length))
        const writeHead = res.writeHead.bind(res) as (...args: Array<unknown>) => Http.ServerResponse
        res.writeHead = ((...args: Array<unknown>) => {
          consumed = delivered
          socketBytes = req.socket.bytesRead
          return writeHead(...args)
        }) as typeof res.writeHead
        listener(req, res)
      })
      const origin = await listen(server)
      const total = 5 * 1024 * 1024
      onTestFinished(async () => {
        await closeServer(server)
        await listener.dispose()
      })
      const answer = await new Promise<{ status: number; connection: string | undefined; body: string }>(
        (resolve, reject) => {
          let answered = false
          const req = Http.request(`${origin}/v1/routing`, {
            method: "POST",
            headers: { authorization: `Bearer ${ADMIN}`, ...json, "transfer-encoding": "chunked" }
          })
          req.on("response", (res) => {
            answered = true
            let body = ""
            res.on("data", (chunk) => (body += chunk))
            res.on("end", () => resolve({ status: res.statusCode!, connection: res.headers.connection, body }))
          })
          // Once answered, the server may stop reading: errors writing the rest are expected.
          req.on("error", (error) => answered || reject(error))
          const chunk = Buffer.alloc(64 * 1024, "{")
          let sent = 0
          const pump = () => {
            while (sent < total && !answered) {
              sent += chunk.length
              if (!req.write(chunk)) return void req.once("drain", pump)
            }
            if (!answered) req.end()
          }
          pump()
        }
      )
      assert.strictEqual(answer.status, 413)
      assert.strictEqual(answer.connection, "close")
      assert.strictEqual(JSON.parse(answer.body).code, "payload_too_large")
      assert.isBelow(consumed, max + 64 * 1024, "body bytes taken from the request")
      assert.isAbove(socketBytes, 0)
      assert.isBelow(socketBytes, max + 4 * 64 * 1024, "bytes read from the socket")
    })
  }
})
