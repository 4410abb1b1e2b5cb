/**
 * The repository contract: what every store must do. Each store's test file runs it with its own layer; every
 * test gets a fresh, empty store.
 */
import type { Vitest } from "@effect/vitest"
import { assert, describe } from "@effect/vitest"
import { Duration, Effect, Either, Fiber, Layer, Option, TestClock } from "effect"
import * as Route from "route-registry/Route"
import * as RouteRepository from "route-registry/RouteRepository"
import { accepted, refused } from "../fixtures/samples.js"
import { batchContract } from "./batchContract.js"
import { conditionsContract } from "./conditionsContract.js"
import { describedContract } from "./describedContract.js"
import { logContract } from "./logContract.js"
import * as Logged from "./logged.js"
import { safeChangesContract } from "./safeChangesContract.js"

const NOW = Date.parse("2026-11-21T09:30:12.345Z")

const input = (body: Record<string, unknown>) => Effect.orDie(Route.decodeCreate(body))

const create = (body: Record<string, unknown>) =>
  Effect.flatMap(input(body), (value) => Effect.flatMap(RouteRepository.RouteRepository, (repo) => repo.create(value)))

const findById = (id: string) => Effect.flatMap(RouteRepository.RouteRepository, (repo) => repo.findById(id))

const update = (id: string, body: Record<string, unknown>, precondition?: RouteRepository.Precondition) =>
  Effect.flatMap(
    Effect.orDie(Route.decodePatch(body)),
    (patch) => Effect.flatMap(RouteRepository.RouteRepository, (repo) => repo.update(id, patch, precondition))
  )

const remove = (id: string, precondition?: RouteRepository.Precondition) =>
  Effect.flatMap(RouteRepository.RouteRepository, (repo) => repo.remove(id, precondition))

const list = (query: RouteRepository.ListQuery) =>
  Effect.flatMap(RouteRepository.RouteRepository, (repo) => repo.list(query))

type Body = {
  readonly method: string
  readonly path: string
  readonly handler: string
  readonly middleware?: Array<string>
}

const createAll = (bodies: ReadonlyArray<Body>) => Effect.forEach(bodies, create, { concurrency: 8 })

const range = (n: number) => Array.from({ length: n }, (_, i) => i)

const sortedIds = (routes: ReadonlyArray<Route.Route>) => routes.map((route) => route.id).sort()

/** What a listing must return: the routes its filters select, in ascending id order (byte order). */
const selected = (routes: ReadonlyArray<Route.Route>, query: Omit<RouteRepository.ListQuery, "limit">) =>
  sortedIds(routes.filter((route) =>
    (query.method === undefined || route.method === query.method) &&
    (query.handler === undefined || route.handler === query.handler) &&
    (query.middleware === undefined ||
      route.middleware.map(Route.middlewareName).includes(query.middleware as Route.MiddlewareName)) &&
    (query.pathPrefix === undefined || route.path.startsWith(query.pathPrefix)) &&
    (query.q === undefined ||
      [
        route.path,
        route.handler,
        ...route.middleware.map(Route.middlewareName),
        route.description ?? "",
        ...(route.tags ?? [])
      ].some((text) => text.includes(query.q!))) &&
    (query.tag === undefined || (route.tags ?? []).includes(query.tag)) &&
    (query.enabled === undefined || (route.enabled !== false) === query.enabled) &&
    (query.after === undefined || route.id > query.after)
  ))

/**
 * Follows the cursor from the first page to the last, running `between` after each page; every page but the last
 * must be full. The ids in the order returned.
 */
const walk = (
  query: Omit<RouteRepository.ListQuery, "after">,
  between: (page: RouteRepository.Page) => Effect.Effect<void, unknown, RouteRepository.RouteRepository> = () =>
    Effect.void
) =>
  Effect.gen(function*() {
    const ids: Array<string> = []
    let after: string | undefined
    for (;;) {
      const page = yield* list({ ...query, after })
      ids.push(...page.items.map((route) => route.id))
      if (page.hasMore) assert.strictEqual(page.items.length, query.limit, "a page before the last is full")
      yield* between(page)
      if (!page.hasMore) return ids
      after = page.items[page.items.length - 1]!.id
    }
  })

/** A generator of UUIDv7s that differ only in their last twelve hex digits, `tails` in that order. */
const idsEnding = (tails: ReadonlyArray<string>) => {
  const head = Route.makeRouteId(NOW).slice(0, 24)
  let n = 0
  return Layer.succeed(RouteRepository.RouteIdGenerator, { next: () => (head + tails[n++]!) as Route.RouteId })
}

const assertConflict = (error: unknown, conflictingRouteId: string) => {
  assert.strictEqual((error as { _tag?: unknown })._tag, "RouteConflict", String(error))
  assert.strictEqual((error as RouteRepository.RouteConflict).conflictingRouteId, conflictingRouteId)
}

