/**
 * The repository contract of the fields of docs/router.md: disabled routes and splits this release stores (`enabled`, `split`): left out at their
 * defaults, stored, patched, logged, restored and filtered alike by every store.
 */
import { assert } from "@effect/vitest"
import { Effect, Schema } from "effect"
import * as Route from "route-registry/Route"
import * as RouteRepository from "route-registry/RouteRepository"
import * as Split from "route-registry/Split"
import * as Logged from "./logged.js"

type Test = (name: string, body: () => Effect.Effect<void, unknown, Logged.Stored>) => void

const repository = RouteRepository.RouteRepository

/** Creates a route from a body as the API would. */
export const create = (body: Record<string, unknown>) =>
  Effect.flatMap(Effect.orDie(Route.decodeCreate(body)), (input) => Effect.flatMap(repository, (r) => r.create(input)))

/** Patches a route with a body as the API would. */
export const update = (id: string, body: Record<string, unknown>) =>
  Effect.flatMap(
    Effect.orDie(Route.decodePatch(body)),
    (patch) => Effect.flatMap(repository, (r) => r.update(id, patch))
  )

/** A route's JSON as its answers have it; `null` for none. */
export const json = (route: Route.Route | null | undefined) => route == null ? null : JSON.parse(Route.toJson(route))

export const SPLIT: Split.Split = Schema.decodeUnknownSync(Split.Split)({
  by: "header:x-user-id",
  group: "checkout",
  targets: [{ handler: "checkoutV2", weight: 500 }, { handler: "checkoutV3", weight: 0 }],
  override: "x-handler"
})

export const safeChangesContract = (test: Test) => {
  test("a route at the defaults has no enabled and no split, even when enabled: true is given", () =>
    Effect.gen(function*() {
      const route = yield* create({ method: "GET", path: "/plain", handler: "h", enabled: true })
      assert.deepStrictEqual(Object.keys(json(route)), ["id", "method", "path", "middleware", "handler", "createdAt"])
    }))

  test("enabled: false and a split are stored, read back and listed as created", () =>
    Effect.gen(function*() {
      const created = yield* create({ method: "GET", path: "/c", handler: "checkout", enabled: false, split: SPLIT })
      assert.deepStrictEqual(json(created), { ...json(created), enabled: false, split: SPLIT })
      // One form from every store: a split's targets with `handler` before `weight`, as a create gives them.
      assert.include(
        Route.toJson(created),
        `"split":{"by":"header:x-user-id","group":"checkout","targets":[{"handler":"checkoutV2","weight":500},` +
          `{"handler":"checkoutV3","weight":0}],"override":"x-handler"}`
      )
      const repo = yield* repository
      assert.strictEqual(Route.toJson(yield* repo.findById(created.id)), Route.toJson(created))
      const page = yield* repo.list({ limit: 10 })
      assert.strictEqual(Route.toJson(page.items[0]!), Route.toJson(created))
    }))

  test("concurrent creates with the fields keep them (a store's batched insert)", () =>
    Effect.gen(function*() {
      const routes = yield* Effect.forEach(
        Array.from({ length: 12 }, (_, i) => i),
        (i) =>
          create({
            method: "GET",
            path: `/b${i}`,
            handler: "h",
            ...(i % 2 === 0 ? { enabled: false } : {}),
            ...(i % 3 === 0 ? { split: { by: "cookie:uid", targets: [{ handler: "g", weight: i }] } } : {})
          }),
        { concurrency: 12 }
      )
      const repo = yield* repository
      for (const [i, route] of routes.entries()) {
        assert.strictEqual(route.enabled, i % 2 === 0 ? false : undefined)
        assert.deepStrictEqual(route.split?.targets[0]?.weight, i % 3 === 0 ? i : undefined)
        assert.strictEqual(Route.toJson(yield* repo.findById(route.id)), Route.toJson(route))
      }
    }))

  test("a patch sets and clears them; repeating the stored values changes nothing", () =>
    Effect.gen(function*() {
      const created = yield* create({ method: "GET", path: "/p", handler: "checkout" })
      const disabled = yield* update(created.id, { enabled: false, split: SPLIT })
      assert.strictEqual(disabled.enabled, false)
      assert.deepStrictEqual(disabled.split, SPLIT)
      assert.isAbove(disabled.revision, created.revision)
      const same = yield* update(created.id, { enabled: false, split: SPLIT })
      assert.strictEqual(same.revision, disabled.revision)
      const cleared = yield* update(created.id, { enabled: true, split: null })
      assert.strictEqual(Route.toJson(cleared), Route.toJson(created))
      assert.isAbove(cleared.revision, disabled.revision)
    }))

  test("the list filters by enabled", () =>
    Effect.gen(function*() {
      const on = yield* create({ method: "GET", path: "/on", handler: "h" })
      const off = yield* create({ method: "GET", path: "/off", handler: "h", enabled: false })
      const repo = yield* repository
      const ids = (enabled: boolean | undefined) =>
        Effect.map(repo.list({ limit: 10, enabled }), (page) => page.items.map((route) => route.id))
      assert.deepStrictEqual(yield* ids(true), [on.id])
      assert.deepStrictEqual(yield* ids(false), [off.id])
      assert.deepStrictEqual(yield* ids(undefined), [on.id, off.id])
    }))

  test("the log records them in before and after, and a restore brings them back and takes them away", () =>
    Effect.gen(function*() {
      const repo = yield* repository
      const created = yield* create({ method: "GET", path: "/r", handler: "checkout", split: SPLIT })
      const changed = yield* update(created.id, { enabled: false, split: null })
      const entries = (yield* Logged.history({ limit: 10, routeId: created.id })).items
      assert.deepStrictEqual(entries.map((entry) => [json(entry.before), json(entry.after)]), [
        [json(created), json(changed)],
        [null, json(created)]
      ])
      const back = yield* Logged.restore(created.id, created.revision)
      assert.strictEqual(Route.toJson(back.route), Route.toJson(created))
      const again = yield* Logged.restore(created.id, changed.revision)
      assert.strictEqual(Route.toJson(again.route), Route.toJson(changed))
      yield* repo.remove(created.id)
      const recreated = yield* Logged.restore(created.id, created.revision)
      assert.deepStrictEqual(recreated.route.split, SPLIT)
      assert.strictEqual(recreated.route.enabled, undefined)
    }))
}
