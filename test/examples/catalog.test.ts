/**
 * The demo catalog of `npm start` (examples/catalog.ts): its middleware set response headers, and a client cannot
 * make them grow. Served by the Node router beside the routing API, as `npm start` serves them.
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as Http from "node:http"
import * as AdminListener from "route-registry/AdminListener"
import * as Catalog from "route-registry/Catalog"
import * as RouteRepository from "route-registry/RouteRepository"
import * as RouterListener from "route-registry/RouterListener"
import * as Demo from "../../examples/catalog.js"
import { closeServer, fetchFrom, listen, type Received, type Sent } from "../utils/adapters.js"
import { createRoute, hostRuntime } from "../utils/routerHost.js"

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/

describe("the demo catalog's headers", () => {
  const { runtime } = hostRuntime(RouteRepository.layerMemory)
  let server: Http.Server
  let send: (request: Sent) => Promise<Received>
  beforeAll(async () => {
    const api = await runtime.runPromise(Effect.orDie(AdminListener.make()))
    const router = await runtime.runPromise(RouterListener.make(Demo.functions))
    server = Http.createServer((req, res) => api(req, res, () => router(req, res)))
    send = fetchFrom(await listen(server))
    const created = await send(
      createRoute({ method: "GET", path: "/demo", middleware: ["requestId", "timing"], handler: "echo" })
    )
    assert.strictEqual(created.status, 201, created.text)
  })
  afterAll(async () => {
    await closeServer(server)
    await runtime.dispose()
  })

  const requestId = async (sent?: string) =>
    (await send({ method: "GET", path: "/demo", headers: sent === undefined ? {} : { "x-request-id": sent } }))
      .headers.get("x-request-id")

  it("X-Request-Id: the client's own when it is 1-128 sane characters, else a fresh UUID, never longer", async () => {
    assert.strictEqual(await requestId("req-42.a:b_c"), "req-42.a:b_c")
    assert.strictEqual(await requestId("r".repeat(128)), "r".repeat(128))
    for (const sent of [undefined, "r".repeat(129), "x".repeat(12_000), "has space", "quote\"d"]) {
      assert.match((await requestId(sent)) ?? "", UUID, String(sent?.slice(0, 20)))
    }
  })

  it("echo and echo2 answer alike, each naming itself as handler; a split's choice shows (issue 38)", async () => {
    const split = { by: "header:x-user", targets: [{ handler: "echo2", weight: 5000 }], override: "x-handler" }
    const created = await send(createRoute({ method: "GET", path: "/canary/:id", handler: "echo", split }))
    assert.strictEqual(created.status, 201, created.text)
    const answers = await Promise.all(
      ["echo", "echo2"].map(async (name) =>
        (await send({ method: "GET", path: "/canary/7", headers: { "x-user": "u", "x-handler": name } })).json
      )
    )
    assert.deepStrictEqual(answers.map((answer) => answer.handler), ["echo", "echo2"])
    const { handler: _1, split: split1, ...first } = answers[0]
    const { handler: _2, split: split2, ...second } = answers[1]
    assert.deepStrictEqual(first, second)
    assert.deepStrictEqual(first.params, { id: "7" })
    assert.deepStrictEqual([split1.handler, split2.handler], ["echo", "echo2"])
    const plain = (await send({ method: "GET", path: "/demo" })).json
    assert.deepStrictEqual(Object.keys(plain), ["route", "params", "middleware", "handler"])
  })

  it("Server-Timing: one fixed-form entry, whatever the request", async () => {
    const answer = await send({ method: "GET", path: "/demo", headers: { "server-timing": "x".repeat(8000) } })
    assert.match(answer.headers.get("server-timing") ?? "", /^app;dur=\d+\.\d{3}$/)
  })

  it("setHeader sets the header its config names; with catalog checking a bad config is refused at its path", async () => {
    const created = await send(createRoute({
      method: "GET",
      path: "/team",
      middleware: [{ name: "setHeader", config: { name: "X-Team", value: "payments" } }] as unknown as Array<string>,
      handler: "echo"
    }))
    assert.strictEqual(created.status, 201, created.text)
    const answered = await send({ method: "GET", path: "/team" })
    assert.strictEqual(answered.headers.get("x-team"), "payments")
    assert.deepStrictEqual(answered.json.middleware, ["setHeader"])
    const issues = Catalog.check(Demo.names, {
      middleware: [{ name: "setHeader", config: { name: "bad name", value: "x".repeat(257) } }]
    })
    assert.deepStrictEqual(issues.map((issue) => issue.path), [
      "middleware[0].config.name",
      "middleware[0].config.value"
    ])
  })
})