export const repositoryContract = <R>(
  it: Vitest.MethodsNonLive<R>,
  store: Layer.Layer<Logged.Stored, unknown, R>,
  /** The store with a change log of this capacity. */
  limited: (historyCapacity: number) => Layer.Layer<Logged.Stored, unknown, R>
) => {
  const test = (name: string, body: () => Effect.Effect<void, unknown, Logged.Stored>) =>
    it.effect(name, () =>
      Effect.gen(function*() {
        yield* TestClock.setTime(NOW)
        yield* body()
      }).pipe(Effect.provide(store)))

  for (const sample of accepted) {
    test(`round-trips byte for byte: ${sample.name}`, () =>
      Effect.gen(function*() {
        const created = yield* create(sample.body)
        assert.isTrue(Route.isRouteId(created.id))
        assert.deepStrictEqual(JSON.parse(Route.toJson(created)), {
          id: created.id,
          middleware: [],
          ...sample.body,
          createdAt: "2026-11-21T09:30:12.345Z"
        })
        const found = yield* findById(created.id)
        assert.strictEqual(JSON.stringify(found), JSON.stringify(created)) // the revision too
      }))
  }

  for (const sample of refused) {
    test(`refuses before storing: ${sample.name}`, () =>
      Effect.gen(function*() {
        const repo = yield* RouteRepository.RouteRepository
        const error = yield* Effect.flip(Effect.flatMap(Route.decodeCreate(sample.body), repo.create))
        assert.strictEqual(error._tag, "InvalidRoute")
        if (error._tag === "InvalidRoute") {
          assert.deepStrictEqual(error.errors.map((e) => e.path), sample.errors.map(([path]) => path))
        }
      }))
  }

  test("middleware omitted is stored and returned as []", () =>
    Effect.gen(function*() {
      const created = yield* create({ method: "GET", path: "/x", handler: "h" })
      assert.deepStrictEqual((yield* findById(created.id)).middleware, [])
    }))

  test("createdAt has millisecond precision and the toISOString form", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(0)
      const epoch = yield* create({ method: "GET", path: "/epoch", handler: "h" })
      yield* TestClock.setTime(NOW + 0.9) // a fractional clock reading never leaks past the millisecond
      const now = yield* create({ method: "GET", path: "/now", handler: "h" })
      assert.strictEqual((yield* findById(epoch.id)).createdAt.toISOString(), "1970-01-01T00:00:00.000Z")
      assert.strictEqual(JSON.parse(JSON.stringify(yield* findById(now.id))).createdAt, "2026-11-21T09:30:12.345Z")
    }))

  test("the same method and path conflicts, naming the stored route", () =>
    Effect.gen(function*() {
      const first = yield* create({ method: "GET", path: "/users/:id", handler: "show" })
      const error = yield* Effect.flip(create({ method: "GET", path: "/users/:id", handler: "other" }))
      assert.deepStrictEqual(
        error,
        new RouteRepository.RouteConflict({ method: "GET", path: "/users/:id", conflictingRouteId: first.id })
      )
    }))

  test("renamed parameters conflict (same shape)", () =>
    Effect.gen(function*() {
      const first = yield* create({ method: "GET", path: "/users/:id/posts/:postId", handler: "h" })
      const error = yield* Effect.flip(create({ method: "GET", path: "/users/:userId/posts/:p", handler: "h" }))
      assert.strictEqual(error._tag, "RouteConflict")
      assert.strictEqual((error as RouteRepository.RouteConflict).conflictingRouteId, first.id)
    }))

  test("a static segment beside a parameter does not conflict", () =>
    Effect.gen(function*() {
      const param = yield* create({ method: "GET", path: "/users/:id", handler: "show" })
      const me = yield* create({ method: "GET", path: "/users/me", handler: "me" })
      assert.notStrictEqual(param.id, me.id)
      assert.strictEqual((yield* findById(me.id)).handler, "me")
    }))

  test("another method on the same path does not conflict", () =>
    Effect.gen(function*() {
      yield* create({ method: "GET", path: "/users/:id", handler: "show" })
      const put = yield* create({ method: "PUT", path: "/users/:id", handler: "update" })
      assert.strictEqual((yield* findById(put.id)).method, "PUT")
    }))

  test("methods are case-sensitive keys of distinct shapes", () =>
    Effect.gen(function*() {
      yield* create({ method: "M-SEARCH", path: "/a", handler: "h" })
      yield* create({ method: "SEARCH", path: "/a", handler: "h" })
      const error = yield* Effect.flip(create({ method: "M-SEARCH", path: "/a", handler: "x" }))
      assert.strictEqual(error._tag, "RouteConflict")
    }))

  test("100 concurrent creates of one shape: exactly one wins, the others name it", () =>
    Effect.gen(function*() {
      const results = yield* Effect.all(
        Array.from({ length: 100 }, (_, i) =>
          Effect.either(create({ method: "POST", path: `/race/:p${i}`, handler: "h" }))),
        { concurrency: "unbounded" }
      )
      const wins = results.filter(Either.isRight).map((r) =>
        r.right
      )
      assert.strictEqual(wins.length, 1)
      const winner = wins[0]!
      for (const result of results.filter(Either.isLeft)) {
        assert.strictEqual(result.left._tag, "RouteConflict")
        assert.strictEqual((result.left as RouteRepository.RouteConflict).conflictingRouteId, winner.id)
      }
      assert.strictEqual((yield* findById(winner.id)).path, winner.path)
    }))

  test("ids are unique UUIDv7s, even within one millisecond", () =>
    Effect.gen(function*() {
      const routes = yield* Effect.forEach(
        Array.from({ length: 200 }, (_, i) => i),
        (i) => create({ method: "GET", path: `/unique/${i}`, handler: "h" }),
        { concurrency: 10 }
      )
      const ids = new Set(routes.map((route) => route.id))
      assert.strictEqual(ids.size, 200)
      for (const id of ids) assert.isTrue(Route.isRouteId(id))
    }))

  test("unknown and impossible ids are not found", () =>
    Effect.gen(function*() {
      const created = yield* create({ method: "GET", path: "/exists", handler: "h" })
      const missing = Route.makeRouteId(NOW)
      for (const id of [missing, "not-a-uuid", "", created.id.toUpperCase(), `${created.id} `, "'; DROP TABLE x; --"]) {
        const error = yield* Effect.flip(findById(id))
        assert.deepStrictEqual(error, new RouteRepository.RouteNotFound({ id }))
      }
    }))

  it.effect("takes ids from the RouteIdGenerator it was built with", () =>
    Effect.gen(function*() {
      let n = 0
      const ids = Layer.succeed(RouteRepository.RouteIdGenerator, {
        next: (millis) => Route.makeRouteId(millis).replace(/.{4}$/, String(1000 + n++)) as Route.RouteId
      })
      const result = yield* Effect.gen(function*() {
        const a = yield* create({ method: "GET", path: "/a", handler: "h" })
        const b = yield* create({ method: "GET", path: "/b", handler: "h" })
        return [a.id.slice(-4), b.id.slice(-4), (yield* findById(b.id)).id === b.id]
      }).pipe(Effect.provide(Layer.provide(store, ids)))
      assert.deepStrictEqual(result, ["1000", "1001", true])
    }))

  describe("list", () => listing(test, it, store))
  describe("update", () => updating(test))
  describe("remove", () => removing(test))
  describe("revisions", () => revisions(test))
  describe("concurrent changes", () => concurrency(test))
  describe("the method bound", () => methodBound(test))
  describe("idempotency keys", () => idempotencyKeys(test))
  describe("the change log", () => logContract(test, it, limited))
  describe("change sets (docs/batches.md)", () => batchContract(test))
  describe("enabled and split (docs/router.md: disabled routes and splits)", () => safeChangesContract(test))
  describe("descriptions, tags and middleware configs (docs/router.md)", () => describedContract(test))
  describe("conditions (docs/router.md: conditions)", () => conditionsContract(test))
}

type Test = (name: string, body: () => Effect.Effect<void, unknown, Logged.Stored>) => void

