/**
 * The change log's part of the repository contract (docs/history.md): revisions, entries, dry runs, restore and
 * retention, on every store that keeps a log.
 */
import type { Vitest } from "@effect/vitest"
import { assert } from "@effect/vitest"
import { Effect, Layer, TestClock } from "effect"
import * as Route from "route-registry/Route"
import * as RouteRepository from "route-registry/RouteRepository"
import * as Logged from "./logged.js"

const NOW = Date.parse("2026-11-21T09:30:12.345Z")

type Test = (name: string, body: () => Effect.Effect<void, unknown, Logged.Stored>) => void

const repository = RouteRepository.RouteRepository

const create = (body: Record<string, unknown>, options?: RouteRepository.WriteOptions) =>
  Effect.flatMap(
    Effect.orDie(Route.decodeCreate(body)),
    (input) => Effect.flatMap(repository, (repo) => repo.create(input, options))
  )

const update = (
  id: string,
  body: Record<string, unknown>,
  precondition?: RouteRepository.Precondition,
  options?: RouteRepository.WriteOptions
) =>
  Effect.flatMap(
    Effect.orDie(Route.decodePatch(body)),
    (patch) => Effect.flatMap(repository, (repo) => repo.update(id, patch, precondition, options))
  )

const remove = (id: string, precondition?: RouteRepository.Precondition, options?: RouteRepository.WriteOptions) =>
  Effect.flatMap(repository, (repo) => repo.remove(id, precondition, options))

const restore = (
  id: string,
  revision: number,
  precondition?: RouteRepository.Precondition,
  options?: RouteRepository.WriteOptions
) => Logged.restore(id, revision, precondition, options)

const history = (query: Partial<RouteRepository.HistoryQuery> = {}) => Logged.history({ limit: 200, ...query })

const findById = (id: string) => Effect.flatMap(repository, (repo) => repo.findById(id))

// A route as the log holds it: the six fields the API answers.
const json = (route: Route.Route | null) => route === null ? null : JSON.parse(Route.toJson(route))

const plain = (entry: RouteRepository.HistoryEntry) => ({
  ...entry,
  at: entry.at.toISOString(),
  before: json(entry.before),
  after: json(entry.after)
})

const tagOf = (error: unknown) => (error as { _tag?: unknown })._tag

