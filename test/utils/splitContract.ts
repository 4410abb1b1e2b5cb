/**
 * The router's part of docs/router.md: disabled routes and splits, whatever its form: a disabled route wins matching and is answered `503
 * route_disabled` with no function run; a split sends each key to the handler its bucket names, the override header
 * wins, and the host's code reads the choice through the form's accessor. Each form registers `variants` in its own
 * idiom; the tests compute the expected handler with `Split.choose` on their own.
 */
import { assert } from "@effect/vitest"
import * as Http from "node:http"
import * as Problem from "route-registry/Problem"
import type * as Route from "route-registry/Route"
import * as Split from "route-registry/Split"
import { answersIn, converse, head } from "./routerContract.js"

/** The handlers a split test routes to: each answers `{ handler, split }`, `split` the accessor's choice. */
export const VARIANTS = ["one", "two", "three"] as const

/** The body a variant answers. */
export const variantBody = (handler: string, split: Split.Choice | undefined): string =>
  JSON.stringify({ handler, split: split ?? null })

export interface SplitServer {
  readonly origin: string
  readonly create: (
    route: {
      readonly method: string
      readonly path: string
      readonly handler: string
      readonly [field: string]: unknown
    }
  ) => Promise<unknown>
}

type WithServer = (name: string, test: (server: SplitServer) => Promise<void>) => void

const get = async (server: SplitServer, path: string, headers: Record<string, string> = {}) => {
  const response = await fetch(server.origin + path, { headers })
  return { status: response.status, headers: response.headers, text: await response.text() }
}

export const splitContract = (withServer: WithServer) => {
  withServer(
    "a disabled route wins over a broader one and is answered 503 route_disabled, no function run",
    async (server) => {
      await server.create({ method: "GET", path: "/files/*rest", handler: "one" })
      await server.create({ method: "GET", path: "/files/secret", handler: "two", enabled: false })
      const disabled = await get(server, "/files/secret")
      assert.strictEqual(disabled.status, 503)
      assert.strictEqual(disabled.headers.get("retry-after"), "60")
      assert.strictEqual(disabled.headers.get("content-type"), Problem.CONTENT_TYPE)
      assert.strictEqual(JSON.parse(disabled.text).code, "route_disabled")
      assert.strictEqual(JSON.parse((await get(server, "/files/other")).text).handler, "one")
    }
  )

  withServer(
    "a split sends each key to the handler of its bucket, no key to the route's, the override wins",
    async (server) => {
      const route = await server.create({
        method: "GET",
        path: "/s/:id",
        handler: "one",
        split: {
          by: "header:X-User",
          targets: [{ handler: "two", weight: 3000 }, { handler: "three", weight: 2000 }],
          override: "X-Use"
        }
      }) as Route.Route & { readonly split: Split.Split }
      const seen = new Set<string>()
      for (let i = 0; i < 40; i++) {
        const key = `user-${i}`
        const expected = Split.choose(route, key)
        const answer = JSON.parse((await get(server, `/s/${i}`, { "x-user": key })).text)
        assert.deepStrictEqual(answer, { handler: expected.handler, split: expected }, key)
        seen.add(answer.handler)
      }
      assert.deepStrictEqual([...seen].sort(), ["one", "three", "two"])
      assert.deepStrictEqual(JSON.parse((await get(server, "/s/1")).text), {
        handler: "one",
        split: { handler: "one", key: null, bucket: null }
      })
      for (const name of VARIANTS) {
        assert.strictEqual(JSON.parse((await get(server, "/s/1", { "x-user": "k", "x-use": name })).text).handler, name)
      }
      const ignored = JSON.parse((await get(server, "/s/1", { "x-user": "k", "x-use": "nobody" })).text)
      assert.strictEqual(ignored.handler, Split.choose(route, "k").handler)
      // A header's UTF-8 bytes are its text: "é" is the key "é".
      const { received } = await converse(server.origin, [[
        0,
        head("GET", "/s/1", { "x-user": "é", connection: "close" })
      ]], 5000)
      assert.strictEqual(JSON.parse(answersIn(received)[0]!.body).split.bucket, Split.choose(route, "é").bucket)
    }
  )

  withServer(
    "a split reads its key from a cookie as sent, or from a query parameter as URLSearchParams decodes it",
    async (server) => {
      const targets = [{ handler: "two", weight: 5000 }]
      const byCookie = await server.create({
        method: "GET",
        path: "/c",
        handler: "one",
        split: { by: "cookie:uid", group: "g", targets }
      }) as
        & Route.Route
        & { readonly split: Split.Split }
      const byQuery = await server.create({
        method: "GET",
        path: "/q",
        handler: "one",
        split: { by: "query:u", group: "g", targets }
      }) as
        & Route.Route
        & { readonly split: Split.Split }
      for (let i = 0; i < 20; i++) {
        const key = `a%20b+${i}`
        const cookie = JSON.parse((await get(server, "/c", { cookie: `x=1; uid=${key}; y=2` })).text)
        assert.deepStrictEqual(cookie.split, Split.choose(byCookie, key))
        const query = JSON.parse((await get(server, `/q?u=${key}`)).text)
        assert.deepStrictEqual(query.split, Split.choose(byQuery, new URLSearchParams(`u=${key}`).get("u")!))
      }
    }
  )

  withServer(
    "conditions: a route serves only a request meeting its host, headers and query; the most specific conditions win",
    async (server) => {
      await server.create({ method: "GET", path: "/w/:id", handler: "one" })
      await server.create({ method: "GET", path: "/w/:id", handler: "two", when: { host: "*.example.com" } })
      await server.create({
        method: "GET",
        path: "/w/:id",
        handler: "three",
        when: { host: "api.example.com", headers: [{ name: "X-Version", value: "2" }], query: [{ name: "beta" }] }
      })
      const handler = async (path: string, headers: Record<string, string>) => {
        const answer = await getWithHost(server.origin, path, headers)
        return answer.status === 200 ? JSON.parse(answer.text).handler : answer.status
      }
      assert.strictEqual(await handler("/w/1?beta", { host: "api.example.com:80", "x-version": "2" }), "three")
      assert.strictEqual(await handler("/w/1", { host: "API.example.com", "x-version": "2" }), "two")
      assert.strictEqual(await handler("/w/1?beta", { host: "other.org", "x-version": "2" }), "one")
      // A route whose conditions fail counts for nothing: no 405 for it, the path has no route.
      await server.create({ method: "POST", path: "/only/:id", handler: "one", when: { headers: [{ name: "x-k" }] } })
      assert.strictEqual((await getWithHost(server.origin, "/only/1", { host: "a" })).status, 404)
    }
  )
}

// A GET with any headers, `Host` among them (which the Fetch API may not set).
const getWithHost = (origin: string, path: string, headers: Record<string, string>) =>
  new Promise<{ status: number; headers: Http.IncomingHttpHeaders; text: string }>((resolve, reject) => {
    const request = Http.get(origin + path, { headers }, (response) => {
      let text = ""
      response.setEncoding("utf8")
      response.on("data", (chunk: string) => text += chunk)
      response.on("end", () => resolve({ status: response.statusCode!, headers: response.headers, text }))
    })
    request.on("error", reject)
  })
