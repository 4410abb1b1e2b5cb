/**
 * The names before 0.4.0 (CHANGELOG.md), kept for one minor version: each old module is its new module's exports under
 * the old name, it stays a subpath of the package, and the entry point keeps its old namespaces.
 */
import { assert, describe, it } from "@effect/vitest"
import { readFileSync } from "node:fs"
import * as Index from "route-registry"
import * as AdminHttpApp from "route-registry/AdminHttpApp"
import * as AdminListener from "route-registry/AdminListener"
import * as AdminWebHandler from "route-registry/AdminWebHandler"
import * as NodeListener from "route-registry/NodeListener"
import * as NodeRouter from "route-registry/NodeRouter"
import * as RouterListener from "route-registry/RouterListener"
import * as RoutingHttpApp from "route-registry/RoutingHttpApp"
import * as WebHandler from "route-registry/WebHandler"

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