export const logContract = <R>(
  test: Test,
  it: Vitest.MethodsNonLive<R>,
  limited: (historyCapacity: number) => Layer.Layer<Logged.Stored, unknown, R>
) => {
  test("every change gets the next revision and an exact entry, newest first", () =>
    Effect.gen(function*() {
      const created = yield* create({ method: "GET", path: "/a", handler: "h" }).pipe(
        Effect.provideService(RouteRepository.Actor, "deploy-bot")
      )
      const updated = yield* update(created.id, { handler: "h2" }, undefined, { actor: "alice" })
      const removed = yield* remove(created.id, undefined, { actor: null })
      assert.strictEqual(updated.revision, created.revision + 1)
      assert.strictEqual(removed, updated.revision + 1)
      const page = yield* history()
      assert.isFalse(page.hasMore)
      const at = new Date(NOW).toISOString()
      assert.deepStrictEqual(page.items.map(plain), [
        {
          revision: removed,
          at,
          actor: null,
          action: "delete",
          routeId: created.id,
          before: json(updated),
          after: null
        },
        {
          revision: updated.revision,
          at,
          actor: "alice",
          action: "update",
          routeId: created.id,
          before: json(created),
          after: json(updated)
        },
        {
          revision: created.revision,
          at,
          actor: "deploy-bot",
          action: "create",
          routeId: created.id,
          before: null,
          after: json(created)
        }
      ])
    }))

  test("a change that changes nothing, and a refused one, take no revision and write no entry", () =>
    Effect.gen(function*() {
      const a = yield* create({ method: "GET", path: "/a", handler: "h" })
      yield* create({ method: "GET", path: "/b", handler: "h" })
      assert.strictEqual((yield* update(a.id, { handler: "h" })).revision, a.revision)
      assert.strictEqual(tagOf(yield* Effect.flip(update(a.id, { path: "/b" }))), "RouteConflict")
      assert.strictEqual(
        tagOf(yield* Effect.flip(create({ method: "GET", path: "/a", handler: "x" }))),
        "RouteConflict"
      )
      assert.strictEqual(tagOf(yield* Effect.flip(remove(a.id, { ifMatch: [a.revision + 99] }))), "PreconditionFailed")
      const c = yield* create({ method: "GET", path: "/c", handler: "h" })
      assert.strictEqual(c.revision, a.revision + 2)
      assert.deepStrictEqual((yield* history()).items.map((entry) => entry.revision), [
        c.revision,
        c.revision - 1,
        a.revision
      ])
    }))

  test("dry runs answer as the change would, and change nothing: no route, no revision, no entry", () =>
    Effect.gen(function*() {
      const dry = { dryRun: true }
      const a = yield* create({ method: "GET", path: "/a", handler: "h" })
      const tried = yield* create({ method: "GET", path: "/t", handler: "h" }, dry)
      assert.strictEqual(tried.revision, a.revision + 1)
      assert.strictEqual(tagOf(yield* Effect.flip(findById(tried.id))), "RouteNotFound")
      assert.strictEqual(
        tagOf(yield* Effect.flip(create({ method: "GET", path: "/a", handler: "x" }, dry))),
        "RouteConflict"
      )
      const patched = yield* update(a.id, { handler: "other" }, { ifMatch: [a.revision] }, dry)
      assert.strictEqual(patched.handler, "other")
      assert.strictEqual(
        tagOf(yield* Effect.flip(update(a.id, { handler: "x" }, { ifMatch: [a.revision + 5] }, dry))),
        "PreconditionFailed"
      )
      assert.strictEqual(yield* remove(a.id, undefined, dry), a.revision + 1)
      assert.strictEqual(tagOf(yield* Effect.flip(remove(tried.id, undefined, dry))), "RouteNotFound")
      const kept = yield* findById(a.id)
      assert.strictEqual(JSON.stringify(kept), JSON.stringify(a))
      assert.deepStrictEqual((yield* history()).items.map((entry) => entry.revision), [a.revision])
      // The next real change takes the revision the dry runs did not use.
      assert.strictEqual((yield* create({ method: "GET", path: "/b", handler: "h" })).revision, a.revision + 1)
    }))

  test("history pages: filters by route, actor and action, a cursor, and hasMore exactly", () =>
    Effect.gen(function*() {
      const a = yield* create({ method: "GET", path: "/a", handler: "h" }, { actor: "alice" })
      const b = yield* create({ method: "GET", path: "/b", handler: "h" }, { actor: "bob" })
      const a2 = yield* update(a.id, { handler: "h2" }, undefined, { actor: "bob" })
      const a3 = yield* update(a.id, { handler: "h3" }, undefined, { actor: "alice" })
      const revisions = (page: RouteRepository.HistoryPage) => page.items.map((entry) => entry.revision)
      assert.deepStrictEqual(revisions(yield* history({ routeId: a.id })), [a3.revision, a2.revision, a.revision])
      assert.deepStrictEqual(revisions(yield* history({ actor: "bob" })), [a2.revision, b.revision])
      assert.deepStrictEqual(revisions(yield* history({ action: "create" })), [b.revision, a.revision])
      assert.deepStrictEqual(revisions(yield* history({ actor: "alice", action: "update" })), [a3.revision])
      const first = yield* history({ limit: 2 })
      assert.deepStrictEqual(revisions(first), [a3.revision, a2.revision])
      assert.isTrue(first.hasMore)
      const second = yield* history({ limit: 2, before: a2.revision })
      assert.deepStrictEqual(revisions(second), [b.revision, a.revision])
      assert.isFalse(second.hasMore)
      assert.deepStrictEqual(yield* history({ routeId: "not-a-route" }), { items: [], hasMore: false })
      assert.deepStrictEqual(yield* history({ routeId: Route.makeRouteId(NOW) }), { items: [], hasMore: false })
    }))

  test("restore updates a route back to a revision, as a new change of its own", () =>
    Effect.gen(function*() {
      const a = yield* create({ method: "GET", path: "/a", middleware: ["m"], handler: "h" })
      const changed = yield* update(a.id, { path: "/z", middleware: [], handler: "h2" })
      const restored = yield* restore(a.id, a.revision, { ifMatch: [changed.revision] }, { actor: "carol" })
      assert.isFalse(restored.created)
      assert.strictEqual(restored.route.revision, changed.revision + 1)
      assert.deepStrictEqual(json(restored.route), json(a))
      assert.deepStrictEqual(json(yield* findById(a.id)), json(a))
      const [entry] = (yield* history({ limit: 1 })).items
      assert.deepStrictEqual(plain(entry!), {
        revision: restored.route.revision,
        at: new Date(NOW).toISOString(),
        actor: "carol",
        action: "restore",
        routeId: a.id,
        before: json(changed),
        after: json(a),
        restoredFrom: a.revision
      })
      // Already as it was: nothing changes.
      const again = yield* restore(a.id, a.revision)
      assert.strictEqual(again.route.revision, restored.route.revision)
      assert.strictEqual(
        tagOf(yield* Effect.flip(restore(a.id, changed.revision, { ifMatch: [a.revision] }))),
        "PreconditionFailed"
      )
    }))

  test("restore creates a deleted route again, with a new id and createdAt", () =>
    Effect.gen(function*() {
      const a = yield* create({ method: "POST", path: "/a/:id", handler: "h" })
      const removed = yield* remove(a.id)
      yield* TestClock.adjust(1000)
      const restored = yield* restore(a.id, a.revision)
      assert.isTrue(restored.created)
      assert.notStrictEqual(restored.route.id, a.id)
      assert.strictEqual(restored.route.createdAt.getTime(), NOW + 1000)
      assert.deepStrictEqual(
        { ...json(restored.route), id: a.id, createdAt: json(a).createdAt },
        json(a)
      )
      assert.strictEqual(restored.route.revision, removed + 1)
      const [entry] = (yield* history({ limit: 1 })).items
      assert.strictEqual(entry!.action, "restore")
      assert.strictEqual(entry!.routeId, restored.route.id)
      assert.strictEqual(entry!.before, null)
      assert.strictEqual(entry!.restoredFrom, a.revision)
      // The deleted route's history stays readable; a second restore would take the same method and shape.
      assert.strictEqual((yield* history({ routeId: a.id })).items.length, 2)
      const conflict = yield* Effect.flip(restore(a.id, a.revision))
      assert.strictEqual(tagOf(conflict), "RouteConflict")
      assert.strictEqual((conflict as RouteRepository.RouteConflict).conflictingRouteId, restored.route.id)
    }))

  test("restore refuses a revision not in the route's log, one that deleted it, and an id the log never held", () =>
    Effect.gen(function*() {
      const a = yield* create({ method: "GET", path: "/a", handler: "h" })
      const b = yield* create({ method: "GET", path: "/b", handler: "h" })
      const other = yield* Effect.flip(restore(a.id, b.revision))
      assert.deepStrictEqual(
        other,
        new RouteRepository.InvalidRestore({ id: a.id, revision: b.revision, reason: "not_in_log" })
      )
      const far = yield* Effect.flip(restore(a.id, 10 ** 9))
      assert.strictEqual((far as RouteRepository.InvalidRestore).reason, "not_in_log")
      const removed = yield* remove(b.id)
      const deleted = yield* Effect.flip(restore(b.id, removed))
      assert.strictEqual((deleted as RouteRepository.InvalidRestore).reason, "deleted")
      for (const id of [Route.makeRouteId(NOW), "not-a-uuid"]) {
        assert.strictEqual(tagOf(yield* Effect.flip(restore(id, a.revision))), "RouteNotFound")
      }
      // A dry run of a restore checks the same, and changes nothing.
      const tried = yield* restore(b.id, b.revision, undefined, { dryRun: true })
      assert.isTrue(tried.created)
      assert.strictEqual(tagOf(yield* Effect.flip(findById(tried.route.id))), "RouteNotFound")
      assert.strictEqual((yield* history({ limit: 1 })).items[0]!.revision, removed)
    }))

  it.effect("retention: the newest historyCapacity entries are kept, older ones pruned, writes go on", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(NOW)
      const routes = []
      for (let i = 0; i < 8; i++) routes.push(yield* create({ method: "GET", path: `/r/${i}`, handler: "h" }))
      const page = yield* history()
      assert.deepStrictEqual(
        page.items.map((entry) => entry.revision),
        routes.slice(-3).reverse().map((r) => r.revision)
      )
      // A pruned revision can no longer be restored; one still held can.
      assert.strictEqual(tagOf(yield* Effect.flip(restore(routes[0]!.id, routes[0]!.revision))), "InvalidRestore")
      assert.isFalse((yield* restore(routes[7]!.id, routes[7]!.revision)).created)
    }).pipe(Effect.provide(limited(3))))
}
