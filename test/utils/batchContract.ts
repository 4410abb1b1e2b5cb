/**
 * The repository contract of change sets (docs/batches.md): all or nothing, conflicts judged on the state after the
 * whole batch, the first refused operation's refusal, one revision per change in order, the log's entries naming the
 * batch, and a read of the log that never cuts one. Every store runs it.
 */
import { assert } from "@effect/vitest"
import { Duration, Effect, Option } from "effect"
import * as Route from "route-registry/Route"
import * as RouteRepository from "route-registry/RouteRepository"
import * as Logged from "./logged.js"

type Test = (name: string, body: () => Effect.Effect<void, unknown, Logged.Stored>) => void

const repository = RouteRepository.RouteRepository

const input = (method: string, path: string, handler = "h") =>
  Effect.runSync(Effect.orDie(Route.decodeCreate({ method, path, handler })))

const create = (method: string, path: string) => Effect.flatMap(repository, (r) => r.create(input(method, path)))

const patch = (body: Record<string, unknown>) => Effect.runSync(Effect.orDie(Route.decodePatch(body)))

const apply = (operations: ReadonlyArray<RouteRepository.BatchOperation>, options?: RouteRepository.BatchOptions) =>
  Logged.applyBatch(operations, options)

// The stored routes as `METHOD path`, by id.
const state = Effect.flatMap(
  repository,
  (r) =>
    Effect.map(
      r.list({ limit: 1000 }),
      (page) =>
        Object.fromEntries(page.items.map((route) => [route.id, `${route.method} ${route.path} ${route.handler}`]))
    )
)

const newest = Effect.map(Logged.logAfter(0, 0), (read) => read.revision)

const refusal = (error: unknown) => {
  assert.strictEqual((error as { _tag?: unknown })._tag, "BatchRefused", String(error))
  return error as RouteRepository.BatchRefused
}

// Nothing changed: the same routes, and no revision taken.
const unchanged = <A, E>(batch: Effect.Effect<A, E, Logged.Stored>) =>
  Effect.gen(function*() {
    const [before, revision] = [yield* state, yield* newest]
    const error = yield* Effect.flip(batch)
    assert.deepStrictEqual(yield* state, before)
    assert.strictEqual(yield* newest, revision)
    return refusal(error)
  })

