/**
 * The router's part of docs/router.md: middleware configuration, whatever its form: a middleware registered with a
 * config schema gets each route's config decoded by it (defaults applied); a config the schema refuses, or a config
 * for a middleware registered without one, answers the route `503 route_misconfigured` with no function run, logged
 * once per route version. Each form registers `setHeader` (configured with `HeaderConfig`) and `plain` in its own idiom.
 */
import { assert } from "@effect/vitest"
import { Schema } from "effect"
import * as Problem from "route-registry/Problem"

/** The config of `setHeader`: it sets the response header `name` to `value` repeated `repeat` times (1 by default). */
export const HeaderConfig = Schema.Struct({
  name: Schema.String,
  value: Schema.String,
  repeat: Schema.optionalWith(Schema.Int, { default: () => 1 })
})

export interface ConfigServer {
  readonly origin: string
  readonly create: (
    route: {
      readonly method: string
      readonly path: string
      readonly handler: string
      readonly [field: string]: unknown
    }
  ) => Promise<unknown>
  readonly logs: ReadonlyArray<{ readonly level: string; readonly message: string }>
}

type WithServer = (name: string, test: (server: ConfigServer) => Promise<void>) => void

export const configContract = (withServer: WithServer, handler: string) => {
  withServer("a configured middleware receives the route's config as its schema decodes it", async (server) => {
    await server.create({
      method: "GET",
      path: "/configured",
      handler,
      middleware: [{ name: "setHeader", config: { name: "x-one", value: "a" } }, "plain"]
    })
    await server.create({
      method: "GET",
      path: "/configured2",
      handler,
      middleware: [{ name: "setHeader", config: { value: "b", repeat: 3, name: "x-two" } }]
    })
    for (let i = 0; i < 2; i++) {
      const one = await fetch(server.origin + "/configured")
      assert.strictEqual(one.status, 200)
      assert.strictEqual(one.headers.get("x-one"), "a")
      await one.text()
      const two = await fetch(server.origin + "/configured2")
      assert.strictEqual(two.headers.get("x-two"), "bbb")
      assert.strictEqual(two.headers.get("x-one"), null)
      await two.text()
    }
  })

  withServer(
    "a config its schema refuses, or one for a middleware without a schema: 503 route_misconfigured, logged once per version",
    async (server) => {
      const refused = await server.create({
        method: "GET",
        path: "/refused",
        handler,
        middleware: [{ name: "setHeader", config: { name: "x-a", value: 1 } }]
      }) as { readonly id: string }
      await server.create({
        method: "GET",
        path: "/unschemed",
        handler,
        middleware: [{ name: "plain", config: { any: true } }]
      })
      // A configured middleware named without a config is given {}: here its schema needs a name and a value.
      await server.create({ method: "GET", path: "/bare", handler, middleware: ["setHeader"] })
      for (let i = 0; i < 3; i++) {
        for (const path of ["/refused", "/unschemed", "/bare"]) {
          const response = await fetch(server.origin + path)
          assert.strictEqual(response.status, 503, path)
          assert.strictEqual(response.headers.get("content-type"), Problem.CONTENT_TYPE)
          assert.strictEqual((await response.json()).code, "route_misconfigured")
        }
      }
      const logged = server.logs.filter((line) => line.message.includes("route_misconfigured"))
      assert.strictEqual(logged.length, 3, JSON.stringify(server.logs))
      const about = logged.find((line) => line.message.includes(refused.id))!
      assert.include(about.message, "middleware[0].config.value")
    }
  )
}
