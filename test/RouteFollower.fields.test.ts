/**
 * A follower routes what the registry's routes say beyond method and path (docs/router.md): a middleware's config,
 * decoded by the host's schema and handed to it per request, and conditions on host, headers and query, end to end:
 * routes written to a real registry (the routing API over the memory store and over Postgres, in this process), the
 * follower's table fed by its change stream, and requests sent through a `RouterListener` over that table.
 */
import { assert, describe, it, onTestFinished } from "@effect/vitest"
import { Effect, Layer, ManagedRuntime, Redacted, Schema } from "effect"
import * as Http from "node:http"
import * as AdminListener from "route-registry/AdminListener"
import * as Authenticator from "route-registry/Authenticator"
import * as PgRouteRepository from "route-registry/PgRouteRepository"
import * as RouteRepository from "route-registry/RouteRepository"
import * as RouterListener from "route-registry/RouterListener"
import * as RouteTable from "route-registry/RouteTable"
import { closeServer, listen } from "./utils/adapters.js"
import { follow } from "./utils/followers.js"
import * as TestDatabase from "./utils/TestDatabase.js"
import { eventually } from "./utils/waiting.js"

const ADMIN = "admin"
const READER = "reader"

const tokens = Authenticator.layerStaticTokens([
  { token: Redacted.make(ADMIN), scopes: ["routes:read", "routes:write"], id: "alice" },
  { token: Redacted.make(READER), scopes: ["routes:read", "fleet:report"], id: "follower" }
])

const stores: ReadonlyArray<readonly [string, () => Layer.Layer<RouteRepository.RouteRepository, unknown>]> = [
  ["memory", () => RouteRepository.layerMemory],
  [
    "postgres",
    () => PgRouteRepository.layer({ table: TestDatabase.freshTable() }).pipe(Layer.provide(TestDatabase.layer()))
  ]
]

const serve = async (handle: Http.RequestListener) => {
  const server = Http.createServer(handle)
  const origin = await listen(server)
  onTestFinished(() => closeServer(server))
  return origin
}

const create = async (registry: string, body: object): Promise<{ id: string }> => {
  const response = await fetch(`${registry}/v1/routing`, {
    method: "POST",
    headers: { authorization: `Bearer ${ADMIN}`, "content-type": "application/json" },
    body: JSON.stringify(body)
  })
  assert.strictEqual(response.status, 201, await response.clone().text())
  return response.json()
}

const RateLimit = Schema.Struct({ max: Schema.Int, per: Schema.Literal("minute", "hour") })

describe("a follower routes middleware configs and conditions end to end", () => {
  for (const [name, store] of stores) {
    it(name, { timeout: 60_000 }, async () => {
      const runtime = ManagedRuntime.make(
        RouteTable.layerWith({}).pipe(Layer.provideMerge(Layer.merge(store(), tokens)))
      )
      onTestFinished(() => runtime.dispose())
      const registry = await serve(await runtime.runPromise(AdminListener.make()))
      const followed = await follow(registry, READER)
      onTestFinished(() => followed.close())

      const seen: Array<typeof RateLimit.Type> = []
      const router = await followed.runtime.runPromise(RouterListener.make({
        handlers: {
          show: (req, res) => void res.end(`show ${RouterListener.matchOf(req)!.route.id}`),
          showV2: (req, res) => void res.end(`showV2 ${RouterListener.matchOf(req)!.route.id}`)
        },
        middleware: {
          rateLimit: RouterListener.configured(RateLimit, (_req, res, next, config) => {
            seen.push(config)
            res.setHeader("x-limit", `${config.max}/${config.per}`)
            next()
          })
        }
      }))
      const host = await serve((req, res) => router(req, res, () => res.writeHead(404).end("host")))

      const plain = await create(registry, {
        method: "GET",
        path: "/users/:id",
        handler: "show",
        middleware: [{ name: "rateLimit", config: { per: "minute", max: 100 } }],
        tags: ["team:accounts"]
      })
      const versioned = await create(registry, {
        method: "GET",
        path: "/users/:userId",
        handler: "showV2",
        when: { host: "*.example.com", headers: [{ name: "X-Version", value: "2" }], query: [{ name: "beta" }] }
      })
      await Effect.runPromise(eventually(
        () => "the follower has not received both routes",
        () => RouteTable.size(followed.table) === 2
      ))

      // With node:http, which sends the Host given (fetch keeps its own).
      const send = (path: string, headers: Record<string, string>) =>
        new Promise<{ status: number | undefined; limit: string | null; text: string }>((resolve, reject) => {
          Http.get(`${host}${path}`, { headers }, (response) => {
            let text = ""
            response.setEncoding("utf8").on("data", (chunk) => (text += chunk)).on(
              "end",
              () =>
                resolve({ status: response.statusCode, limit: (response.headers["x-limit"] as string) ?? null, text })
            )
          }).on("error", reject)
        })
      // Every condition met: the conditioned route, whose middleware list is empty.
      assert.deepStrictEqual(
        await send("/users/7?beta", { host: "api.example.com", "x-version": "2" }),
        { status: 200, limit: null, text: `showV2 ${versioned.id}` }
      )
      // One condition short (the query, the header's value, the host): the plain route, its config decoded and applied.
      for (
        const [path, headers] of [
          ["/users/7", { host: "api.example.com", "x-version": "2" }],
          ["/users/7?beta", { host: "api.example.com", "x-version": "1" }],
          ["/users/7?beta", { host: "example.com", "x-version": "2" }]
        ] as const
      ) {
        assert.deepStrictEqual(await send(path, headers), {
          status: 200,
          limit: "100/minute",
          text: `show ${plain.id}`
        })
      }
      assert.deepStrictEqual(seen, Array.from({ length: 3 }, () => ({ max: 100, per: "minute" })))
    })
  }
})
