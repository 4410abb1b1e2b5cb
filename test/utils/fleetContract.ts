/**
 * The fleet's requests as every adapter serves them (docs/scaling-out.md, "The fleet"; docs/http-api.md): the list
 * with no follower, the wait's query, a named change stream's name, and reports refused for each bad field. Followers
 * that stream and report for real are in test/Fleet.test.ts.
 */
import { assert, it } from "@effect/vitest"
import { Layer } from "effect"
import * as RouteTable from "route-registry/RouteTable"
import type * as RoutingHandler from "route-registry/RoutingHandler"
import type { Adapter, Received, Sent } from "./adapters.js"
import { ADMIN, assertProblem, post, READER, REPORTER, serving, type Store } from "./httpContract.js"

const auth = (token: string) => ({ authorization: `Bearer ${token}` })

const followers = (query = "", token = READER): Sent => ({
  method: "GET",
  path: `/v1/routing/followers${query === "" ? "" : `?${query}`}`,
  headers: auth(token)
})

const report = (body: unknown, headers: Record<string, string> = {}): Sent => ({
  method: "POST",
  path: "/v1/routing/followers",
  headers: { ...auth(REPORTER), "content-type": "application/json", ...headers },
  body: typeof body === "string" ? body : JSON.stringify(body)
})

const entry = {
  name: "edge-1",
  address: "10.0.0.7:51234",
  via: null,
  connectedAt: "2026-11-26T09:30:12.345Z",
  appliedRevision: 4,
  reportedAt: "2026-11-26T09:30:13.000Z",
  connected: true
}

const paths = (response: Received): Array<string> => response.json.errors.map((e: { path: string }) => e.path)

export const fleetContract = (adapter: Adapter, store: Store, options?: RoutingHandler.Options) => {
  const send = serving(adapter, RouteTable.layer.pipe(Layer.provideMerge(store)), options)

  it("no follower: exactly {revision, items: []}, the revision growing with each write", async () => {
    const before = await send(followers())
    assert.strictEqual(before.status, 200, before.text)
    assert.strictEqual(before.headers.get("content-type"), "application/json")
    assert.deepStrictEqual(Object.keys(before.json), ["revision", "items"])
    assert.deepStrictEqual(before.json.items, [])
    assert.strictEqual((await send(post({ method: "GET", path: "/fleet", handler: "h" }))).status, 201)
    const after = await send(followers())
    assert.isAbove(after.json.revision, before.json.revision)
  })

  it("a wait with no follower connected is complete at once: every connected follower holds the revision", async () => {
    const response = await send(followers("revision=1000000&wait=60"))
    assert.strictEqual(response.status, 200, response.text)
    assert.deepStrictEqual(Object.keys(response.json), ["revision", "items", "complete"])
    assert.isTrue(response.json.complete)
  })

  it("a paged query (limit, cursor, behind) answers the counts and nextCursor too, null on the last page", async () => {
    const response = await send(followers("limit=10&behind=true"))
    assert.strictEqual(response.status, 200, response.text)
    assert.deepStrictEqual(Object.keys(response.json), ["revision", "items", "counts", "nextCursor"])
    assert.deepStrictEqual(response.json.counts, { followers: 0, connected: 0, behind: 0 })
    assert.isNull(response.json.nextCursor)
    assert.isNull(response.headers.get("link"))
  })

  it("a report takes fleet:report besides routes:read: 403 insufficient_scope naming it, before the body", async () => {
    const refused = await send(report("{", auth(READER)))
    assertProblem(refused, "insufficient_scope")
    assert.include(refused.headers.get("www-authenticate"), "scope=\"fleet:report\"")
  })

  it("a bad query: 400 invalid_query naming every parameter at fault", async () => {
    const response = await send(followers("revision=-1&wait=61&limit=0&cursor=x&behind=yes&access_token=x"))
    assertProblem(response, "invalid_query", ["errors"])
    assert.deepStrictEqual(paths(response).sort(), ["access_token", "behind", "cursor", "limit", "revision", "wait"])
    assertProblem(await send(followers("limit=1001")), "invalid_query", ["errors"])
    assertProblem(await send(followers("wait=5")), "invalid_query", ["errors"])
    const twice = await send(followers("revision=1&revision=2"))
    assert.deepStrictEqual(paths(twice), ["revision"])
  })

  it("authentication and scope come first; other methods are 405 with Allow: GET, POST", async () => {
    assertProblem(await send({ method: "GET", path: "/v1/routing/followers?wait=x" }), "unauthenticated")
    assertProblem(await send(report("{", { authorization: "Bearer nope" })), "invalid_token")
    const refused = await send({ method: "DELETE", path: "/v1/routing/followers", headers: auth(ADMIN) })
    assertProblem(refused, "method_not_allowed")
    assert.strictEqual(refused.headers.get("allow"), "GET, POST")
  })

  it("a change stream opened with a bad Follower-Name: 400 invalid_report naming the header", async () => {
    for (const name of ["", "-edge", "edge one", "x".repeat(129)]) {
      const response = await send({
        method: "GET",
        path: "/v1/routing/changes",
        headers: { ...auth(READER), "follower-name": name }
      })
      assertProblem(response, "invalid_report", ["errors"])
      assert.deepStrictEqual(paths(response), ["Follower-Name"])
    }
  })

  it("a report on no open stream: 404 stream_not_found", async () => {
    assertProblem(
      await send(report({ stream: "0123abcd", appliedRevision: 3, followers: [entry] })),
      "stream_not_found"
    )
  })

  it("a bad report: 400 invalid_report naming every field at fault", async () => {
    const response = await send(report({
      stream: "",
      appliedRevision: 1.5,
      extra: true,
      followers: [
        entry,
        { ...entry, name: "bad name", via: 3, connectedAt: "yesterday", appliedRevision: -1, connected: "yes" },
        { ...entry, reportedAt: "2026-11-26", address: "a".repeat(257), more: 1 },
        7
      ]
    }))
    assertProblem(response, "invalid_report", ["errors"])
    assert.deepStrictEqual(paths(response).sort(), [
      "appliedRevision",
      "extra",
      "followers[1].appliedRevision",
      "followers[1].connected",
      "followers[1].connectedAt",
      "followers[1].name",
      "followers[1].via",
      "followers[2].address",
      "followers[2].more",
      "followers[2].reportedAt",
      "followers[3]",
      "stream"
    ])
    assertProblem(await send(report([])), "invalid_report", ["errors"])
    assertProblem(await send(report("{")), "malformed_json")
    assertProblem(await send(report("{}", { "content-type": "text/plain" })), "unsupported_media_type")
  })

  it("a report of more than 10,000 entries is refused naming followers; one over 4 MiB is 413", async () => {
    const many = await send(report({ stream: "s", appliedRevision: 1, followers: new Array(10_001).fill(0) }))
    assertProblem(many, "invalid_report", ["errors"])
    assert.deepStrictEqual(paths(many), ["followers"])
    const huge = await send(report({ stream: "s", appliedRevision: 1, followers: ["x".repeat(4 * 1024 * 1024)] }))
    assertProblem(huge, "payload_too_large")
  })
}
