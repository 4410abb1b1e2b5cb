/**
 * The change streams of one process read each page of the store's log once while it is kept: a fleet of followers
 * resuming from the same cursor after a restart costs the store one read, not one per follower.
 */
import { assert, describe, it } from "@effect/vitest"
import * as LogPages from "../src/internal/http/logPages.js"
import type { LogRead } from "../src/RouteRepository.js"

const entry = (revision: number) =>
  ({ revision, routeId: `r${revision}`, after: null }) as unknown as LogRead["entries"][number]

// A log whose reads are counted; `empty` answers pages with no entries, `failing` fails every read.
const counted = (options: { readonly empty?: boolean; readonly failing?: boolean } = {}) => {
  const reads: Array<number> = []
  const read: LogPages.ReadLog = (revision, limit) => {
    reads.push(revision)
    if (options.failing === true) return Promise.reject(new Error("the store cannot be read"))
    const entries = options.empty === true ? [] : Array.from({ length: limit }, (_, i) => entry(revision + i + 1))
    return Promise.resolve({ store: "s", revision: revision + limit, entries, complete: true })
  }
  return { reads, read }
}

describe("the log's pages, shared by a process's change streams", () => {
  it("reads a page once for every stream that asks for it, at once or later", async () => {
    const log = counted()
    const read = LogPages.shared(log.read)
    const [first, second] = await Promise.all([read(10, 3), read(10, 3)])
    const third = await read(10, 3)
    assert.deepStrictEqual(log.reads, [10])
    assert.strictEqual(second, first)
    assert.strictEqual(third, first)
    assert.deepStrictEqual(first.entries.map((one) => one.revision), [11, 12, 13])
  })

  it("reads each revision's page of its own", async () => {
    const log = counted()
    const read = LogPages.shared(log.read)
    const pages = await Promise.all([read(10, 2), read(11, 2), read(10, 5)])
    assert.deepStrictEqual(log.reads, [10, 11, 10])
    assert.deepStrictEqual(pages.map((page) => page.entries[0]!.revision), [11, 12, 11])
  })

  it("reads a page with no entries again: the log grows past it", async () => {
    const log = counted({ empty: true })
    const read = LogPages.shared(log.read)
    await read(10, 3)
    await read(10, 3)
    assert.deepStrictEqual(log.reads, [10, 10])
  })

  it("reads again after a read failed", async () => {
    const log = counted({ failing: true })
    const read = LogPages.shared(log.read)
    const failures = await Promise.allSettled([read(10, 3), read(10, 3)])
    await Promise.allSettled([read(10, 3)])
    assert.deepStrictEqual(failures.map((one) => one.status), ["rejected", "rejected"])
    assert.deepStrictEqual(log.reads, [10, 10])
  })

  it("keeps the pages last asked for, at most as many as it keeps", async () => {
    const log = counted()
    const read = LogPages.shared(log.read, 2)
    await read(1, 1)
    await read(2, 1)
    await read(1, 1) // asked for again: now the last to be dropped
    await read(3, 1) // drops 2's page
    await read(1, 1)
    await read(2, 1)
    assert.deepStrictEqual(log.reads, [1, 2, 3, 2])
  })
})
