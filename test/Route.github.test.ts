/**
 * The GitHub REST API's 1,223 routes as GitHub writes them, through the validator the HTTP API uses: 1,211 are
 * accepted as written; the 12 written `/enterprises/:enterprise/teams/:enterprise-team/…` are refused because
 * `:enterprise-team` is the parameter `enterprise` followed by `-team`, so `enterprise` is used twice, and are
 * accepted once renamed.
 */
import { assert, describe, it } from "@effect/vitest"
import { Either } from "effect"
import * as Route from "route-registry/Route"
import { githubRoutes } from "./fixtures/githubRoutes.js"

const validate = (method: string, path: string) => Route.validateCreate({ method, path, handler: "h" })

const TEAM = "/enterprises/:enterprise/teams/:enterprise-team"

describe("the GitHub REST routes", () => {
  it("1,211 of the 1,223 are accepted as written, none two of one method and shape", () => {
    assert.strictEqual(githubRoutes.length, 1223)
    const accepted = githubRoutes.filter(([method, path]) => Either.isRight(validate(method, path)))
    assert.strictEqual(accepted.length, 1211)
    const keys = new Set(accepted.map(([method, path]) => `${method} ${Route.shapeOf(path as Route.RoutePath)}`))
    assert.strictEqual(keys.size, accepted.length)
  })

  it("the 12 refused are the enterprise team routes, each with one problem naming the repeated `enterprise`", () => {
    const refused = githubRoutes.filter(([method, path]) => Either.isLeft(validate(method, path)))
    assert.strictEqual(refused.length, 12)
    for (const [method, path] of refused) {
      assert.isTrue(path.startsWith(TEAM), path)
      const issues = Either.getOrThrow(Either.flip(validate(method, path)))
      assert.deepStrictEqual(issues, [{
        path: "path",
        message: "parameter name \"enterprise\" at index 31 is already used at index 13: rename one of them"
      }])
    }
  })

  it("renamed, the 12 are accepted, and all 1,223 live side by side", () => {
    const renamed = githubRoutes.map(([method, path]) =>
      [method, path.replace(":enterprise-team", ":enterprise_team")] as const
    )
    for (const [method, path] of renamed) assert.isTrue(Either.isRight(validate(method, path)), `${method} ${path}`)
    const keys = new Set(renamed.map(([method, path]) => `${method} ${Route.shapeOf(path as Route.RoutePath)}`))
    assert.strictEqual(keys.size, 1223)
  })
})
