/**
 * Each example started as its header says (`npx tsx examples/<file>.ts`), configured by its environment alone.
 */
import { assert, describe, it, onTestFinished } from "@effect/vitest"
import { Layer } from "effect"
import * as RouteRepository from "route-registry/RouteRepository"
import { fetchFrom, nodeListener } from "../utils/adapters.js"
import { ADMIN, get, post, tokens } from "../utils/httpContract.js"
import { run, start } from "../utils/spawned.js"

const sample = { method: "GET", path: "/direct/:id", handler: "show" }

// Creates a route with `token` and reads it back through the running example.
const roundTrip = async (origin: string, token: string) => {
  const send = fetchFrom(origin)
  const auth = { authorization: `Bearer ${token}` }
  const created = await send(post(sample, { ...auth, "content-type": "application/json" }))
  assert.strictEqual(created.status, 201, created.text)
  assert.strictEqual((await send(get(created.json.id, auth))).text, created.text)
}

describe("examples, run directly", () => {
  for (const file of ["express", "fastify", "hono", "effect-router"]) {
    it(`${file}: serves the API with ROUTING_ADMIN_TOKENS and its own /health, and exits 0 on SIGTERM`, async () => {
      const server = await start(`examples/${file}.ts`, { ROUTING_ADMIN_TOKENS: ADMIN })
      onTestFinished(async () => assert.strictEqual(await server.stop(), 0, server.output()))
      await roundTrip(server.origin, ADMIN)
      assert.strictEqual((await fetch(`${server.origin}/health`)).status, 200)
    })
  }

  it("express: with no token configured, generates one and prints it once", async () => {
    const server = await start("examples/express.ts")
    onTestFinished(async () => {
      await server.stop()
    })
    const generated = [...server.output().matchAll(/generated admin token (\S+)/g)].map((m) => m[1]!)
    assert.strictEqual(generated.length, 1)
    await roundTrip(server.origin, generated[0]!)
  })

  it("jwt-authenticator: with no JWT_SECRET, prints a token signed with a fresh secret, which the API accepts", async () => {
    const server = await start("examples/jwt-authenticator.ts")
    onTestFinished(async () => assert.strictEqual(await server.stop("SIGINT"), 0, server.output()))
    const token = /a token valid for one hour: (\S+)/.exec(server.output())?.[1]
    assert.isDefined(token)
    await roundTrip(server.origin, token!)
  })

  it("client: talks to ROUTING_URL with ROUTING_TOKEN and prints the route and the 409 problem", async () => {
    const server = await nodeListener.start(Layer.merge(RouteRepository.layerMemory, tokens))
    onTestFinished(() => server.close())
    const client = run("examples/client.ts", { ROUTING_URL: server.origin, ROUTING_TOKEN: ADMIN })
    assert.strictEqual(await client.exited, 0, client.output())
    assert.include(client.output(), "code: 'route_conflict'")
  })

  it("programmatic: prints each outcome and exits 0", async () => {
    const program = run("examples/programmatic.ts")
    assert.strictEqual(await program.exited, 0, program.output())
    const printed = JSON.parse(program.output())
    assert.deepStrictEqual(
      [printed.created._tag, printed.conflict._tag, printed.refused._tag, printed.found._tag, printed.missing._tag],
      ["Created", "Conflict", "Refused", "Some", "None"]
    )
  })
})