const listing = <R>(
  test: Test,
  it: Vitest.MethodsNonLive<R>,
  store: Layer.Layer<Logged.Stored, unknown, R>
) => {
  test("an empty store lists an empty last page", () =>
    Effect.gen(function*() {
      assert.deepStrictEqual(yield* list({ limit: 10 }), { items: [], hasMore: false })
      assert.deepStrictEqual(yield* list({ limit: 1, method: "GET", pathPrefix: "/" }), { items: [], hasMore: false })
    }))

  test("pages hold whole stored routes in ascending id order; hasMore says exactly whether more follow", () =>
    Effect.gen(function*() {
      const routes = yield* createAll(
        range(7).map((i) => ({
          method: "GET",
          path: `/r/${i}`,
          middleware: ["auth"],
          handler: "h"
        }))
      )
      const all = yield* list({ limit: 7 })
      assert.deepStrictEqual(all.items.map((route) => route.id), sortedIds(routes))
      assert.isFalse(all.hasMore)
      for (const item of all.items) {
        assert.strictEqual(JSON.stringify(item), JSON.stringify(yield* findById(item.id)))
      }
      const first = yield* list({ limit: 6 })
      assert.deepStrictEqual(first.items.map((route) => route.id), sortedIds(routes).slice(0, 6))
      assert.isTrue(first.hasMore)
      const last = yield* list({ limit: 6, after: first.items[5]!.id })
      assert.deepStrictEqual(last.items.map((route) => route.id), sortedIds(routes).slice(6))
      assert.isFalse(last.hasMore)
      assert.deepStrictEqual(yield* list({ limit: 3, after: sortedIds(routes)[6] }), { items: [], hasMore: false })
    }))

  test("limit 1: a walk visits every route once, one per page", () =>
    Effect.gen(function*() {
      const routes = yield* createAll(range(5).map((i) => ({ method: "GET", path: `/one/${i}`, handler: "h" })))
      assert.deepStrictEqual(yield* walk({ limit: 1 }), sortedIds(routes))
    }))

  test("limit 1000: 1001 routes make a full page, then a last page of one", () =>
    Effect.gen(function*() {
      const routes = yield* createAll(range(1001).map((i) => ({ method: "GET", path: `/k/${i}`, handler: "h" })))
      const first = yield* list({ limit: 1000 })
      assert.strictEqual(first.items.length, 1000)
      assert.isTrue(first.hasMore)
      const last = yield* list({ limit: 1000, after: first.items[999]!.id })
      assert.deepStrictEqual(
        [...first.items, ...last.items].map((route) => route.id),
        sortedIds(routes)
      )
      assert.isFalse(last.hasMore)
    }))

  it.effect("ids are ordered by their bytes, whatever the order they were made in", () =>
    Effect.gen(function*() {
      // Digits sort before lowercase hex letters; the generator hands the ids out of order.
      const tails = ["00000000000a", "000000000009", "0000000000a0", "000000000100", "00000000000f", "0000000000f0"]
      const ids = yield* Effect.gen(function*() {
        const routes = yield* Effect.forEach(tails, (_, i) => create({ method: "GET", path: `/b/${i}`, handler: "h" }))
        const walked = yield* walk({ limit: 2 })
        const after = yield* list({ limit: 10, after: routes[0]!.id })
        const filtered = yield* walk({ limit: 1, pathPrefix: "/b/" })
        return { routes, walked, after: after.items.map((route) => route.id), filtered }
      }).pipe(Effect.provide(Layer.provide(store, idsEnding(tails))))
      const order = ["000000000009", "00000000000a", "00000000000f", "0000000000a0", "0000000000f0", "000000000100"]
      assert.deepStrictEqual(ids.walked.map((id) => id.slice(24)), order)
      assert.deepStrictEqual(ids.filtered, ids.walked)
      assert.deepStrictEqual(ids.after.map((id) => id.slice(24)), order.slice(2))
    }))

  it.effect("a cursor that is no route id (from a programmatic caller) still compares by bytes", () =>
    Effect.gen(function*() {
      const tails = ["000000000001", "000000000002", "000000000003"]
      const [id, pages] = yield* Effect.gen(function*() {
        const routes = yield* Effect.forEach(tails, (_, i) => create({ method: "GET", path: `/c/${i}`, handler: "h" }))
        const id = routes[1]!.id
        const afters = ["", "0", "g", id.slice(0, 35), `${id}\u0000`, `${id.slice(0, 35)}\u0000z`, id.toUpperCase()]
        const pages = yield* Effect.forEach(
          afters,
          (after) => Effect.map(list({ limit: 10, after }), (page) => page.items.map((route) => route.id.slice(24)))
        )
        return [id, pages] as const
      }).pipe(Effect.provide(Layer.provide(store, idsEnding(tails))))
      // An uppercase hex letter sorts after every digit and before every lowercase letter.
      const upper = /[a-f]/.test(id.slice(0, 24)) ? tails : tails.slice(2)
      assert.deepStrictEqual(pages, [tails, tails, [], tails, tails.slice(2), tails, upper])
    }))

  const catalog: ReadonlyArray<Body> = [
    { method: "GET", path: "/users", middleware: ["auth", "log"], handler: "users" },
    { method: "GET", path: "/users/:id", middleware: ["auth"], handler: "user" },
    { method: "POST", path: "/users", middleware: ["log", "auth", "csrf"], handler: "users" },
    { method: "DELETE", path: "/users/:id", middleware: [], handler: "user" },
    { method: "GET", path: "/users-admin", handler: "admin" },
    { method: "GET", path: "/Users", middleware: ["auth"], handler: "users" },
    { method: "GET", path: "/x_y", handler: "literal" },
    { method: "GET", path: "/xay", handler: "literal" },
    { method: "GET", path: "/x%25y", handler: "literal" },
    { method: "GET", path: "/x%2Fz", middleware: ["log"], handler: "literal" },
    { method: "M-SEARCH", path: "/", middleware: ["authx"], handler: "root" },
    { method: "GET", path: "/", middleware: ["auth"], handler: "root" }
  ]

  const queries: ReadonlyArray<Omit<RouteRepository.ListQuery, "limit" | "after">> = [
    {},
    { method: "GET" },
    { method: "POST" },
    { method: "M-SEARCH" },
    { method: "get" },
    { method: "PUT" },
    { handler: "users" },
    { handler: "literal" },
    { handler: "nobody" },
    { middleware: "auth" },
    { middleware: "log" },
    { middleware: "csrf" },
    { middleware: "aut" },
    { middleware: "none" },
    { pathPrefix: "/" },
    { pathPrefix: "/users" },
    { pathPrefix: "/users/" },
    { pathPrefix: "/Users" },
    { pathPrefix: "/users/:id" },
    { pathPrefix: "/users/:id/more" },
    { pathPrefix: "/x_" }, // "_" is literal: /x_y only, not /xay
    { pathPrefix: "/x%" }, // "%" is literal: the two escapes, not every path under /x
    { pathPrefix: "/x%2" },
    { pathPrefix: "/x%25" },
    { pathPrefix: "/_" },
    { pathPrefix: "/%" },
    { pathPrefix: "/é" },
    { pathPrefix: "/\u0000" },
    { method: "GET", handler: "users" },
    { method: "GET", middleware: "auth" },
    { method: "GET", pathPrefix: "/users" },
    { handler: "users", middleware: "log" },
    { handler: "literal", pathPrefix: "/x" },
    { method: "GET", handler: "users", middleware: "auth", pathPrefix: "/u" },
    { method: "POST", handler: "user" },
    // q: the path, the handler or a middleware name contains it, byte for byte; no match spans two of them.
    { q: "users" },
    { q: "ser" },
    { q: "Users" },
    { q: "auth" },
    { q: "authx" },
    { q: "literal" },
    { q: "/" },
    { q: "s/:" },
    { q: "x_" }, // "_" is literal
    { q: "%" }, // "%" is literal
    { q: "%2F" },
    { q: "\\" },
    { q: "é" },
    { q: "\n" },
    { q: "users\nauth" },
    { q: "log\nauth" },
    { q: "/users\nusers" },
    { q: "nothing-has-this" },
    { q: "user", method: "GET" },
    { q: "log", pathPrefix: "/users" },
    { q: "auth", handler: "users", middleware: "log" }
  ]

  test("every filter, alone and combined with AND, at every page size and from every cursor", () =>
    Effect.gen(function*() {
      const routes = yield* createAll(catalog)
      const cursors = [undefined, ...sortedIds(routes)]
      for (const query of queries) {
        const expected = selected(routes, query)
        for (const limit of [1, 2, 5, 1000]) {
          assert.deepStrictEqual(yield* walk({ ...query, limit }), expected, `${JSON.stringify(query)} limit ${limit}`)
        }
        for (const after of cursors) {
          const page = yield* list({ ...query, limit: 3, after })
          const rest = selected(routes, { ...query, after })
          const label = `${JSON.stringify(query)} after ${after}`
          assert.deepStrictEqual(page.items.map((route) => route.id), rest.slice(0, 3), label)
          assert.strictEqual(page.hasMore, rest.length > 3, label)
        }
      }
    }))

  test("the cursor may name a route deleted since: the walk goes on after it", () =>
    Effect.gen(function*() {
      const routes = yield* createAll(range(6).map((i) => ({ method: "GET", path: `/d/${i}`, handler: "h" })))
      const ids = sortedIds(routes)
      const first = yield* list({ limit: 2 })
      yield* remove(ids[1]!)
      yield* remove(ids[2]!)
      const next = yield* list({ limit: 2, after: first.items[1]!.id })
      assert.deepStrictEqual(next.items.map((route) => route.id), ids.slice(3, 5))
      assert.isTrue(next.hasMore)
    }))

  test("a walk returns every route left unchanged during it exactly once, whatever changes meanwhile", () =>
    Effect.gen(function*() {
      const stable = yield* createAll(range(24).map((i) => ({ method: "GET", path: `/stable/${i}`, handler: "h" })))
      const volatile = yield* createAll(range(24).map((i) => ({ method: "GET", path: `/volatile/${i}`, handler: "h" })))
      let made = 0
      // One change of a volatile route: moved out of the filtered set and back, deleted, or joined by a new route.
      const change = (i: number) => {
        const target = volatile[i % volatile.length]!
        switch (i % 4) {
          case 0:
            return Effect.ignore(update(target.id, { handler: "moved", method: "PUT" }))
          case 1:
            return Effect.ignore(update(target.id, { handler: "h", method: "GET" }))
          case 2:
            return Effect.ignore(remove(target.id))
          default:
            return Effect.ignore(create({ method: "GET", path: `/new/${made++}`, handler: "h" }))
        }
      }
      const changer = yield* Effect.fork(
        Effect.forEach(range(80), (i) => Effect.zipRight(change(i), Effect.yieldNow()), { discard: true })
      )
      let page = 0
      // Between pages: the route the cursor names is deleted when volatile, and more changes land.
      const between = (current: RouteRepository.Page) =>
        Effect.gen(function*() {
          const last = current.items[current.items.length - 1]
          if (last !== undefined && last.path.startsWith("/volatile/")) yield* Effect.ignore(remove(last.id))
          yield* change(page++)
        })
      const walked = yield* walk({ limit: 3, method: "GET", handler: "h" }, between)
      const unfiltered = yield* walk({ limit: 4 }, between)
      yield* Fiber.join(changer)
      for (const ids of [walked, unfiltered]) {
        assert.strictEqual(new Set(ids).size, ids.length, "no route twice")
        const seen = new Set(ids)
        for (const route of stable) assert.isTrue(seen.has(route.id), `${route.path} missing`)
      }
    }))
}

