/**
 * The users example's stored routes, as every framework example serves them: a route created through the API is
 * served by the host's functions at once, its middleware answering for itself, until it is deleted and the request
 * is handed back to the framework's own not-found.
 */
import { assert } from "@effect/vitest"
import { Layer } from "effect"
import type { Adapter, Received } from "../utils/adapters.js"
import { type Store, tokens } from "../utils/httpContract.js"
import { admin, createRoute } from "../utils/routerHost.js"

export const servesUsers = async (adapter: Adapter, store: Store, hostNotFound: (response: Received) => void) => {
  const server = await adapter.start(Layer.merge(store, tokens))
  try {
    const created = await server.send(
      createRoute({ method: "GET", path: "/users/:id", middleware: ["auth"], handler: "showUser" })
    )
    assert.strictEqual(created.status, 201, created.text)
    const user = await server.send({ method: "GET", path: "/users/2", headers: { authorization: "Bearer x" } })
    assert.strictEqual(user.status, 200)
    assert.deepStrictEqual(user.json, { id: "2", name: "Grace Hopper" })
    const missing = await server.send({ method: "GET", path: "/users/9", headers: { authorization: "Bearer x" } })
    assert.strictEqual(missing.status, 404)
    assert.deepStrictEqual(missing.json, { error: "no user 9" })
    // The middleware answers itself: the handler never runs.
    const anonymous = await server.send({ method: "GET", path: "/users/2" })
    assert.strictEqual(anonymous.status, 401)
    assert.deepStrictEqual(anonymous.json, { error: "sign in first" })

    const listed = await server.send(createRoute({ method: "GET", path: "/users", handler: "listUsers" }))
    assert.strictEqual(listed.status, 201)
    assert.strictEqual((await server.send({ method: "GET", path: "/users" })).json.length, 2)

    const removed = await server.send({ method: "DELETE", path: `/v1/routing/${created.json.id}`, headers: admin })
    assert.strictEqual(removed.status, 204)
    const gone = await server.send({ method: "GET", path: "/users/2", headers: { authorization: "Bearer x" } })
    assert.strictEqual(gone.status, 404)
    hostNotFound(gone)
  } finally {
    await server.close()
  }
}
