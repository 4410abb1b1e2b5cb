/**
 * The repository contract of descriptions, tags and middleware configs (docs/router.md): left out at their defaults,
 * stored in one form by every store (a config's keys in their canonical order), patched, listed by tag and search,
 * logged and restored byte for byte.
 */
import { assert } from "@effect/vitest"
import { Effect } from "effect"
import * as Route from "route-registry/Route"
import * as RouteRepository from "route-registry/RouteRepository"
import * as Logged from "./logged.js"

type Test = (name: string, body: () => Effect.Effect<void, unknown, Logged.Stored>) => void

const repository = RouteRepository.RouteRepository

const create = (body: Record<string, unknown>) =>
  Effect.flatMap(Effect.orDie(Route.decodeCreate(body)), (input) => Effect.flatMap(repository, (r) => r.create(input)))

const update = (id: string, body: Record<string, unknown>) =>
  Effect.flatMap(
    Effect.orDie(Route.decodePatch(body)),
    (patch) => Effect.flatMap(repository, (r) => r.update(id, patch))
  )

// A config whose keys come in an order no store keeps: index keys, longer and shorter keys, nested objects.
const CONFIG = { zeta: 1, a: { yy: [2, { d: null, c: "é" }], b: 3 }, "10": true, "2": "x", "b c": false }
const CANONICAL = `{"2":"x","10":true,"a":{"b":3,"yy":[2,{"c":"é","d":null}]},"b c":false,"zeta":1}`

