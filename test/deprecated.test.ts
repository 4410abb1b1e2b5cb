/**
 * The names before 0.4.0 (CHANGELOG.md), kept for one minor version: each old module is its new module's exports under
 * the old name, it stays a subpath of the package, and the entry point keeps its old namespaces. And the replay ring's
 * names before 0.5.0: `RouteTable.ChangeHistory`, `DEFAULT_HISTORY_CAPACITY` and the `historyCapacity` option of the
 * table's and a follower's layers, which still size the ring and may be given beside `replayCapacity` only alike.
 */
import { assert, describe, it } from "@effect/vitest"
import { Context, Effect, Either, Layer, Redacted } from "effect"
import { readFileSync } from "node:fs"
import * as Index from "route-registry"
import * as AdminHttpApp from "route-registry/AdminHttpApp"
import * as AdminListener from "route-registry/AdminListener"
import * as AdminWebHandler from "route-registry/AdminWebHandler"
import * as NodeListener from "route-registry/NodeListener"
import * as NodeRouter from "route-registry/NodeRouter"
import * as RouteFollower from "route-registry/RouteFollower"
import * as RouteRepository from "route-registry/RouteRepository"
import * as RouterListener from "route-registry/RouterListener"
import * as RouteTable from "route-registry/RouteTable"
import * as RoutingHttpApp from "route-registry/RoutingHttpApp"
import * as WebHandler from "route-registry/WebHandler"
import * as FollowSettings from "../src/internal/follow/settings.js"

const manifest = JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8"))

describe("the deprecated names", () => {
  it("are the new modules' exports, subpaths of the package and namespaces of the entry point", () => {
    const pairs: ReadonlyArray<readonly [string, object, object]> = [
      ["NodeListener", NodeListener, AdminListener],
      ["WebHandler", WebHandler, AdminWebHandler],
      ["RoutingHttpApp", RoutingHttpApp, AdminHttpApp],
      ["NodeRouter", NodeRouter, RouterListener]
    ]
    for (const [name, old, renamed] of pairs) {
      for (const [key, value] of Object.entries(old)) assert.strictEqual(value, (renamed as any)[key], `${name}.${key}`)
      assert.deepStrictEqual(manifest.exports[`./${name}`], {
        types: `./dist/${name}.d.ts`,
        default: `./dist/${name}.js`
      })
    }
    assert.deepStrictEqual(Object.keys(NodeListener).sort(), ["fromLayer", "make"])
    assert.deepStrictEqual(Object.keys(NodeRouter).sort(), ["fromLayer", "make", "matchOf"])
    assert.strictEqual(Index.WebHandler.make, Index.AdminWebHandler.make)
    assert.strictEqual(Index.RoutingHttpApp.router, Index.AdminHttpApp.router)
  })
})

// The ring's capacity in a table layer built with `options`, or the option its failure names.
const tableCapacity = (options: RouteTable.LayerOptions) =>
  Layer.build(RouteTable.layerWith(options).pipe(Layer.provide(RouteRepository.layerMemory))).pipe(
    Effect.map((context) => Either.right(Context.get(context, RouteTable.ReplayRing).capacity)),
    Effect.catchTag("InvalidOption", (error) => Effect.succeed(Either.left(error))),
    Effect.scoped
  )

const follower = { url: "http://127.0.0.1:1", token: Redacted.make("t") }

describe("the replay ring's names before 0.5.0", () => {
  it("are the new names' values", () => {
    assert.strictEqual(RouteTable.ChangeHistory, RouteTable.ReplayRing)
    assert.strictEqual(RouteTable.DEFAULT_HISTORY_CAPACITY, RouteTable.DEFAULT_REPLAY_CAPACITY)
    assert.strictEqual(RouteTable.DEFAULT_REPLAY_CAPACITY, 10_000)
  })

  it.effect("historyCapacity sizes the table's ring, alone or beside an equal replayCapacity", () =>
    Effect.gen(function*() {
      assert.deepStrictEqual(yield* tableCapacity({ historyCapacity: 3 }), Either.right(3))
      assert.deepStrictEqual(yield* tableCapacity({ replayCapacity: 4, historyCapacity: 4 }), Either.right(4))
      assert.deepStrictEqual(yield* tableCapacity({ replayCapacity: 5 }), Either.right(5))
      assert.deepStrictEqual(yield* tableCapacity({}), Either.right(RouteTable.DEFAULT_REPLAY_CAPACITY))
    }))

  it.effect("a bad historyCapacity is named as such; both names with different values name the fix", () =>
    Effect.gen(function*() {
      const bad = yield* tableCapacity({ historyCapacity: 0 })
      assert.strictEqual(Either.isLeft(bad) && bad.left.option, "historyCapacity")
      const both = yield* tableCapacity({ replayCapacity: 5, historyCapacity: 6 })
      assert.isTrue(Either.isLeft(both))
      if (Either.isLeft(both)) {
        assert.strictEqual(both.left.option, "historyCapacity")
        assert.include(both.left.message, "give replayCapacity alone")
        assert.include(both.left.message, "replayCapacity 5, historyCapacity 6")
      }
      const fromFiles = yield* Effect.flip(
        Layer.build(RouteTable.layerFrom(RouteRepository.layerMemory, { replayCapacity: 5, historyCapacity: 6 })).pipe(
          Effect.scoped
        )
      )
      assert.strictEqual((fromFiles as { option?: string }).option, "historyCapacity")
    }))

  it.effect("a follower takes either name, and refuses both with different values before connecting", () =>
    Effect.gen(function*() {
      const capacity = (options: Partial<RouteFollower.Options>) =>
        Either.map(FollowSettings.resolve({ ...follower, ...options }), (settings) => settings.replayCapacity)
      assert.deepStrictEqual(capacity({ historyCapacity: 3 }), Either.right(3))
      assert.deepStrictEqual(capacity({ replayCapacity: 3, historyCapacity: 3 }), Either.right(3))
      assert.deepStrictEqual(capacity({}), Either.right(RouteTable.DEFAULT_REPLAY_CAPACITY))
      const error = yield* Effect.flip(
        Layer.build(RouteFollower.layer({ ...follower, replayCapacity: 2, historyCapacity: 1 })).pipe(Effect.scoped)
      )
      assert.strictEqual(error._tag, "InvalidOption")
      assert.strictEqual((error as { option?: string }).option, "historyCapacity")
    }))
})
