/**
 * A follower's last-known-good snapshot and bootstrap file (docs/resilience.md): it writes its table,
 * routes from it at once at its next start with the registry away, resumes from its revision with no `reset`, never
 * routes from a snapshot that is flipped, truncated or another kind's, and routes a first start from a bootstrap file
 * until the registry's table replaces it in one step.
 */
import { assert, describe, it, onTestFinished } from "@effect/vitest"
import { Effect, Either, Fiber, TestClock } from "effect"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import * as Route from "route-registry/Route"
import * as RouteTable from "route-registry/RouteTable"
import * as SnapshotFile from "../src/internal/table/snapshotFile.js"
import * as FakeRegistry from "./utils/fakeRegistry.js"
import { changed, differences, follow, route } from "./utils/followers.js"
import { eventually } from "./utils/waiting.js"

const TOKEN = "reader"

const folder = () => {
  const dir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "route-registry-snapshot-"))
  onTestFinished(() => Fs.rmSync(dir, { recursive: true, force: true }))
  return dir
}

const registry = async () => {
  const fake = await FakeRegistry.start({ heartbeatMillis: 100 })
  onTestFinished(() => fake.close())
  return fake
}

const follower = async (url: string, options: Parameters<typeof follow>[2] = {}) => {
  const followed = await follow(url, TOKEN, options)
  onTestFinished(() => followed.close())
  return followed
}

const same = (fake: FakeRegistry.FakeRegistry, table: Iterable<RouteTable.Found["route"]>) =>
  differences(fake.routes.values(), table).length === 0

// A snapshot written by a follower of `fake` holding `count` routes, then the follower stopped.
const written = async (fake: FakeRegistry.FakeRegistry, file: string, count: number) => {
  for (let i = 0; i < count; i++) fake.put(route("GET", `/s/${i}`))
  const first = await follower(fake.origin, { snapshotFile: file })
  await Effect.runPromise(eventually(() => "no snapshot written", () => Fs.existsSync(file)))
  await first.close()
  return Either.getOrThrow(SnapshotFile.decode(Fs.readFileSync(file), "follower"))
}

