import { assert, describe, it, onTestFinished } from "@effect/vitest"
import { Layer } from "effect"
import * as Catalog from "route-registry/Catalog"
import { adapters } from "./utils/adapters.js"
import { ADMIN, assertProblem, get, post, tokens } from "./utils/httpContract.js"
import { stores } from "./utils/stores.js"

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
    assert.include(issues[1]!.message, "this process registers \"auth\", \"requestId\", \"timing\"")
    assert.include(issues[2]!.message, "did you mean \"showUser\"?")
  })

  it("checks every split target as a handler, at its place (docs/router.md: disabled routes and splits)", () => {
    const split = { targets: [{ handler: "echo" }, { handler: "listUser" }, { handler: "zzz" }] }
    const issues = Catalog.check(names, { handler: "showUser", split })
    assert.deepStrictEqual(issues.map((issue) => issue.path), ["split.targets[1].handler", "split.targets[2].handler"])
    assert.include(issues[0]!.message, "did you mean \"listUsers\"?")
    assert.deepStrictEqual(Catalog.check(names, { split: null }), [])
  })

  it("suggests nothing far from every registered name, and says when none is registered", () => {
    assert.notInclude(Catalog.check(names, { handler: "deleteEverything" })[0]!.message, "did you mean")
    const empty = Catalog.check({ handlers: [], middleware: [] }, { handler: "h" })
    assert.include(empty[0]!.message, "this process registers no handler")
  })

  it("lists at most ten registered names, sorted, and counts the rest", () => {
    const many = Array.from({ length: 12 }, (_, i) => `handler${String(i).padStart(2, "0")}`)
    const message = Catalog.check({ handlers: many, middleware: [] }, { handler: "somethingElse" })[0]!.message
    assert.include(message, `"handler00", "handler01"`)
    assert.include(message, `"handler09" and 2 more`)
    assert.notInclude(message, "handler10")
  })

  it("suggests the name behind a swapped pair of letters", () => {
    assert.include(Catalog.check(names, { handler: "ecoh" })[0]!.message, "did you mean \"echo\"?")
  })

  it("compares names exactly", () => {
    assert.strictEqual(Catalog.check(names, { handler: "Echo" }).length, 1)
    assert.include(Catalog.check(names, { handler: "Echo" })[0]!.message, "did you mean \"echo\"?")
  })
})

describe("catalog checking in the routing API", () => {
  for (const adapter of adapters) {
    describe(adapter.name, () => {
      for (const [storeName, store] of stores) {
        it(`${storeName}: creates and updates naming unregistered functions are refused, each name once`, async () => {
          const server = await adapter.start(Layer.mergeAll(store, tokens, Catalog.layer(names)))
          onTestFinished(() => server.close())
          const refused = await server.send(
            post({ method: "GET", path: "/a", middleware: ["auth", "timming"], handler: "shwoUser" })
          )
          assertProblem(refused, "invalid_route", ["errors"])
          assert.deepStrictEqual(refused.json.errors.map((e: { path: string }) => e.path), [
            "middleware[1]",
            "handler"
          ])
          assert.include(refused.json.errors[0].message, "did you mean \"timing\"?")
          const created = await server.send(
            post({ method: "GET", path: "/a", middleware: ["auth"], handler: "showUser" })
          )
          assert.strictEqual(created.status, 201, created.text)
          const patched = await server.send({
            method: "PATCH",
            path: `/v1/routing/${created.json.id}`,
            headers: { authorization: `Bearer ${ADMIN}`, "content-type": "application/json" },
            body: JSON.stringify({ handler: "lstUsers" })
          })
          assertProblem(patched, "invalid_route", ["errors"])
          assert.include(patched.json.errors[0].message, "did you mean \"listUsers\"?")
          const found = await server.send(get(created.json.id))
          assert.strictEqual(found.json.handler, "showUser", "a refused update changes nothing")
        })
      }
    })
  }
})
