/**
 * The body readers' deadline waits on the Clock (src/internal/alarms.ts): a TestClock drives it, so a body that stops
 * coming is answered "Timeout" as soon as the clock passes the deadline, and one that ends before is read whole.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Fiber, TestClock } from "effect"
import type { IncomingMessage } from "node:http"
import { PassThrough } from "node:stream"
import * as Body from "../src/internal/transport/body.js"

// Longer than a test may run: only the TestClock can bring it.
const DEADLINE = 600_000

// A request whose body the test writes: what the Node reader reads (it is recognised by shape).
const request = () =>
  Object.assign(new PassThrough(), { httpVersion: "1.1", headers: {} }) as unknown as IncomingMessage

describe("body deadline on the TestClock", () => {
  it.effect("a Node request body that stops coming fails with Timeout once the clock passes the deadline", () =>
    Effect.gen(function*() {
      const req = request()
      const reading = yield* Effect.fork(Body.fromIncomingMessage(req)(1024, DEADLINE))
      ;(req as unknown as PassThrough).write("{\"half\":")
      yield* TestClock.adjust(DEADLINE - 1)
      assert.isTrue((yield* Fiber.poll(reading))._tag === "None", "still reading before the deadline")
      yield* TestClock.adjust(1)
      assert.deepStrictEqual(yield* Fiber.await(reading), Exit.fail("Timeout" as const))
    }))

  it.effect("a Node request body that ends in time is read whole, and its deadline never fires", () =>
    Effect.gen(function*() {
      const req = request()
      const reading = yield* Effect.fork(Body.fromIncomingMessage(req)(1024, DEADLINE))
      ;(req as unknown as PassThrough).end("{}")
      const body = yield* Fiber.join(reading)
      assert.strictEqual(new TextDecoder().decode(body), "{}")
      yield* TestClock.adjust(2 * DEADLINE)
    }))

  it.effect("a web Request body that stops coming fails with Timeout once the clock passes the deadline", () =>
    Effect.gen(function*() {
      const stream = new ReadableStream<Uint8Array>({
        start: (controller) => controller.enqueue(new TextEncoder().encode("{"))
      })
      const web = new Request("http://localhost/", { method: "POST", body: stream, duplex: "half" } as RequestInit)
      const reading = yield* Effect.fork(Body.fromWebRequest(web)(1024, DEADLINE))
      yield* TestClock.adjust(DEADLINE)
      assert.deepStrictEqual(yield* Fiber.await(reading), Exit.fail("Timeout" as const))
    }))
})