const updating = (test: Test) => {
  test("replaces each field it gives and keeps the others, the id and createdAt", () =>
    Effect.gen(function*() {
      const created = yield* create({ method: "GET", path: "/u/:id", middleware: ["a", "b"], handler: "h" })
      yield* TestClock.adjust("1 hour") // an update never stamps a new createdAt
      const steps: ReadonlyArray<readonly [Record<string, unknown>, Record<string, unknown>]> = [
        [{ method: "PUT" }, { method: "PUT", path: "/u/:id", middleware: ["a", "b"], handler: "h" }],
        [{ path: "/v/:key" }, { method: "PUT", path: "/v/:key", middleware: ["a", "b"], handler: "h" }],
        [{ middleware: ["c", "a"] }, { method: "PUT", path: "/v/:key", middleware: ["c", "a"], handler: "h" }],
        [{ handler: "k" }, { method: "PUT", path: "/v/:key", middleware: ["c", "a"], handler: "k" }],
        [{ middleware: [] }, { method: "PUT", path: "/v/:key", middleware: [], handler: "k" }],
        [
          { method: "M-SEARCH", path: "/w", middleware: ["z"], handler: "all" },
          { method: "M-SEARCH", path: "/w", middleware: ["z"], handler: "all" }
        ]
      ]
      let revision = created.revision
      for (const [patch, fields] of steps) {
        const updated = yield* update(created.id, patch)
        const expected = { id: created.id, ...fields, createdAt: "2026-11-21T09:30:12.345Z" }
        assert.deepStrictEqual(JSON.parse(Route.toJson(updated)), expected, JSON.stringify(patch))
        assert.isAbove(updated.revision, revision)
        revision = updated.revision
        assert.strictEqual(JSON.stringify(yield* findById(created.id)), JSON.stringify(updated))
      }
    }))

  test("a patch of the stored values changes nothing and keeps the revision", () =>
    Effect.gen(function*() {
      const created = yield* create({ method: "GET", path: "/same/:id", middleware: ["a", "b"], handler: "h" })
      for (
        const patch of [
          { method: "GET" },
          { path: "/same/:id" },
          { middleware: ["a", "b"] },
          { handler: "h" },
          { method: "GET", path: "/same/:id", middleware: ["a", "b"], handler: "h" }
        ]
      ) {
        const result = yield* update(created.id, patch)
        assert.strictEqual(JSON.stringify(result), JSON.stringify(created), JSON.stringify(patch))
      }
      const reordered = yield* update(created.id, { middleware: ["b", "a"] }) // order matters: a change
      assert.isAbove(reordered.revision, created.revision)
      const renamed = yield* update(created.id, { path: "/same/:key" }) // same shape, other bytes: a change
      assert.isAbove(renamed.revision, reordered.revision)
      assert.strictEqual(renamed.path, "/same/:key")
    }))

  test("the new method and shape conflict with another route, which is named; nothing changes", () =>
    Effect.gen(function*() {
      const users = yield* create({ method: "GET", path: "/users/:id", handler: "show" })
      const other = yield* create({ method: "POST", path: "/other", handler: "h" })
      for (
        const patch of [
          { method: "GET", path: "/users/:id" },
          { method: "GET", path: "/users/:userId" }
        ]
      ) {
        const error = yield* Effect.flip(update(other.id, patch))
        assert.deepStrictEqual(
          error,
          new RouteRepository.RouteConflict({ method: "GET", path: patch.path, conflictingRouteId: users.id })
        )
      }
      const postUsers = yield* create({ method: "POST", path: "/users/:key", handler: "h" })
      assertConflict(yield* Effect.flip(update(postUsers.id, { method: "GET" })), users.id) // the method alone
      const getOther = yield* create({ method: "GET", path: "/x", handler: "h" })
      assertConflict(yield* Effect.flip(update(getOther.id, { path: "/users/:u" })), users.id) // the path alone
      assert.strictEqual(JSON.stringify(yield* findById(other.id)), JSON.stringify(other))
      assert.strictEqual(JSON.stringify(yield* findById(postUsers.id)), JSON.stringify(postUsers))
    }))

  test("static and parameter siblings do not conflict; a route never conflicts with itself", () =>
    Effect.gen(function*() {
      const param = yield* create({ method: "GET", path: "/users/:id", handler: "show" })
      const other = yield* create({ method: "GET", path: "/other", handler: "h" })
      const me = yield* update(other.id, { path: "/users/me" })
      assert.strictEqual(me.path, "/users/me")
      const renamed = yield* update(param.id, { path: "/users/:userId", handler: "renamed" })
      assert.strictEqual(renamed.path, "/users/:userId")
      const put = yield* update(me.id, { method: "PUT", path: "/users/:id" })
      assert.strictEqual(put.method, "PUT")
    }))

  test("the old method and shape are free at once", () =>
    Effect.gen(function*() {
      const moved = yield* create({ method: "GET", path: "/old/:id", handler: "h" })
      yield* update(moved.id, { path: "/new/:id" })
      const taker = yield* create({ method: "GET", path: "/old/:key", handler: "h" })
      assert.strictEqual((yield* findById(taker.id)).path, "/old/:key")
      assertConflict(yield* Effect.flip(update(moved.id, { path: "/old/:x" })), taker.id)
    }))

  test("not found first, then the precondition, then the conflict", () =>
    Effect.gen(function*() {
      const holder = yield* create({ method: "GET", path: "/held", handler: "h" })
      const route = yield* create({ method: "GET", path: "/mine", handler: "h" })
      const conflicting = { path: "/held" }
      const stale = { ifMatch: [route.revision + 1000] }
      for (const id of [Route.makeRouteId(NOW), "not-a-uuid", "", route.id.toUpperCase()]) {
        assert.deepStrictEqual(
          yield* Effect.flip(update(id, conflicting, stale)),
          new RouteRepository.RouteNotFound({ id })
        )
      }
      assert.deepStrictEqual(
        yield* Effect.flip(update(route.id, conflicting, stale)),
        new RouteRepository.PreconditionFailed({ id: route.id, revision: route.revision })
      )
      assert.deepStrictEqual(
        yield* Effect.flip(update(route.id, { handler: "h" }, { ifMatch: [] })), // a no-op still needs the match
        new RouteRepository.PreconditionFailed({ id: route.id, revision: route.revision })
      )
      assertConflict(yield* Effect.flip(update(route.id, conflicting, { ifMatch: [route.revision] })), holder.id)
      assert.strictEqual(JSON.stringify(yield* findById(route.id)), JSON.stringify(route))
    }))

  test("path prefixes: the stored path must be under one; checked before the revisions, on the stored route", () =>
    Effect.gen(function*() {
      const route = yield* create({ method: "GET", path: "/payments/:id", handler: "h" })
      const other = yield* create({ method: "GET", path: "/paymentsx", handler: "h" })
      const outside = (id: string, path: string) => new RouteRepository.OutsidePrefixes({ id, path })
      const stale = { pathPrefixes: ["/orders"], ifMatch: [route.revision + 1000] }
      assert.deepStrictEqual(
        yield* Effect.flip(update(route.id, { handler: "x" }, stale)),
        outside(route.id, route.path)
      )
      // /payments holds /payments/:id, not /paymentsx; no prefix at all holds nothing; a no-op is checked too.
      assert.deepStrictEqual(
        yield* Effect.flip(update(other.id, { handler: "x" }, { pathPrefixes: ["/payments"] })),
        outside(other.id, "/paymentsx")
      )
      assert.deepStrictEqual(
        yield* Effect.flip(update(route.id, { handler: "h" }, { pathPrefixes: [] })),
        outside(route.id, route.path)
      )
      // The new path is the caller's to check: the store decides on the path it holds.
      const moved = yield* update(route.id, { path: "/orders/:id" }, { pathPrefixes: ["/orders", "/payments"] })
      assert.strictEqual(moved.path, "/orders/:id")
      assert.deepStrictEqual(
        yield* Effect.flip(update(route.id, { path: "/payments/:id" }, { pathPrefixes: ["/payments"] })),
        outside(route.id, "/orders/:id")
      )
      assert.deepStrictEqual(
        yield* Effect.flip(update(route.id, { handler: "x" }, { pathPrefixes: ["/orders"], ifMatch: [1e9] })),
        new RouteRepository.PreconditionFailed({ id: route.id, revision: moved.revision })
      )
      assert.strictEqual(JSON.stringify(yield* findById(route.id)), JSON.stringify(moved))
    }))

  test("a precondition naming the current revision (among others) lets the change through", () =>
    Effect.gen(function*() {
      const route = yield* create({ method: "GET", path: "/pre", handler: "h" })
      const first = yield* update(route.id, { handler: "a" }, { ifMatch: [route.revision - 1, route.revision, 1e9] })
      assert.strictEqual(first.handler, "a")
      const error = yield* Effect.flip(update(route.id, { handler: "b" }, { ifMatch: [route.revision] }))
      assert.deepStrictEqual(
        error,
        new RouteRepository.PreconditionFailed({ id: route.id, revision: first.revision })
      )
      const noop = yield* update(route.id, { handler: "a" }, { ifMatch: [first.revision] })
      assert.strictEqual(noop.revision, first.revision)
      assert.strictEqual((yield* findById(route.id)).handler, "a")
    }))

  test("a removed route is not found", () =>
    Effect.gen(function*() {
      const route = yield* create({ method: "GET", path: "/gone", handler: "h" })
      yield* remove(route.id)
      assert.deepStrictEqual(
        yield* Effect.flip(update(route.id, { handler: "x" })),
        new RouteRepository.RouteNotFound({ id: route.id })
      )
    }))
}