export const batchContract = (test: Test) => {
  test("applies every operation, one revision each in order, the log's entries naming the batch", () =>
    Effect.gen(function*() {
      const a = yield* create("GET", "/a")
      const b = yield* create("GET", "/b")
      const base = yield* newest
      const applied = yield* apply([
        { op: "create", route: input("POST", "/c") },
        { op: "update", id: a.id, patch: patch({ handler: "h2" }), ifMatch: [a.revision] },
        { op: "delete", id: b.id }
      ], { actor: "alice", description: "move /b to /c" })
      assert.deepStrictEqual(applied.results.map((r) => [r.status, r.revision]), [
        [201, base + 1],
        [200, base + 2],
        [204, base + 3]
      ])
      assert.strictEqual(applied.revision, base + 3)
      const created = applied.results[0]!.route!
      assert.deepStrictEqual(yield* state, { [a.id]: "GET /a h2", [created.id]: "POST /c h" })
      assert.strictEqual((yield* Effect.flatMap(repository, (r) => r.findById(created.id))).revision, base + 1)
      const page = yield* Logged.history({ limit: 10, batch: applied.batch })
      assert.deepStrictEqual(page.items.map((e) => [e.revision, e.action, e.actor, e.batch, e.batchDescription]), [
        [base + 3, "delete", "alice", applied.batch, "move /b to /c"],
        [base + 2, "update", "alice", applied.batch, "move /b to /c"],
        [base + 1, "create", "alice", applied.batch, "move /b to /c"]
      ])
      const read = yield* Logged.logAfter(base, 10)
      assert.deepStrictEqual(read.entries.map((e) => e.batchDescription), Array(3).fill("move /b to /c"))
      // Without a description, the entries hold none.
      const plain = yield* apply([{ op: "create", route: input("PUT", "/d") }])
      const [entry] = (yield* Logged.history({ limit: 1, batch: plain.batch })).items
      assert.isFalse("batchDescription" in entry!)
      const other = yield* Logged.history({ limit: 10, batch: Route.makeRouteId(1) })
      assert.deepStrictEqual(other.items, [])
    }))

  test("judges conflicts on the state after the batch: two routes swap paths, a route takes a freed shape", () =>
    Effect.gen(function*() {
      const a = yield* create("GET", "/x/:id")
      const b = yield* create("GET", "/y/:id")
      const c = yield* create("GET", "/z")
      const swap = yield* apply([
        { op: "update", id: a.id, patch: patch({ path: "/y/:key" }) },
        { op: "update", id: b.id, patch: patch({ path: "/x/:key" }) }
      ])
      assert.deepStrictEqual(swap.results.map((r) => r.route!.path), ["/y/:key", "/x/:key"])
      const freed = yield* apply([
        { op: "create", route: input("GET", "/z") },
        { op: "delete", id: c.id }
      ])
      assert.deepStrictEqual(yield* state, {
        [a.id]: "GET /y/:key h",
        [b.id]: "GET /x/:key h",
        [freed.results[0]!.route!.id]: "GET /z h"
      })
      // Alone each would conflict; so does the swap once one of them is left out.
      const refused = yield* unchanged(apply([{ op: "update", id: a.id, patch: patch({ path: "/x/:other" }) }]))
      assert.strictEqual(refused.index, 0)
      assert.strictEqual(refused.reason._tag, "RouteConflict")
      assert.strictEqual((refused.reason as RouteRepository.RouteConflict).conflictingRouteId, b.id)
    }))

  test("refuses the whole batch with its first refused operation's refusal, as that change alone", () =>
    Effect.gen(function*() {
      const a = yield* create("GET", "/a")
      const b = yield* create("GET", "/b")
      const gone = Route.makeRouteId(1)
      const notFound = yield* unchanged(apply([
        { op: "create", route: input("GET", "/new") },
        { op: "update", id: a.id, patch: patch({ handler: "h2" }) },
        { op: "delete", id: gone },
        { op: "create", route: input("GET", "/b") }
      ]))
      assert.deepStrictEqual([notFound.index, notFound.reason], [2, new RouteRepository.RouteNotFound({ id: gone })])
      const conflict = yield* unchanged(apply([
        { op: "create", route: input("GET", "/new") },
        { op: "create", route: input("GET", "/b") }
      ]))
      assert.deepStrictEqual([conflict.index, conflict.reason._tag], [1, "RouteConflict"])
      const twice = yield* unchanged(apply([
        { op: "create", route: input("GET", "/same/:a") },
        { op: "create", route: input("GET", "/same/:b") }
      ]))
      assert.deepStrictEqual([twice.index, twice.reason._tag], [1, "RouteConflict"])
      const stale = yield* unchanged(apply([
        { op: "update", id: b.id, patch: patch({ handler: "h3" }) },
        { op: "delete", id: a.id, ifMatch: [a.revision + 1000] }
      ]))
      assert.deepStrictEqual([stale.index, stale.reason._tag], [1, "PreconditionFailed"])
      // Every refused operation is named, in order, each with its own reason.
      const many = yield* unchanged(apply([
        { op: "update", id: a.id, patch: patch({ handler: "h4" }), ifMatch: [a.revision + 1000] },
        { op: "create", route: input("GET", "/fine") },
        { op: "delete", id: gone },
        { op: "create", route: input("GET", "/b") }
      ]))
      assert.strictEqual(many.index, 0)
      assert.deepStrictEqual(many.refusals?.map((r) => [r.index, r.reason._tag]), [
        [0, "PreconditionFailed"],
        [2, "RouteNotFound"],
        [3, "RouteConflict"]
      ])
    }))

  test("with an idempotency key: applied once, the first answer given again; another batch with the key is refused", () =>
    Effect.gen(function*() {
      const a = yield* create("GET", "/a")
      const idempotency: RouteRepository.Idempotency = {
        key: "k1",
        principal: "alice",
        expiresAfter: Duration.hours(1),
        maxKeys: 10,
        maxBytes: 1 << 20
      }
      const operations = [
        { op: "create", route: input("GET", "/k") },
        { op: "update", id: a.id, patch: patch({ handler: "h2" }) }
      ] as const
      // A dry run ignores the key: the key stays free.
      yield* apply(operations, { idempotency, dryRun: true })
      const first = yield* apply(operations, { idempotency, description: "d" })
      assert.isNotTrue(first.replayed)
      const revision = yield* newest
      const before = yield* state
      // The answer again, byte for byte in what it says, though the route changed since; nothing written.
      yield* Effect.flatMap(repository, (r) => r.update(a.id, patch({ handler: "h3" })))
      const again = yield* apply(operations, { idempotency, description: "d" })
      assert.isTrue(again.replayed)
      assert.deepStrictEqual(
        [
          again.batch,
          again.revision,
          again.results.map((r) => [r.status, r.revision, r.route && Route.toJson(r.route)])
        ],
        [
          first.batch,
          first.revision,
          first.results.map((r) => [r.status, r.revision, r.route && Route.toJson(r.route)])
        ]
      )
      assert.strictEqual(yield* newest, revision + 1)
      assert.deepStrictEqual(Object.keys(yield* state), Object.keys(before))
      // Another body with the key (another description counts), or a create with it: refused, nothing written.
      for (const other of [apply(operations, { idempotency }), apply(operations.slice(0, 1), { idempotency })]) {
        const error = yield* Effect.flip(other)
        assert.strictEqual((error as { _tag: string })._tag, "IdempotencyKeyReused")
      }
      const reused = yield* Effect.flip(
        Effect.flatMap(
          Effect.serviceOption(RouteRepository.Idempotent),
          (idempotent) => Option.getOrThrow(idempotent).createIdempotent(input("GET", "/k2"), idempotency)
        )
      )
      assert.strictEqual(reused._tag, "IdempotencyKeyReused")
      assert.strictEqual(yield* newest, revision + 1)
      // A batch refused for the writer's path prefixes keeps nothing: its key is free for the next.
      const free = { ...idempotency, key: "k2" }
      const outside = yield* Effect.flip(
        apply([{ op: "create", route: input("GET", "/k3") }], { idempotency: free, pathPrefixes: ["/p"] })
      )
      assert.strictEqual(refusal(outside).reason._tag, "OutsidePrefixes")
      const applied = yield* apply([{ op: "create", route: input("GET", "/k3") }], { idempotency: free })
      assert.isNotTrue(applied.replayed)
      // The answer counts in the principal's bytes: a key that fits alone (258 bytes) with an answer that does not is
      // refused, and nothing is written.
      const small = { ...idempotency, principal: "bob", key: "k3", maxBytes: 300 }
      const tooMany = yield* Effect.flip(apply([{ op: "create", route: input("GET", "/k4") }], { idempotency: small }))
      assert.strictEqual((tooMany as { _tag: string })._tag, "TooManyIdempotencyKeys")
      assert.strictEqual(yield* newest, applied.revision)
    }))

  test("with an idempotency key: a refusal decided on the stored routes is kept and given again, nothing written", () =>
    Effect.gen(function*() {
      const a = yield* create("GET", "/a")
      const key = (name: string, maxBytes = 1 << 20): RouteRepository.Idempotency => ({
        key: name,
        principal: "alice",
        expiresAfter: Duration.hours(1),
        maxKeys: 10,
        maxBytes
      })
      // A conflict is given again as it was, even once the conflicting route is gone; the counter never moves.
      const conflicting = [
        { op: "create", route: input("POST", "/new") },
        { op: "create", route: input("GET", "/a") }
      ] as const
      const first = yield* unchanged(apply(conflicting, { idempotency: key("c") }))
      assert.isNotTrue(first.replayed)
      assert.deepStrictEqual([first.index, first.reason._tag], [1, "RouteConflict"])
      yield* Effect.flatMap(repository, (r) => r.remove(a.id))
      const revision = yield* newest
      const again = yield* unchanged(apply(conflicting, { idempotency: key("c") }))
      assert.isTrue(again.replayed)
      assert.deepStrictEqual([again.index, again.reason, again.refusals], [first.index, first.reason, first.refusals])
      assert.strictEqual((again.reason as RouteRepository.RouteConflict).conflictingRouteId, a.id)
      assert.strictEqual(yield* newest, revision)
      // Another batch with the key is refused as for an applied one.
      const reused = yield* Effect.flip(apply(conflicting.slice(0, 1), { idempotency: key("c") }))
      assert.strictEqual((reused as { _tag: string })._tag, "IdempotencyKeyReused")
      // A failed precondition, and a route not found, likewise.
      const b = yield* create("GET", "/b")
      const stale = [
        { op: "update", id: b.id, patch: patch({ handler: "h2" }), ifMatch: [b.revision + 1000] },
        { op: "delete", id: Route.makeRouteId(1) }
      ] as const
      const failed = yield* unchanged(apply(stale, { idempotency: key("p") }))
      assert.deepStrictEqual(failed.refusals?.map((r) => r.reason._tag), ["PreconditionFailed", "RouteNotFound"])
      const replayed = yield* unchanged(apply(stale, { idempotency: key("p") }))
      assert.deepStrictEqual([replayed.replayed, replayed.index, replayed.reason], [true, 0, failed.reason])
      // The refusal counts in the principal's bytes: one that does not fit is refused, and nothing is kept.
      const tooMany = yield* Effect.flip(apply(stale, { idempotency: { ...key("q", 300), principal: "bob" } }))
      assert.strictEqual((tooMany as { _tag: string })._tag, "TooManyIdempotencyKeys")
      const fits = yield* unchanged(apply(stale, { idempotency: { ...key("q"), principal: "bob" } }))
      assert.isNotTrue(fits.replayed)
    }))

  test("limits every route it touches, before and after, to the path prefixes", () =>
    Effect.gen(function*() {
      const pay = yield* create("GET", "/payments/:id")
      const other = yield* create("GET", "/users")
      const options = { pathPrefixes: ["/payments"] }
      const outside = [
        [{ op: "create", route: input("GET", "/orders") }],
        [{ op: "update", id: pay.id, patch: patch({ path: "/orders/:id" }) }],
        [{ op: "delete", id: other.id }]
      ] as const
      for (const operations of outside) {
        const refused = yield* unchanged(
          apply([{ op: "create", route: input("GET", "/payments/new") }, ...operations], options)
        )
        assert.deepStrictEqual([refused.index, refused.reason._tag], [1, "OutsidePrefixes"])
      }
      const applied = yield* apply([
        { op: "create", route: input("POST", "/payments") },
        { op: "update", id: pay.id, patch: patch({ path: "/payments/:key" }) }
      ], options)
      assert.deepStrictEqual(applied.results.map((r) => r.status), [201, 200])
    }))

  test("a dry run answers as the batch would and changes nothing; an update that changes nothing keeps its revision", () =>
    Effect.gen(function*() {
      const a = yield* create("GET", "/a")
      const revision = yield* newest
      const before = yield* state
      const dry = yield* apply([
        { op: "create", route: input("GET", "/c") },
        { op: "delete", id: a.id }
      ], { dryRun: true })
      assert.deepStrictEqual(dry.results.map((r) => [r.status, r.revision]), [[201, revision + 1], [204, revision + 2]])
      assert.deepStrictEqual(yield* state, before)
      assert.strictEqual(yield* newest, revision)
      const same = yield* apply([{ op: "update", id: a.id, patch: patch({ handler: "h" }) }])
      assert.deepStrictEqual(same.results.map((r) => [r.status, r.revision, r.route?.revision]), [
        [200, a.revision, a.revision]
      ])
      assert.strictEqual(yield* newest, revision)
    }))

  test("a read of the log never cuts a batch: the rest of one comes with its first entry", () =>
    Effect.gen(function*() {
      const base = yield* newest
      yield* apply(Array.from({ length: 5 }, (_, i) => ({ op: "create", route: input("GET", `/r${i}`) }) as const))
      yield* create("GET", "/after")
      const read = yield* Logged.logAfter(base, 1)
      assert.deepStrictEqual(read.entries.map((e) => e.revision), [1, 2, 3, 4, 5].map((n) => base + n))
      assert.isTrue(read.entries.every((e) => e.batchEnd === base + 5))
      const rest = yield* Logged.logAfter(base + 2, 1)
      assert.deepStrictEqual(rest.entries.map((e) => e.revision), [3, 4, 5].map((n) => base + n))
    }))
}