export const describedContract = (test: Test) => {
  test("a route at the defaults reads as before: an empty description, no tags, { name } without config", () =>
    Effect.gen(function*() {
      const route = yield* create({
        method: "GET",
        path: "/plain",
        handler: "h",
        middleware: ["a", { name: "b" }],
        description: "",
        tags: []
      })
      const plain = yield* create({ method: "GET", path: "/plain2", handler: "h", middleware: ["a", "b"] })
      assert.strictEqual(
        Route.toJson(route),
        Route.toJson(plain).replace(plain.id, route.id).replace("/plain2", "/plain").replace(
          plain.createdAt.toISOString(),
          route.createdAt.toISOString()
        )
      )
      const repo = yield* repository
      assert.deepStrictEqual(Object.keys(JSON.parse(Route.toJson(yield* repo.findById(route.id)))), [
        "id",
        "method",
        "path",
        "middleware",
        "handler",
        "createdAt"
      ])
    }))

  test("a description, tags and configs are stored and read back in one form by get, list and the log", () =>
    Effect.gen(function*() {
      const created = yield* create({
        method: "POST",
        path: "/orders",
        handler: "h",
        middleware: ["auth", { name: "rateLimit", config: CONFIG }],
        description: "Creates an order — «quoted», emoji 🚀",
        tags: ["team:payments", "v2"]
      })
      const text = Route.toJson(created)
      assert.include(text, `{"name":"rateLimit","config":${CANONICAL}}`)
      assert.include(text, `"description":"Creates an order — «quoted», emoji 🚀","tags":["team:payments","v2"]}`)
      const repo = yield* repository
      assert.strictEqual(Route.toJson(yield* repo.findById(created.id)), text)
      assert.strictEqual(Route.toJson((yield* repo.list({ limit: 10 })).items[0]!), text)
      const [entry] = (yield* Logged.history({ limit: 1, routeId: created.id })).items
      assert.strictEqual(Route.toJson(entry!.after!), text)
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
            middleware: i % 2 === 0 ? [{ name: "m", config: { i } }] : ["m"],
            ...(i % 3 === 0 ? { description: `route ${i}`, tags: [`t${i}`] } : {})
          }),
        { concurrency: 12 }
      )
      const repo = yield* repository
      for (const [i, route] of routes.entries()) {
        assert.deepStrictEqual(
          route.middleware as ReadonlyArray<unknown>,
          i % 2 === 0 ? [{ name: "m", config: { i } }] : ["m"]
        )
        assert.strictEqual(route.description, i % 3 === 0 ? `route ${i}` : undefined)
        assert.strictEqual(Route.toJson(yield* repo.findById(route.id)), Route.toJson(route))
      }
    }))

  test("a patch sets and clears them; repeating the stored values (keys in any order) changes nothing", () =>
    Effect.gen(function*() {
      const created = yield* create({ method: "GET", path: "/p", handler: "h", middleware: ["m"] })
      const changed = yield* update(created.id, {
        description: "d",
        tags: ["x"],
        middleware: [{ name: "m", config: { b: 1, a: 2 } }]
      })
      assert.isAbove(changed.revision, created.revision)
      assert.deepStrictEqual(changed.middleware as ReadonlyArray<unknown>, [{ name: "m", config: { a: 2, b: 1 } }])
      const same = yield* update(created.id, {
        description: "d",
        tags: ["x"],
        middleware: [{ name: "m", config: { a: 2, b: 1 } }]
      })
      assert.strictEqual(same.revision, changed.revision)
      const other = yield* update(created.id, { middleware: [{ name: "m", config: { a: 2, b: 2 } }] })
      assert.isAbove(other.revision, changed.revision)
      const cleared = yield* update(created.id, { description: "", tags: [], middleware: [{ name: "m" }] })
      assert.strictEqual(Route.toJson(cleared), Route.toJson(created))
    }))

  test("the list filters by tag, by a configured middleware's name, and searches descriptions and tags", () =>
    Effect.gen(function*() {
      const a = yield* create({ method: "GET", path: "/a", handler: "h", tags: ["team:web", "beta"] })
      const b = yield* create({
        method: "GET",
        path: "/b",
        handler: "h",
        description: "Lists the invoices",
        middleware: [{ name: "cache", config: { ttl: 5 } }]
      })
      const c = yield* create({ method: "GET", path: "/c", handler: "h", tags: ["beta"], enabled: false })
      const repo = yield* repository
      const ids = (query: Partial<RouteRepository.ListQuery>) =>
        Effect.map(repo.list({ limit: 10, ...query }), (page) => page.items.map((route) => route.id))
      assert.deepStrictEqual(yield* ids({ tag: "beta" }), [a.id, c.id])
      assert.deepStrictEqual(yield* ids({ tag: "team:web" }), [a.id])
      assert.deepStrictEqual(yield* ids({ tag: "team" }), [])
      assert.deepStrictEqual(yield* ids({ tag: "beta", enabled: false }), [c.id])
      assert.deepStrictEqual(yield* ids({ middleware: "cache" }), [b.id])
      assert.deepStrictEqual(yield* ids({ q: "invoices" }), [b.id])
      assert.deepStrictEqual(yield* ids({ q: "m:w" }), [a.id])
      assert.deepStrictEqual(yield* ids({ q: "ttl" }), [])
      // A match never spans two fields.
      assert.deepStrictEqual(yield* ids({ q: "invoices\nbeta" }), [])
      const retagged = yield* update(a.id, { tags: ["gamma"] })
      assert.deepStrictEqual(yield* ids({ tag: "beta" }), [c.id])
      assert.deepStrictEqual(yield* ids({ tag: "gamma" }), [retagged.id])
    }))

  test("the log records them in before and after, and a restore brings them back byte for byte", () =>
    Effect.gen(function*() {
      const repo = yield* repository
      const created = yield* create({
        method: "GET",
        path: "/r",
        handler: "h",
        middleware: [{ name: "m", config: CONFIG }],
        description: "first",
        tags: ["one"]
      })
      const changed = yield* update(created.id, { description: "", tags: ["two"], middleware: [] })
      const entries = (yield* Logged.history({ limit: 10, routeId: created.id })).items
      assert.deepStrictEqual(
        entries.map((entry) => [entry.before && Route.toJson(entry.before), entry.after && Route.toJson(entry.after)]),
        [[Route.toJson(created), Route.toJson(changed)], [null, Route.toJson(created)]]
      )
      const back = yield* Logged.restore(created.id, created.revision)
      assert.strictEqual(
        Route.toJson(back.route),
        Route.toJson(created).replace(
          `"id":"${created.id}"`,
          `"id":"${back.route.id}"`
        )
      )
      yield* repo.remove(created.id)
      const recreated = yield* Logged.restore(created.id, changed.revision)
      assert.strictEqual(recreated.route.description, undefined)
      assert.deepStrictEqual(recreated.route.tags, ["two"])
    }))
}