const removing = (test: Test) => {
  test("removes the route: not found afterwards, a second remove is not found too, the shape is free", () =>
    Effect.gen(function*() {
      const route = yield* create({ method: "GET", path: "/rm/:id", handler: "h" })
      const kept = yield* create({ method: "GET", path: "/kept", handler: "h" })
      yield* remove(route.id)
      assert.deepStrictEqual(
        yield* Effect.flip(findById(route.id)),
        new RouteRepository.RouteNotFound({ id: route.id })
      )
      assert.deepStrictEqual(yield* Effect.flip(remove(route.id)), new RouteRepository.RouteNotFound({ id: route.id }))
      assert.deepStrictEqual(yield* Effect.flip(remove(route.id)), new RouteRepository.RouteNotFound({ id: route.id }))
      const again = yield* create({ method: "GET", path: "/rm/:other", handler: "h" })
      assert.strictEqual((yield* findById(again.id)).path, "/rm/:other")
      assert.deepStrictEqual((yield* list({ limit: 10 })).items.map((r) => r.id), sortedIds([kept, again]))
      const moved = yield* update(kept.id, { path: "/moved" })
      yield* remove(moved.id)
      yield* update(again.id, { path: "/moved" }) // the updated route's shape was freed too
    }))

  test("unknown and impossible ids are not found", () =>
    Effect.gen(function*() {
      for (const id of [Route.makeRouteId(NOW), "not-a-uuid", "", "'; DROP TABLE x; --"]) {
        assert.deepStrictEqual(yield* Effect.flip(remove(id)), new RouteRepository.RouteNotFound({ id }))
        assert.deepStrictEqual(
          yield* Effect.flip(remove(id, { ifMatch: [] })),
          new RouteRepository.RouteNotFound({ id })
        )
      }
    }))

  test("path prefixes: a route outside them is not removed; one under them is", () =>
    Effect.gen(function*() {
      const route = yield* create({ method: "GET", path: "/api/orders/:id", handler: "h" })
      assert.deepStrictEqual(
        yield* Effect.flip(remove(route.id, { pathPrefixes: ["/api/order", "/payments"] })),
        new RouteRepository.OutsidePrefixes({ id: route.id, path: route.path })
      )
      assert.strictEqual((yield* findById(route.id)).id, route.id)
      yield* remove(route.id, { pathPrefixes: ["/payments", "/api/orders"] })
      assert.strictEqual((yield* Effect.flip(findById(route.id)))._tag, "RouteNotFound")
    }))

  test("a precondition that names another revision fails and removes nothing; one naming it removes", () =>
    Effect.gen(function*() {
      const route = yield* create({ method: "GET", path: "/rm-pre", handler: "h" })
      for (const ifMatch of [[], [route.revision + 1], [0, 1.5]]) {
        assert.deepStrictEqual(
          yield* Effect.flip(remove(route.id, { ifMatch })),
          new RouteRepository.PreconditionFailed({ id: route.id, revision: route.revision })
        )
      }
      assert.strictEqual(JSON.stringify(yield* findById(route.id)), JSON.stringify(route))
      yield* remove(route.id, { ifMatch: [route.revision + 1, route.revision] })
      assert.strictEqual((yield* Effect.flip(findById(route.id)))._tag, "RouteNotFound")
    }))
}

