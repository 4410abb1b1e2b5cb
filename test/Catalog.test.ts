import { assert, describe, it } from "@effect/vitest"
import * as Catalog from "route-registry/Catalog"

const names: Catalog.Names = {
  handlers: ["showUser", "listUsers", "echo"],
  middleware: ["auth", "requestId", "timing"]
}

describe("Catalog.check", () => {
  it("accepts a route naming only registered functions", () => {
    assert.deepStrictEqual(Catalog.check(names, { handler: "showUser", middleware: ["auth", "timing"] }), [])
    assert.deepStrictEqual(Catalog.check(names, {}), [])
  })

  it("names every unknown name once, in field order, with the closest registered name", () => {
    const issues = Catalog.check(names, { handler: "shwoUser", middleware: ["auth", "requestID", "zzz"] })
    assert.deepStrictEqual(issues.map((issue) => issue.path), ["middleware[1]", "middleware[2]", "handler"])
    assert.include(issues[0]!.message, "did you mean \"requestId\"?")
    assert.notInclude(issues[1]!.message, "did you mean")
    assert.include(issues[1]!.message, "register it")
    assert.include(issues[2]!.message, "did you mean \"showUser\"?")
  })

  it("suggests nothing far from every registered name, and says when none is registered", () => {
    assert.notInclude(Catalog.check(names, { handler: "deleteEverything" })[0]!.message, "did you mean")
    const empty = Catalog.check({ handlers: [], middleware: [] }, { handler: "h" })
    assert.include(empty[0]!.message, "0 handler names")
  })

  it("compares names exactly", () => {
    assert.strictEqual(Catalog.check(names, { handler: "Echo" }).length, 1)
    assert.include(Catalog.check(names, { handler: "Echo" })[0]!.message, "did you mean \"echo\"?")
  })
})
