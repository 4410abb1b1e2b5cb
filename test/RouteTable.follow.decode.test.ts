/**
 * A follower's decoding of `upsert` events: as strict as the `Route` schema (a route the table cannot hold is refused),
 * and the event's text passed on byte for byte (a relay) exactly when it is the route's own JSON.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Either, Redacted, Schema } from "effect"
import * as Route from "route-registry/Route"
import * as Decode from "../src/internal/follow/decode.js"
import * as Follower from "../src/internal/follow/follower.js"
import * as FollowSettings from "../src/internal/follow/settings.js"
import * as FollowState from "../src/internal/follow/state.js"
import * as ReplayRing from "../src/internal/table/replayRing.js"

// A registry's store identity, as its cursors carry it.
const STORE = "0123456789abcdef"

const ID = Route.makeRouteId(1_764_000_000_000) as Route.RouteId

const routeOf = (fields: Partial<Route.Route> = {}): Route.Route =>
  new Route.Route({
    id: ID,
    method: "GET" as Route.HttpMethod,
    path: "/users/:id/files/*rest" as Route.RoutePath,
    middleware: ["auth", "$audit.v2:log#1/x-y"] as Array<Route.MiddlewareName>,
    handler: "users.files" as Route.HandlerName,
    createdAt: new Date("2026-11-24T19:00:00.123Z"),
    ...fields
  }, true)

const decode = (data: string) => Decode.decodeUpsert(JSON.parse(data), data)
const bySchema = Schema.decodeUnknownEither(Route.Route)

const fieldsOf = (decoded: Decode.Decoded | undefined) =>
  decoded === undefined ? undefined : Route.toJson(new Route.Route({ ...decoded }, true))

describe("decoding an upsert", () => {
  it("takes a route's JSON as the route, and recognises it as the route's own text", () => {
    const routes = [
      routeOf(),
      routeOf({ middleware: [] }),
      routeOf({ method: "M-SEARCH" as Route.HttpMethod, path: "/" as Route.RoutePath, middleware: [] }),
      routeOf({ path: "/a/:file.:ext/~!$&'+,;=@" as Route.RoutePath, createdAt: new Date(0) })
    ]
    for (const route of routes) {
      const data = Route.toJson(route)
      const decoded = decode(data)
      assert.strictEqual(decoded?.text, data)
      assert.strictEqual(fieldsOf(decoded), data)
      assert.strictEqual(decoded?.parsed.path, route.path)
    }
  })

  it("keeps enabled: false and a split (a follower that dropped them would serve a disabled route)", () => {
    const split = {
      by: "header:x-user",
      group: "g",
      targets: [{ handler: "v2" as Route.HandlerName, weight: 250 }],
      override: "x-h"
    }
    const data = Route.toJson(routeOf({ enabled: false, split }))
    const decoded = decode(data)
    assert.strictEqual(decoded?.enabled, false)
    assert.deepStrictEqual(decoded?.split, split)
    assert.strictEqual(fieldsOf(decoded), data)
    const json = JSON.parse(data)
    assert.isUndefined(decode(JSON.stringify({ ...json, enabled: "false" })))
    assert.isUndefined(decode(JSON.stringify({ ...json, split: { ...split, targets: [] } })))
    assert.isUndefined(
      decode(JSON.stringify({ ...json, split: { ...split, targets: [{ handler: "users.files", weight: 1 }] } }))
    )
    assert.strictEqual(
      fieldsOf(decode(JSON.stringify({ ...json, enabled: true }))),
      Route.toJson(routeOf({ split }))
    )
  })

  it("keeps a description, tags and middleware configs, and refuses invalid ones as any invalid route", () => {
    const middleware = ["auth", { name: "limit", config: { "10": 1, a: { b: [1], c: 2 } } }] as unknown as Array<
      Route.MiddlewareName
    >
    const data = Route.toJson(routeOf({ middleware, description: "Files — «all»", tags: ["team:files", "v2"] }))
    const decoded = decode(data)
    assert.strictEqual(decoded?.description, "Files — «all»")
    assert.deepStrictEqual(decoded?.tags, ["team:files", "v2"])
    assert.strictEqual(fieldsOf(decoded), data)
    const json = JSON.parse(data)
    assert.isUndefined(decode(JSON.stringify({ ...json, tags: ["Bad"] })))
    assert.isUndefined(decode(JSON.stringify({ ...json, description: "a\u0001b" })))
    assert.isUndefined(decode(JSON.stringify({ ...json, middleware: [{ name: "x", config: [] }] })))
    assert.isUndefined(decode(JSON.stringify({ ...json, middleware: ["x", { name: "x", config: {} }] })))
    // Written with other key orders, the config is kept in its one form.
    const reordered = decode(
      JSON.stringify({ ...json, middleware: ["auth", { name: "limit", config: { a: { c: 2, b: [1] }, "10": 1 } }] })
    )
    assert.strictEqual(fieldsOf(reordered), data)
  })

  it("takes the same route written another way, but then not as its text", () => {
    const data = Route.toJson(routeOf())
    const variants = [
      data.replace("{", "{ "),
      data.replace(/,"/g, ", \""),
      data.replace("\"handler\"", "\"hand\\u006cer\""),
      data.replace("x-y", "x\\u002dy"),
      data.replace("/users", "\\/users"),
      `{"method":"GET",${data.slice(1).replace(",\"method\":\"GET\"", "")}`,
      data.replace("}", ",\"note\":\"\"}"),
      data.replace("\"handler\":\"users.files\"", "\"handler\":\"x\",\"handler\":\"users.files\"")
    ]
    for (const variant of variants) {
      assert.notStrictEqual(variant, data)
      const decoded = decode(variant)
      assert.isTrue(Either.isRight(bySchema(JSON.parse(variant))), variant)
      assert.strictEqual(fieldsOf(decoded), data, variant)
      assert.isUndefined(decoded?.text, variant)
    }
  })

  it("refuses what the Route schema refuses", () => {
    const json = JSON.parse(Route.toJson(routeOf()))
    const refused: Array<Record<string, unknown>> = [
      { ...json, id: json.id.toUpperCase() },
      { ...json, id: "01936f1e-5f1a-4cc3-9a2b-3f4e5d6c7b8a" },
      { ...json, id: 7 },
      { ...json, method: "get" },
      { ...json, method: "" },
      { ...json, path: "users" },
      { ...json, path: "/a/:id/:id" },
      { ...json, path: "/a b" },
      { ...json, middleware: ["auth", "auth"] },
      { ...json, middleware: ["1auth"] },
      { ...json, middleware: "auth" },
      { ...json, middleware: Array.from({ length: 33 }, (_, i) => `m${i}`) },
      { ...json, handler: "" },
      { ...json, handler: null },
      { ...json, createdAt: "not a date" },
      { ...json, createdAt: 1_764_000_000_000 },
      Object.fromEntries(Object.entries(json).filter(([key]) => key !== "handler"))
    ]
    for (const value of refused) {
      assert.isTrue(Either.isLeft(bySchema(value)), JSON.stringify(value))
      assert.isUndefined(Decode.decodeUpsert(value, JSON.stringify(value)), JSON.stringify(value))
    }
    for (const value of [null, [], "route", 1]) assert.isUndefined(Decode.decodeUpsert(value, JSON.stringify(value)))
  })

  it("takes createdAt only as toISOString prints it, never a date read as another", () => {
    const json = JSON.parse(Route.toJson(routeOf()))
    for (
      const createdAt of [
        "2026-02-30T00:00:00.000Z",
        "2026-11-24",
        "2026-11-24T19:00:00Z",
        "2026-11-24T19:00:00.123+01:00"
      ]
    ) {
      assert.isUndefined(Decode.decodeUpsert({ ...json, createdAt }, ""), createdAt)
    }
  })
})

const SETTINGS = Either.getOrThrow(FollowSettings.resolve({ url: "http://127.0.0.1:1", token: Redacted.make("t") }))

describe("a relay's replay ring", () => {
  it.effect("records the event's own text, byte for byte, and the route's JSON for an event written another way", () =>
    Effect.gen(function*() {
      const state = yield* FollowState.makeState(ReplayRing.make(), SETTINGS)
      const sink = Follower.sink(state)
      sink.event({ type: "ready", data: "", id: `${STORE}.0` })
      const texts: Array<string> = []
      state.ring.subscribe((change) => texts.push(change!.text))
      const canonical = Route.toJson(routeOf())
      assert.isUndefined(sink.event({ type: "upsert", data: canonical, id: `${STORE}.1` }))
      const spaced = Route.toJson(routeOf({ handler: "other" as Route.HandlerName })).replace(/,"/g, ", \"")
      assert.isUndefined(sink.event({ type: "upsert", data: spaced, id: `${STORE}.2` }))
      assert.strictEqual(texts[0], canonical)
      assert.strictEqual(texts[1], JSON.stringify(JSON.parse(spaced)))
      // What GET answers from the follower's store is the same text.
      assert.strictEqual(Route.toJson(Follower.memoryRead(state).unsafeFindById(ID)!), texts[1])
      assert.strictEqual(texts.length, 2)
    }))
})
