/**
 * examples/jwt-authenticator.ts: the library's JWT authenticator behind a real server, fed by the example's stand-in
 * identity provider (a key set on 127.0.0.1). The authenticator's own rules are tested in test/Authenticator.jwt.test.ts.
 */
import { assert, describe, it, onTestFinished } from "@effect/vitest"
import { services, standInProvider } from "../../examples/jwt-authenticator.js"
import { nodeListener } from "../utils/adapters.js"
import { assertProblem, get, post } from "../utils/httpContract.js"

const ISSUER = "https://idp.test/realms/routing"
const AUDIENCE = "route-registry"

const bearer = (token: string) => ({ authorization: `Bearer ${token}` })
const json = { "content-type": "application/json" }
const sample = { method: "GET", path: "/jwt/:id", handler: "show" }

const start = async () => {
  const provider = await standInProvider(ISSUER, AUDIENCE)
  onTestFinished(provider.close)
  const server = await nodeListener.start(services({ jwksUrl: provider.jwksUrl, issuer: ISSUER, audience: AUDIENCE }))
  onTestFinished(() => server.close())
  return { provider, server }
}

describe("examples/jwt-authenticator", () => {
  it("a provider's token with routes:write creates (201); with routes:read it gets; sub names the principal", async () => {
    const { provider, server } = await start()
    const created = await server.send(
      post(sample, { ...bearer(await provider.sign("svc-1", "routes:write")), ...json })
    )
    assert.strictEqual(created.status, 201, created.text)
    const found = await server.send(get(created.json.id, bearer(await provider.sign("svc-2", "openid routes:read"))))
    assert.strictEqual(found.status, 200)
    assert.strictEqual(found.text, created.text)
  })

  it("a token without the scope is 403; one from another provider is 401, and creates nothing", async () => {
    const { provider, server } = await start()
    assertProblem(
      await server.send(post(sample, { ...bearer(await provider.sign("svc-1", "routes:read")), ...json })),
      "insufficient_scope"
    )
    const other = await standInProvider(ISSUER, AUDIENCE)
    onTestFinished(other.close)
    assertProblem(
      await server.send(post(sample, { ...bearer(await other.sign("svc-1", "routes:write")), ...json })),
      "invalid_token"
    )
    // None of them was stored: the same route can still be created.
    const created = await server.send(
      post(sample, { ...bearer(await provider.sign("svc-1", "routes:write")), ...json })
    )
    assert.strictEqual(created.status, 201)
  })

  it("a prefix scope from the provider limits the writes to its prefix", async () => {
    const { provider, server } = await start()
    const owner = await provider.sign("payments-team", "routes:read routes:write:/payments")
    assert.strictEqual(
      (await server.send(post({ ...sample, path: "/payments/:id" }, { ...bearer(owner), ...json }))).status,
      201
    )
    const refused = await server.send(post(sample, { ...bearer(owner), ...json }))
    assertProblem(refused, "insufficient_scope")
    assert.include(refused.headers.get("www-authenticate")!, "scope=\"routes:write:/jwt\"")
  })
})