const revisions = (test: Test) => {
  test("every change takes the next value of one store-wide counter; reads and no-ops take none", () =>
    Effect.gen(function*() {
      const a = yield* create({ method: "GET", path: "/rev/a", handler: "h" })
      const b = yield* create({ method: "GET", path: "/rev/b", handler: "h" })
      assert.isTrue(Number.isSafeInteger(a.revision) && a.revision > 0)
      assert.isAbove(b.revision, a.revision)
      const a2 = yield* update(a.id, { handler: "x" })
      assert.isAbove(a2.revision, b.revision) // store-wide: after b's, not just after a's own
      yield* findById(a.id)
      yield* list({ limit: 10 })
      yield* update(a.id, { handler: "x" })
      assert.strictEqual((yield* findById(a.id)).revision, a2.revision)
      assert.strictEqual((yield* findById(b.id)).revision, b.revision)
      const c = yield* create({ method: "GET", path: "/rev/c", handler: "h" })
      assert.isAbove(c.revision, a2.revision)
      yield* remove(c.id) // a delete takes one too
      const d = yield* create({ method: "GET", path: "/rev/d", handler: "h" })
      assert.isAtLeast(d.revision, c.revision + 2)
      const listed = yield* list({ limit: 10 })
      assert.deepStrictEqual(
        listed.items.map((route) => [route.id, route.revision]),
        [[a.id, a2.revision], [b.id, b.revision], [d.id, d.revision]].sort(([x], [y]) => x! < y! ? -1 : 1)
      )
    }))

  test("a refused change takes no revision from the route", () =>
    Effect.gen(function*() {
      const holder = yield* create({ method: "GET", path: "/taken", handler: "h" })
      const route = yield* create({ method: "GET", path: "/free", handler: "h" })
      yield* Effect.flip(update(route.id, { path: "/taken" }))
      yield* Effect.flip(update(route.id, { handler: "x" }, { ifMatch: [] }))
      yield* Effect.flip(remove(route.id, { ifMatch: [] }))
      yield* Effect.flip(create({ method: "GET", path: "/taken", handler: "h" }))
      assert.strictEqual((yield* findById(route.id)).revision, route.revision)
      assert.strictEqual((yield* findById(holder.id)).revision, holder.revision)
    }))
}

const concurrency = (test: Test) => {
  test("50 concurrent changes onto one method and shape, updates and creates: exactly one wins", () =>
    Effect.gen(function*() {
      const routes = yield* createAll(range(25).map((i) => ({ method: "GET", path: `/from/${i}`, handler: "h" })))
      const changes = [
        ...routes.map((route, i) => update(route.id, { method: "PUT", path: `/target/:p${i}` })),
        ...range(25).map((i) => create({ method: "PUT", path: `/target/:q${i}`, handler: "h" }))
      ]
      const results = yield* Effect.all(changes.map(Effect.either), { concurrency: "unbounded" })
      const wins = results.filter(Either.isRight).map((result) => result.right)
      assert.strictEqual(wins.length, 1)
      const winner = wins[0]!
      for (const result of results) if (Either.isLeft(result)) assertConflict(result.left, winner.id)
      assert.strictEqual((yield* findById(winner.id)).path, winner.path)
      const onTarget = yield* list({ limit: 100, method: "PUT" })
      assert.deepStrictEqual(onTarget.items.map((route) => route.id), [winner.id])
    }))

  test("20 concurrent updates with the same If-Match revision: exactly one wins, the others fail the precondition", () =>
    Effect.gen(function*() {
      const route = yield* create({ method: "GET", path: "/cas", handler: "h" })
      const results = yield* Effect.all(
        range(20).map((i) => Effect.either(update(route.id, { handler: `h${i}` }, { ifMatch: [route.revision] }))),
        { concurrency: "unbounded" }
      )
      const wins = results.filter(Either.isRight).map((result) => result.right)
      assert.strictEqual(wins.length, 1)
      for (const result of results) {
        if (Either.isLeft(result)) {
          assert.deepStrictEqual(
            result.left,
            new RouteRepository.PreconditionFailed({ id: route.id, revision: wins[0]!.revision })
          )
        }
      }
      assert.strictEqual(JSON.stringify(yield* findById(route.id)), JSON.stringify(wins[0]))
    }))

  test("20 concurrent removes with the same If-Match revision: exactly one wins, the others find nothing", () =>
    Effect.gen(function*() {
      const route = yield* create({ method: "GET", path: "/cas-rm", handler: "h" })
      const results = yield* Effect.all(
        range(20).map(() => Effect.either(remove(route.id, { ifMatch: [route.revision] }))),
        { concurrency: "unbounded" }
      )
      assert.strictEqual(results.filter(Either.isRight).length, 1)
      for (const result of results) {
        if (Either.isLeft(result)) {
          assert.deepStrictEqual(result.left, new RouteRepository.RouteNotFound({ id: route.id }))
        }
      }
    }))

  test("concurrent updates and removes with the same If-Match revision: exactly one wins", () =>
    Effect.gen(function*() {
      const route = yield* create({ method: "GET", path: "/cas-mixed", handler: "h" })
      const precondition = { ifMatch: [route.revision] }
      const results = yield* Effect.all(
        range(20).map((i) =>
          Effect.either(
            i % 2 === 0
              ? Effect.asVoid(update(route.id, { handler: `h${i}` }, precondition))
              : remove(route.id, precondition)
          )
        ),
        { concurrency: "unbounded" }
      )
      assert.strictEqual(results.filter(Either.isRight).length, 1)
      const found = yield* Effect.either(findById(route.id))
      // The winner decides what the others see: a removed route is not found, an updated one has moved on.
      const loss = Either.isLeft(found) ? "RouteNotFound" : "PreconditionFailed"
      for (const result of results) if (Either.isLeft(result)) assert.strictEqual(result.left._tag, loss)
    }))
}