describe("a follower's snapshot", () => {
  it("is routed from at once with the registry away, then resumed from its revision with no reset", async () => {
    const fake = await registry()
    const file = Path.join(folder(), "table.snapshot")
    const snapshot = await written(fake, file, 50)
    assert.strictEqual(snapshot.entries.length, 50)
    fake.refuse(503)
    const added = route("GET", "/while-away")
    fake.put(added)
    const second = await follower(fake.origin, { snapshotFile: file, startTimeout: 100_000 })
    assert.strictEqual(RouteTable.size(second.table), 50)
    assert.strictEqual(RouteTable.lookup(second.table, "GET", "/s/7")._tag, "Found")
    const away = second.status()
    assert.strictEqual(away.source, "snapshot")
    assert.strictEqual(away.confirmedAt?.toISOString(), snapshot.header.confirmedAt)
    const requested = fake.resumedFrom.length
    fake.refuse(undefined)
    await Effect.runPromise(
      eventually(() => "not resumed", () => second.status().source === "registry" && same(fake, second.table))
    )
    // Resumed from the snapshot's cursor: the registry sent only the change since, with no reset.
    assert.strictEqual(fake.resumedFrom[requested], `${snapshot.header.store}.${snapshot.header.revision.toString(36)}`)
    assert.strictEqual(second.ring.store(), snapshot.header.store)
    assert.strictEqual(RouteTable.lookup(second.table, "GET", "/while-away")._tag, "Found")
  })

  it("of another store is replaced in one step once the registry answers", async () => {
    const fake = await registry()
    const file = Path.join(folder(), "table.snapshot")
    await written(fake, file, 5)
    fake.restart() // another store: the snapshot's cursor is answered with a reset
    for (const id of Array.from(fake.routes.keys())) fake.remove(id)
    fake.put(route("GET", "/other-store"))
    const second = await follower(fake.origin, { snapshotFile: file })
    await Effect.runPromise(eventually(() => "not replaced", () => same(fake, second.table)))
    assert.strictEqual(RouteTable.size(second.table), 1)
  })

  const refusals: ReadonlyArray<readonly [string, (bytes: Buffer) => Buffer, RegExp]> = [
    ["flipped by one byte", (bytes) => {
      const copy = Buffer.from(bytes)
      const at = bytes.indexOf(10) + 30
      copy[at] = copy[at]! ^ 1
      return copy
    }, /checksum mismatch/],
    ["truncated", (bytes) => bytes.subarray(0, bytes.length - 7), /truncated/],
    [
      "of another kind of process",
      (bytes) => Buffer.from(bytes.toString("utf8").replace("\"follower\"", "\"postgres\"")),
      /postgres process/
    ],
    ["of another format", () => Buffer.from("{\"routes\":[]}\n"), /foreign format/],
    ["missing", () => Buffer.alloc(0), /missing/]
  ]
  for (const [name, damage, reason] of refusals) {
    it(`${name} is refused with its reason and never routed from`, async () => {
      const fake = await registry()
      const file = Path.join(folder(), "table.snapshot")
      await written(fake, file, 20)
      const bytes = damage(Fs.readFileSync(file))
      if (bytes.length === 0) Fs.rmSync(file)
      else Fs.writeFileSync(file, bytes)
      const refusal = SnapshotFile.decode(bytes, "follower")
      if (bytes.length > 0) assert.match(Either.flip(refusal).pipe(Either.getOrThrow), reason)
      const logged = await Effect.runPromise(Effect.flatMap(SnapshotFile.read(file, "follower"), Effect.succeed))
      assert.match(Either.flip(logged).pipe(Either.getOrThrow), reason)
      fake.refuse(503)
      await follower(fake.origin, { snapshotFile: file, startTimeout: 200 }).then(
        () => assert.fail("started from a refused snapshot"),
        (error: unknown) => assert.match(String(error), /no routes within/)
      )
    })
  }
})

describe("a follower's bootstrap file", () => {
  it("routes a first start while the registry is away, until the registry's table replaces it whole", async () => {
    const fake = await registry()
    fake.put(route("GET", "/from-registry"))
    const file = Path.join(folder(), "routes.yaml")
    Fs.writeFileSync(file, "routes:\n  - { method: GET, path: /from-bootstrap, middleware: [], handler: h }\n")
    fake.refuse(503)
    const started = await follower(fake.origin, { bootstrapFile: file, startTimeout: 200 })
    assert.strictEqual(RouteTable.lookup(started.table, "GET", "/from-bootstrap")._tag, "Found")
    const status = started.status()
    assert.strictEqual(status.source, "bootstrap")
    assert.strictEqual(status.confirmedAt, null)
    assert.strictEqual(status.stalenessMillis, Infinity)
    assert.strictEqual(JSON.parse(JSON.stringify(status)).stalenessMillis, null)
    fake.refuse(undefined)
    await Effect.runPromise(eventually(() => "not replaced", () => same(fake, started.table)))
    assert.strictEqual(RouteTable.lookup(started.table, "GET", "/from-bootstrap")._tag, "NotFound")
    assert.strictEqual(started.status().source, "registry")
  })

  it("that is not a routes file fails the start, naming the file", async () => {
    const fake = await registry()
    const file = Path.join(folder(), "routes.yaml")
    Fs.writeFileSync(file, "routes:\n  - { method: GET, path: nope }\n")
    fake.refuse(503)
    await follower(fake.origin, { bootstrapFile: file, startTimeout: 100 }).then(
      () => assert.fail("started"),
      (error: unknown) => assert.match(String(error), /bootstrap file .*routes\.yaml: \d+ problem/)
    )
  })
})

