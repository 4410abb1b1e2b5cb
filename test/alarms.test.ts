/**
 * Deadlines on the Clock (src/internal/alarms.ts): driven by the TestClock, rung in order, cancelled for good, and
 * one that throws leaves the others ringing.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, TestClock } from "effect"
import { after } from "../src/internal/alarms.js"

describe("alarms", () => {
  it.effect("rings once its time has passed on the clock, not before", () =>
    Effect.gen(function*() {
      const runtime = yield* Effect.runtime<never>()
      const rung: Array<string> = []
      after(runtime, 100, () => rung.push("a"))
      yield* TestClock.adjust(50)
      after(runtime, 100, () => rung.push("b"))
      yield* TestClock.adjust(49)
      assert.deepStrictEqual(rung, [])
      yield* TestClock.adjust(1)
      assert.deepStrictEqual(rung, ["a"])
      yield* TestClock.adjust(50)
      assert.deepStrictEqual(rung, ["a", "b"])
    }))

  it.effect("a cancelled deadline never rings; the others still do, and new ones after all were cancelled", () =>
    Effect.gen(function*() {
      const runtime = yield* Effect.runtime<never>()
      const rung: Array<string> = []
      const a = after(runtime, 100, () => rung.push("a"))
      after(runtime, 100, () => rung.push("b"))
      a()
      yield* TestClock.adjust(100)
      assert.deepStrictEqual(rung, ["b"])
      const c = after(runtime, 100, () => rung.push("c"))
      c()
      c()
      after(runtime, 100, () => rung.push("d"))
      yield* TestClock.adjust(100)
      assert.deepStrictEqual(rung, ["b", "d"])
    }))

  it.effect("deadlines of other lengths keep their own order", () =>
    Effect.gen(function*() {
      const runtime = yield* Effect.runtime<never>()
      const rung: Array<string> = []
      after(runtime, 300, () => rung.push("long"))
      after(runtime, 100, () => rung.push("short"))
      yield* TestClock.adjust(100)
      assert.deepStrictEqual(rung, ["short"])
      yield* TestClock.adjust(200)
      assert.deepStrictEqual(rung, ["short", "long"])
    }))

  it.effect("a ring that throws does not stop the deadlines after it", () =>
    Effect.gen(function*() {
      const runtime = yield* Effect.runtime<never>()
      const rung: Array<string> = []
      after(runtime, 100, () => {
        throw new Error("boom")
      })
      after(runtime, 100, () => rung.push("after"))
      yield* TestClock.adjust(100)
      assert.deepStrictEqual(rung, ["after"])
    }))
})