/** The `i`-th of many distinct methods: letters only, as the method rule wants (`"M-A"`, `"M-B"`, … `"M-AB"`, …). */
export const methodName = (i: number, prefix = "M-"): string => {
  let letters = ""
  for (let n = i + 1; n > 0; n = Math.floor((n - 1) / 26)) letters = String.fromCharCode(65 + (n - 1) % 26) + letters
  return prefix + letters
}

const countRoutes = Effect.map(list({ limit: 1000 }), (page) => page.items.length)

// Fills the store with routes of `count` distinct methods, one route each at /bound.
const storeMethods = (count: number) =>
  createAll(range(count).map((i) => ({ method: methodName(i), path: "/bound", handler: "h" })))

/** An error's tag and its fields (a store's error may carry more, such as the span it failed in). */
const fieldsOf = (error: unknown) => ({
  _tag: (error as { _tag?: unknown })._tag,
  ...Object.fromEntries(Object.entries(error as object))
})

const assertError = (actual: unknown, expected: unknown) => assert.deepStrictEqual(fieldsOf(actual), fieldsOf(expected))

const assertTooManyMethods = (error: unknown, method: string) =>
  assertError(error, new RouteRepository.TooManyMethods({ method, limit: RouteRepository.MAX_METHODS }))

const methodBound = (test: Test) => {
  const MAX = RouteRepository.MAX_METHODS

  test("at most MAX_METHODS distinct methods: a create adding one more fails with TooManyMethods, writing nothing", () =>
    Effect.gen(function*() {
      assert.strictEqual(MAX, 128)
      yield* storeMethods(MAX)
      const error = yield* Effect.flip(create({ method: "ONE-MORE", path: "/other", handler: "h" }))
      assertTooManyMethods(error, "ONE-MORE")
      assert.strictEqual(yield* countRoutes, MAX)
      // A stored method still takes new routes; a conflict is still a conflict.
      yield* create({ method: methodName(0), path: "/other", handler: "h" })
      assert.strictEqual(
        (yield* Effect.flip(create({ method: methodName(1), path: "/bound", handler: "x" })))._tag,
        "RouteConflict"
      )
      assert.strictEqual(yield* countRoutes, MAX + 1)
    }))

  test("a method's place is free once its last route is removed", () =>
    Effect.gen(function*() {
      const routes = yield* storeMethods(MAX)
      const second = yield* create({ method: methodName(0), path: "/second", handler: "h" })
      yield* remove(routes[0]!.id)
      // methodName(0) is still stored (by `second`): no place is free yet.
      assertTooManyMethods(yield* Effect.flip(create({ method: "NEW", path: "/new", handler: "h" })), "NEW")
      yield* remove(second.id)
      const created = yield* create({ method: "NEW", path: "/new", handler: "h" })
      assert.strictEqual(created.method, "NEW")
      assertTooManyMethods(yield* Effect.flip(create({ method: "NEWER", path: "/new", handler: "h" })), "NEWER")
    }))

  test("an update to a method not stored is refused past the bound, unless the route's own method leaves with it", () =>
    Effect.gen(function*() {
      const routes = yield* storeMethods(MAX)
      const shared = yield* create({ method: methodName(1), path: "/shared", handler: "h" })
      // methodName(1) stays stored by routes[1]: moving `shared` away would add a method.
      assertTooManyMethods(yield* Effect.flip(update(shared.id, { method: "MOVED" })), "MOVED")
      assert.strictEqual(JSON.stringify(yield* findById(shared.id)), JSON.stringify(shared))
      // routes[2] is the only route of its method: moving it trades one method for another.
      const moved = yield* update(routes[2]!.id, { method: "MOVED", handler: "moved" })
      assert.strictEqual(moved.method, "MOVED")
      assertTooManyMethods(yield* Effect.flip(update(shared.id, { method: methodName(2) })), methodName(2))
      // Changing other fields of a route is never refused.
      assert.strictEqual((yield* update(shared.id, { path: "/elsewhere" as Route.RoutePath })).path, "/elsewhere")
    }))

  test("concurrent creates of new methods with one place left: exactly one wins", () =>
    Effect.gen(function*() {
      yield* storeMethods(MAX - 1)
      const results = yield* Effect.all(
        range(20).map((i) =>
          Effect.either(create({ method: `RACE-${methodName(i, "")}`, path: "/race", handler: "h" }))
        ),
        { concurrency: "unbounded" }
      )
      assert.strictEqual(results.filter(Either.isRight).length, 1)
      for (const result of results) if (Either.isLeft(result)) assert.strictEqual(result.left._tag, "TooManyMethods")
      assert.strictEqual(yield* countRoutes, MAX)
    }))

  test("concurrent creates of stored methods go through beside a refused new one", () =>
    Effect.gen(function*() {
      yield* storeMethods(MAX)
      const results = yield* Effect.all(
        [
          ...range(10).map((i) => Effect.either(create({ method: methodName(i), path: `/more/${i}`, handler: "h" }))),
          Effect.either(create({ method: "ONE-MORE", path: "/more/x", handler: "h" }))
        ],
        { concurrency: "unbounded" }
      )
      assert.strictEqual(results.filter(Either.isRight).length, 10)
      assert.strictEqual(results.filter(Either.isLeft).map((r) => r.left._tag).join(), "TooManyMethods")
    }))
}

// ---------------------------------------------------------------------------------------------------------------
// Idempotency keys (`createIdempotent`)
// ---------------------------------------------------------------------------------------------------------------

const LIFETIME = 60_000

