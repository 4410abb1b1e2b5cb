/**
 * The soak of bench/soak.ts in a shorter form (`npm run soak` runs it for 60 s): memory flat after warm-up and every
 * answer a success.
 */
import { assert, describe, it } from "@effect/vitest"
import { HEAP_BOUND_BYTES, RSS_BOUND_BYTES, soak } from "../../bench/soak.js"
import * as TestDatabase from "../utils/TestDatabase.js"

describe("soak (short form)", () => {
  it("15 s of mixed load on the Postgres store: memory flat after warm-up, only 200 and 201", async () => {
    const result = await soak({ seconds: 15, databaseUrl: TestDatabase.url })
    assert.deepStrictEqual(Object.keys(result.statuses).sort(), ["200", "201"])
    // That the load ran at all: how much of it 15 s hold depends on the machine, which may be loaded.
    assert.isAbove(result.requests, 100)
    assert.isAtMost(result.heap.max - result.heap.afterWarmUp, HEAP_BOUND_BYTES, JSON.stringify(result.heap))
    assert.isAtMost(result.rss.max - result.rss.afterWarmUp, RSS_BOUND_BYTES, JSON.stringify(result.rss))
  })
})
