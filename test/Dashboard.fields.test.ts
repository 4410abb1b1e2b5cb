/**
 * The dashboard's route fields (docs/dashboard.md): what a create and an edit send, which fields a comparison shows, and
 * how the form reads names, conditions and weights. The page in a browser is Dashboard.browser.test.ts.
 */
import { assert, describe, it } from "@effect/vitest"
import type { RouteFields } from "../dashboard/src/api.js"
import { conditionsOf, namesOf } from "../dashboard/src/controls.js"
import {
  changedNames,
  createBody,
  middlewareText,
  percent,
  pick,
  shownFields,
  valueOf
} from "../dashboard/src/fields.js"

const plain: RouteFields = { method: "GET", path: "/users/:id", middleware: ["auth"], handler: "show" }

const everything: RouteFields = {
  ...plain,
  middleware: ["auth", { name: "rateLimit", config: { max: 10 } }],
  enabled: false,
  description: "the user's page",
  tags: ["team:web", "beta"],
  when: { host: "api.example.com", headers: [{ name: "x-version", value: "2" }], query: [{ name: "beta" }] },
  split: { by: "header:x-user", targets: [{ handler: "canary", weight: 1_000 }] }
}

describe("the dashboard's fields", () => {
  it("a create sends the fields at their defaults left out, so a route using none of them is the four fields", () => {
    const form = { ...plain, enabled: true, description: "", tags: [], when: {} }
    assert.deepStrictEqual(createBody(form), plain)
    assert.deepStrictEqual(createBody(everything), everything)
  })

  it("a field the API leaves out equals its default: opening and saving such a route changes nothing", () => {
    assert.deepStrictEqual(changedNames(plain, { ...plain, enabled: true, description: "", tags: [], when: {} }), [])
    assert.deepStrictEqual(changedNames(plain, everything), [
      "middleware",
      "enabled",
      "description",
      "tags",
      "when",
      "split"
    ])
    // A list's order counts, as the API keeps it.
    assert.deepStrictEqual(changedNames(everything, { ...everything, tags: ["beta", "team:web"] }), ["tags"])
  })

  it("an edit back to a default sends the default: a split removed is null, a description cleared is empty", () => {
    const back: RouteFields = { ...plain, enabled: true, description: "", tags: [], when: {} }
    assert.deepStrictEqual(pick(back, changedNames(everything, back)), {
      middleware: ["auth"],
      enabled: true,
      description: "",
      tags: [],
      when: {},
      split: null
    })
    assert.strictEqual(valueOf(plain, "split"), null)
  })

  it("a comparison shows the four fields, and the others only where a version departs from the default", () => {
    const labels = (...routes: ReadonlyArray<RouteFields | null>) => shownFields(...routes).map((f) => f.label)
    assert.deepStrictEqual(labels(plain, null), ["Method", "Path", "Middleware", "Handler"])
    assert.deepStrictEqual(labels(plain, { ...plain, split: everything.split! }), [
      "Method",
      "Path",
      "Middleware",
      "Handler",
      "Split"
    ])
    assert.strictEqual(labels(everything).length, 9)
    const text = Object.fromEntries(shownFields(everything).map((f) => [f.label, f.text(everything)]))
    assert.deepStrictEqual(text, {
      Method: "GET",
      Path: "/users/:id",
      Middleware: "auth, rateLimit {\"max\":10}",
      Handler: "show",
      Enabled: "disabled",
      Description: "the user's page",
      Tags: "team:web, beta",
      Conditions: "host api.example.com; header x-version: 2; query beta",
      Split: "by header:x-user: canary 10 %, the route's handler the rest"
    })
  })

  it("a weight in basis points reads as a percentage", () => {
    assert.deepStrictEqual([0, 1, 1_000, 1_250, 3_333, 10_000].map(percent), [
      "0 %",
      "0.01 %",
      "10 %",
      "12.5 %",
      "33.33 %",
      "100 %"
    ])
  })

  it("reads names separated by commas and conditions one a line, a name alone meaning presence", () => {
    assert.deepStrictEqual(namesOf(" auth, , rate.limit ,"), ["auth", "rate.limit"])
    assert.deepStrictEqual(conditionsOf("x-version: 2\n\n  x-beta  \nx-url: http://a", ":"), [
      { name: "x-version", value: "2" },
      { name: "x-beta" },
      { name: "x-url", value: "http://a" }
    ])
    assert.deepStrictEqual(conditionsOf("q=a=b\nflag\nempty=", "="), [
      { name: "q", value: "a=b" },
      { name: "flag" },
      { name: "empty", value: "" }
    ])
    assert.strictEqual(middlewareText({ name: "cache" }), "cache {}")
  })
})