const keyed = (
  body: Record<string, unknown>,
  key: string,
  options: Partial<RouteRepository.Idempotency> = {}
) =>
  Effect.gen(function*() {
    const idempotent = yield* Effect.serviceOption(RouteRepository.Idempotent)
    assert.isTrue(Option.isSome(idempotent), "the store remembers idempotency keys")
    return yield* Option.getOrThrow(idempotent).createIdempotent(yield* input(body), {
      key,
      principal: "admin",
      expiresAfter: Duration.millis(LIFETIME),
      maxKeys: 100,
      maxBytes: 1024 * 1024,
      ...options
    })
  })

const route = { method: "GET", path: "/users/:id", middleware: ["auth"], handler: "show" }

const idempotencyKeys = (test: Test) => {
  test("gives the first answer again for an equal input: the route as created, after it changed and went", () =>
    Effect.gen(function*() {
      const first = yield* keyed(route, "k")
      assert.isFalse(first.replayed)
      const created = Either.getOrThrow(first.outcome)
      yield* update(created.id, { handler: "changed" })
      // The same input written another way (middleware order is part of it; field order and [] vs omitted are not).
      const again = yield* keyed({ handler: "show", path: "/users/:id", method: "GET", middleware: ["auth"] }, "k")
      assert.isTrue(again.replayed)
      assert.strictEqual(JSON.stringify(Either.getOrThrow(again.outcome)), JSON.stringify(created))
      yield* remove(created.id)
      const gone = yield* keyed(route, "k")
      assert.strictEqual(JSON.stringify(Either.getOrThrow(gone.outcome)), JSON.stringify(created))
      assert.strictEqual(Either.getOrThrow(gone.outcome).revision, created.revision)
      assert.strictEqual(yield* countRoutes, 0)
    }))

  test("gives a conflict again, naming the route that was in the way, after it went", () =>
    Effect.gen(function*() {
      const holder = yield* create({ ...route, path: "/users/:userId" })
      const first = yield* keyed(route, "k")
      const conflict = new RouteRepository.RouteConflict({
        method: "GET",
        path: "/users/:id",
        conflictingRouteId: holder.id
      })
      assertError(Either.getOrThrow(Either.flip(first.outcome)), conflict)
      yield* remove(holder.id)
      const again = yield* keyed(route, "k")
      assert.isTrue(again.replayed)
      assertError(Either.getOrThrow(Either.flip(again.outcome)), conflict)
      assert.strictEqual(yield* countRoutes, 0)
    }))

  test("a key used with another input fails with IdempotencyKeyReused; another principal's equal key is its own", () =>
    Effect.gen(function*() {
      yield* keyed(route, "k")
      const reused = yield* Effect.flip(keyed({ ...route, middleware: ["auth", "log"] }, "k"))
      assertError(reused, new RouteRepository.IdempotencyKeyReused({ key: "k" }))
      const elsewhere = yield* keyed({ ...route, path: "/teams/:id" }, "k", { principal: "writer" })
      assert.isFalse(elsewhere.replayed)
      assert.isTrue(Either.isRight(elsewhere.outcome))
      assert.strictEqual(yield* countRoutes, 2)
    }))

  test("an expired key is new again", () =>
    Effect.gen(function*() {
      const first = yield* keyed(route, "k")
      yield* TestClock.adjust(LIFETIME - 1)
      assert.strictEqual(
        (yield* Effect.flip(keyed({ ...route, path: "/teams/:id" }, "k")))._tag,
        "IdempotencyKeyReused"
      )
      yield* TestClock.adjust(1)
      const renewed = yield* keyed({ ...route, path: "/teams/:id" }, "k")
      assert.isFalse(renewed.replayed)
      assert.notStrictEqual(Either.getOrThrow(renewed.outcome).id, Either.getOrThrow(first.outcome).id)
    }))

  test("a principal holds at most maxKeys live keys: the next new key fails, writing nothing, until the oldest expires", () =>
    Effect.gen(function*() {
      const bound = { maxKeys: 3 }
      for (let i = 0; i < 3; i++) {
        yield* keyed({ ...route, path: `/k/${i}` }, `k${i}`, bound)
        yield* TestClock.adjust(1000)
      }
      const refused = yield* Effect.flip(keyed({ ...route, path: "/k/3" }, "k3", bound))
      assertError(
        refused,
        new RouteRepository.TooManyIdempotencyKeys({
          key: "k3",
          keys: 3,
          bytes: 3 * RouteRepository.keySize("k0"),
          maxKeys: 3,
          maxBytes: 1024 * 1024,
          retryAfterMillis: LIFETIME - 3000
        })
      )
      assert.strictEqual(yield* countRoutes, 3)
      // Keys it holds still answer; another principal has keys of its own.
      assert.isTrue((yield* keyed({ ...route, path: "/k/0" }, "k0", bound)).replayed)
      assert.isFalse((yield* keyed({ ...route, path: "/k/w" }, "k3", { ...bound, principal: "writer" })).replayed)
      // Nothing was remembered of the refused key: once the oldest key expires, it creates.
      yield* TestClock.adjust(LIFETIME - 3000)
      const later = yield* keyed({ ...route, path: "/k/3" }, "k3", bound)
      assert.isFalse(later.replayed)
      assert.isTrue(Either.isRight(later.outcome))
      // The expired key no longer counts, but the three live ones do.
      assert.strictEqual(
        (yield* Effect.flip(keyed({ ...route, path: "/k/4" }, "k4", bound)))._tag,
        "TooManyIdempotencyKeys"
      )
    }))

  test("a principal's keys count at most maxBytes, each its length plus the overhead (keySize)", () =>
    Effect.gen(function*() {
      const bound = { maxBytes: RouteRepository.keySize("a") + RouteRepository.keySize("bb") }
      yield* keyed({ ...route, path: "/b/1" }, "a", bound)
      const tooLong = yield* Effect.flip(keyed({ ...route, path: "/b/2" }, "bbb", bound))
      assert.strictEqual(tooLong._tag, "TooManyIdempotencyKeys")
      assert.strictEqual((tooLong as RouteRepository.TooManyIdempotencyKeys).bytes, RouteRepository.keySize("a"))
      assert.isFalse((yield* keyed({ ...route, path: "/b/2" }, "bb", bound)).replayed)
      assert.strictEqual(yield* countRoutes, 2)
    }))

  test("a create refused by the method bound remembers nothing: the key stays free", () =>
    Effect.gen(function*() {
      yield* storeMethods(RouteRepository.MAX_METHODS)
      const refused = yield* Effect.flip(keyed({ ...route, method: "ONE-MORE" }, "k"))
      assertTooManyMethods(refused, "ONE-MORE")
      yield* remove((yield* list({ limit: 1 })).items[0]!.id)
      const created = yield* keyed({ ...route, method: "ONE-MORE" }, "k")
      assert.isFalse(created.replayed)
      assert.strictEqual(Either.getOrThrow(created.outcome).method, "ONE-MORE")
    }))
}
