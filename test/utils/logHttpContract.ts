/**
 * The change log through the HTTP API (docs/history.md): history pages, a route's history, restore, dry runs and
 * `Registry-Revision`, run over every adapter and store by `changeContract`.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Route from "route-registry/Route"
import type { Received, Sent } from "./adapters.js"

type Send = (request: Sent) => Promise<Received>

const ADMIN = { authorization: "Bearer admin-token" }
const READER = { authorization: "Bearer read-token" }
const JSON_BODY = { ...ADMIN, "content-type": "application/json" }

const request = (method: string, path: string, body?: unknown, headers: Record<string, string> = JSON_BODY): Sent => ({
  method,
  path,
  headers,
  ...(body === undefined ? {} : { body: JSON.stringify(body) })
})

const revisionOf = (response: Received) => Number(response.headers.get("registry-revision"))

const problemPaths = (response: Received): Array<string> =>
  response.json.errors.map((error: { path: string }) => error.path)

export const logRows = (send: Send) => {
  const create = async (body: Record<string, unknown>, query = "") => {
    const response = await send(request("POST", `/v1/routing${query}`, body))
    assert.strictEqual(response.status, 201, response.text)
    return response
  }
  const history = (query = "", headers = ADMIN) =>
    send(request("GET", `/v1/routing/history${query === "" ? "" : `?${query}`}`, undefined, headers))

  describe("the change log", () => {
    it("every write answers Registry-Revision, and the log holds each change exactly, newest first", async () => {
      const created = await create({ method: "GET", path: "/a", handler: "h" })
      const id = created.json.id
      const patched = await send(request("PATCH", `/v1/routing/${id}`, { handler: "h2" }))
      assert.strictEqual(patched.status, 200, patched.text)
      const deleted = await send(request("DELETE", `/v1/routing/${id}`, undefined, ADMIN))
      assert.strictEqual(deleted.status, 204)
      const revisions = [created, patched, deleted].map(revisionOf)
      assert.isTrue(Number.isSafeInteger(revisions[0]) && revisions[0]! > 0)
      assert.deepStrictEqual(revisions, [revisions[0], revisions[0]! + 1, revisions[0]! + 2])
      assert.strictEqual(created.headers.get("etag"), `"${revisions[0]}"`)
      const page = await history()
      assert.strictEqual(page.status, 200, page.text)
      assert.strictEqual(page.json.nextCursor, null)
      assert.isNull(page.headers.get("link"))
      const [removal, update, creation] = page.json.items
      assert.deepStrictEqual(Object.keys(update), ["revision", "at", "actor", "action", "routeId", "before", "after"])
      assert.deepStrictEqual(
        { ...removal, at: "" },
        {
          revision: revisions[2],
          at: "",
          actor: "admin",
          action: "delete",
          routeId: id,
          before: patched.json,
          after: null
        }
      )
      assert.deepStrictEqual(
        { ...update, at: "" },
        {
          revision: revisions[1],
          at: "",
          actor: "admin",
          action: "update",
          routeId: id,
          before: created.json,
          after: patched.json
        }
      )
      assert.deepStrictEqual(creation.after, created.json)
      assert.match(creation.at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/)
      // The deleted route's history stays readable; an id the log never held is not found.
      const own = await send(request("GET", `/v1/routing/${id}/history`, undefined, READER))
      assert.deepStrictEqual(
        own.json.items.map((entry: { revision: number }) => entry.revision),
        [...revisions].reverse()
      )
      const unknown = await send(request("GET", `/v1/routing/${Route.makeRouteId(0)}/history`, undefined, READER))
      assert.strictEqual(unknown.status, 404)
      assert.strictEqual(unknown.json.code, "route_not_found")
    })

    it("pages: limit, nextCursor and Link with the filters; bad parameters are 400 invalid_query", async () => {
      const a = await create({ method: "GET", path: "/a", handler: "h" })
      await create({ method: "GET", path: "/b", handler: "h" })
      await send(request("PATCH", `/v1/routing/${a.json.id}`, { handler: "h2" }))
      const first = await history("limit=1&action=create")
      assert.strictEqual(first.json.items.length, 1)
      assert.strictEqual(first.json.items[0].path, undefined)
      assert.strictEqual(first.json.items[0].after.path, "/b")
      assert.isString(first.json.nextCursor)
      assert.strictEqual(
        first.headers.get("link"),
        `</v1/routing/history?limit=1&action=create&cursor=${first.json.nextCursor}>; rel="next"`
      )
      const second = await history(`limit=1&action=create&cursor=${first.json.nextCursor}`)
      assert.strictEqual(second.json.items[0].after.path, "/a")
      assert.strictEqual(second.json.nextCursor, null)
      const byRoute = await history(`routeId=${a.json.id}&actor=admin`)
      assert.deepStrictEqual(byRoute.json.items.map((entry: { action: string }) => entry.action), ["update", "create"])
      const bad = await history("limit=0&action=rename&cursor=xyz&since=1")
      assert.strictEqual(bad.status, 400)
      assert.strictEqual(bad.json.code, "invalid_query")
      assert.sameMembers(problemPaths(bad), ["limit", "action", "cursor", "since"])
      const denied = await send(request("GET", "/v1/routing/history", undefined, {}))
      assert.strictEqual(denied.status, 401)
      const wrongMethod = await send(request("DELETE", "/v1/routing/history", undefined, ADMIN))
      assert.strictEqual(wrongMethod.status, 405)
      assert.strictEqual(wrongMethod.headers.get("allow"), "GET")
    })

    it("dryRun=true answers as the write would, and changes nothing; another value is 400 invalid_query", async () => {
      const a = await create({ method: "GET", path: "/a", handler: "h" })
      const tried = await create({ method: "GET", path: "/t", handler: "h" }, "?dryRun=true")
      assert.isNull(tried.headers.get("registry-revision"))
      assert.strictEqual((await send(request("GET", `/v1/routing/${tried.json.id}`, undefined, ADMIN))).status, 404)
      const conflict = await send(
        request("POST", "/v1/routing?dryRun=true", { method: "GET", path: "/a", handler: "x" })
      )
      assert.strictEqual(conflict.status, 409)
      const patched = await send(request("PATCH", `/v1/routing/${a.json.id}?dryRun=true`, { handler: "other" }))
      assert.strictEqual(patched.status, 200)
      assert.strictEqual(patched.json.handler, "other")
      assert.isNull(patched.headers.get("registry-revision"))
      const stale = await send(
        request("PATCH", `/v1/routing/${a.json.id}?dryRun=true`, { handler: "x" }, {
          ...JSON_BODY,
          "if-match": "\"999999\""
        })
      )
      assert.strictEqual(stale.status, 412)
      const deleted = await send(request("DELETE", `/v1/routing/${a.json.id}?dryRun=true`, undefined, ADMIN))
      assert.strictEqual(deleted.status, 204)
      assert.isNull(deleted.headers.get("registry-revision"))
      const kept = await send(request("GET", `/v1/routing/${a.json.id}`, undefined, ADMIN))
      assert.strictEqual(kept.text, a.text)
      assert.strictEqual((await history()).json.items.length, 1)
      for (const query of ["dryRun=false", "dryRun=1", "dryRun=true&dryRun=true"]) {
        const refused = await send(request("POST", `/v1/routing?${query}`, { method: "GET", path: "/q", handler: "h" }))
        assert.strictEqual(refused.status, 400, query)
        assert.strictEqual(refused.json.code, "invalid_query")
        assert.deepStrictEqual(problemPaths(refused), ["dryRun"])
      }
      // The next real write takes the revision no dry run used.
      assert.strictEqual(revisionOf(await create({ method: "GET", path: "/b", handler: "h" })), revisionOf(a) + 1)
    })

    it("restore: 200 back to a revision (If-Match honoured), 201 for a deleted route, 400 invalid_restore", async () => {
      const a = await create({ method: "GET", path: "/a", middleware: ["m"], handler: "h" })
      const id = a.json.id
      const changed = await send(request("PATCH", `/v1/routing/${id}`, { path: "/z", handler: "h2" }))
      const restore = (routeId: string, body: unknown, headers: Record<string, string> = JSON_BODY, query = "") =>
        send(request("POST", `/v1/routing/${routeId}/restore${query}`, body, headers))
      const stale = await restore(id, { revision: revisionOf(a) }, { ...JSON_BODY, "if-match": a.headers.get("etag")! })
      assert.strictEqual(stale.status, 412)
      const dry = await restore(id, { revision: revisionOf(a) }, JSON_BODY, "?dryRun=true")
      assert.strictEqual(dry.status, 200)
      assert.isNull(dry.headers.get("registry-revision"))
      const back = await restore(id, { revision: revisionOf(a) }, {
        ...JSON_BODY,
        "if-match": changed.headers.get("etag")!
      })
      assert.strictEqual(back.status, 200, back.text)
      assert.strictEqual(back.text, a.text)
      assert.strictEqual(revisionOf(back), revisionOf(changed) + 1)
      assert.strictEqual(back.headers.get("etag"), `"${revisionOf(back)}"`)
      const [entry] = (await history("limit=1")).json.items
      assert.deepStrictEqual(
        { action: entry.action, restoredFrom: entry.restoredFrom, after: entry.after },
        { action: "restore", restoredFrom: revisionOf(a), after: a.json }
      )
      const removed = await send(request("DELETE", `/v1/routing/${id}`, undefined, ADMIN))
      const again = await restore(id, { revision: revisionOf(a) })
      assert.strictEqual(again.status, 201, again.text)
      assert.notStrictEqual(again.json.id, id)
      assert.strictEqual(again.headers.get("location"), `/v1/routing/${again.json.id}`)
      assert.deepStrictEqual({ ...again.json, id, createdAt: a.json.createdAt }, a.json)
      assert.strictEqual((await restore(id, { revision: revisionOf(a) })).status, 409)
      const deleting = await restore(id, { revision: revisionOf(removed) })
      assert.strictEqual(deleting.status, 400)
      assert.strictEqual(deleting.json.code, "invalid_restore")
      assert.deepStrictEqual(problemPaths(deleting), ["revision"])
      assert.include(deleting.json.detail, "deleted")
      const elsewhere = await restore(again.json.id, { revision: revisionOf(a) })
      assert.strictEqual(elsewhere.status, 400)
      assert.include(elsewhere.json.detail, "not in the log")
      for (const body of [{}, { revision: 0 }, { revision: "1" }, { revision: 1, extra: true }, [1], null]) {
        const refused = await restore(again.json.id, body)
        assert.strictEqual(refused.status, 400, JSON.stringify(body))
        assert.strictEqual(refused.json.code, "invalid_restore")
      }
      assert.strictEqual((await restore(Route.makeRouteId(0), { revision: 1 })).status, 404)
      const reader = await restore(id, { revision: revisionOf(a) }, { ...READER, "content-type": "application/json" })
      assert.strictEqual(reader.status, 403)
      const wrongMethod = await send(request("GET", `/v1/routing/${id}/restore`, undefined, ADMIN))
      assert.strictEqual(wrongMethod.status, 405)
      assert.strictEqual(wrongMethod.headers.get("allow"), "POST")
    })
  })
}