describe("the snapshot writer", () => {
  it.effect("reuses the unchanged parts of its last file, and writes exactly what a first write of the table would", () =>
    Effect.gen(function*() {
      const dir = folder()
      const content = (routes: ReadonlyArray<Route.StoredRoute>): SnapshotFile.Content => ({
        kind: "follower",
        store: "0123456789abcdef",
        revision: 7,
        confirmedAt: new Date(0),
        routes
      })
      const table = Array.from({ length: 3_000 }, (_, i) => route("GET", `/t/${i}`))
      const kept = SnapshotFile.kept()
      // Each write from what `kept` holds (its chunks, its checksum's state after each) is byte for byte a first write's.
      const writeBoth = (routes: ReadonlyArray<Route.StoredRoute>) =>
        Effect.gen(function*() {
          yield* SnapshotFile.write(Path.join(dir, "kept"), content(routes), kept)
          yield* SnapshotFile.write(Path.join(dir, "fresh"), content(routes))
          assert.isTrue(Fs.readFileSync(Path.join(dir, "kept")).equals(Fs.readFileSync(Path.join(dir, "fresh"))))
        })
      yield* writeBoth(table)
      const before = new Set(kept.chunks.values())
      // Changes at the end, as a stream of creates makes them: every chunk but the last is the same.
      const grown = [...table, route("GET", "/t/new")]
      yield* writeBoth(grown)
      const reused = [...kept.chunks.values()].filter((chunk) => before.has(chunk)).length
      assert.strictEqual(reused, kept.chunks.size - 1)
      // The same table again, then its last chunks gone: the body begins as the last one did and ends sooner.
      yield* writeBoth(grown)
      yield* writeBoth(grown.slice(0, -300))
      yield* writeBoth(grown)
      // Changes anywhere: routes updated in place, removed and added in the middle, the first and the last removed.
      const later = grown.slice(1, -1).flatMap((r, i) =>
        i % 97 === 0
          ? []
          : i % 89 === 0
          ? [changed(r, { handler: "g" as Route.HandlerName })]
          : i % 83 === 0
          ? [r, route("PUT", `/u/${i}`)]
          : [r]
      )
      yield* writeBoth(later)
      const bytes = Fs.readFileSync(Path.join(dir, "kept"))
      const read = Either.getOrThrow(SnapshotFile.decode(bytes, "follower"))
      assert.deepStrictEqual(
        read.entries.map(({ route }) => `${route.revision} ${Route.toJson(route)}`),
        later.map((r) => `${r.revision} ${Route.toJson(r)}`)
      )
      // The routes read keep their lines as the file had them: written again, the same bytes.
      yield* SnapshotFile.write(Path.join(dir, "again"), content(read.entries.map((entry) => entry.route)))
      assert.isTrue(Fs.readFileSync(Path.join(dir, "again")).equals(bytes))
    }))

  it.effect("writes at most once per interval however many changes arrive, and once more at the end", () =>
    Effect.gen(function*() {
      const file = Path.join(folder(), "table.snapshot")
      let revision = 0
      let captured = 0
      const writer = yield* SnapshotFile.writer(file, () => {
        captured++
        return { kind: "follower", store: "0123456789abcdef", revision, confirmedAt: new Date(0), routes: [] }
      })
      const fiber = yield* Effect.fork(writer.run)
      for (let i = 0; i < 10; i++) {
        revision++
        writer.changed()
        yield* Effect.yieldNow()
      }
      // The first write done (in real time: it is file I/O), the next waits for the interval on the test clock.
      yield* eventually(() => "no first write", () => Fs.existsSync(file))
      yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 50)))
      assert.strictEqual(captured, 1)
      revision++
      writer.changed()
      yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 50)))
      assert.strictEqual(captured, 1)
      yield* TestClock.adjust(SnapshotFile.INTERVAL_MILLIS)
      yield* eventually(() => `captured ${captured} times`, () => captured === 2)
      yield* Fiber.interrupt(fiber)
      revision++
      yield* writer.final
      const read = Either.getOrThrow(yield* SnapshotFile.read(file, "follower"))
      assert.strictEqual(read.header.revision, revision)
    }))
})
