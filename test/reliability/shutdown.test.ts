/**
 * SIGTERM while requests are in flight: every one is answered, the process exits 0, and no acknowledged create
 * is lost.
 */
import { assert, describe, it, onTestFinished } from "@effect/vitest"
import { ADMIN } from "../utils/httpContract.js"
import { type Running, start } from "../utils/spawned.js"
import * as TestDatabase from "../utils/TestDatabase.js"

const IN_FLIGHT = 50
const auth = { authorization: `Bearer ${ADMIN}` }

// Starts IN_FLIGHT creates whose bodies stop halfway; `finish` sends the rest.
const startCreates = (origin: string) => {
  const releases: Array<() => void> = []
  const responses = Array.from({ length: IN_FLIGHT }, (_, i) => {
    const body = new TextEncoder().encode(JSON.stringify({ method: "GET", path: `/shutdown/${i}`, handler: "h" }))
    const stream = new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(body.subarray(0, 10))
        releases.push(() => {
          controller.enqueue(body.subarray(10))
          controller.close()
        })
      }
    })
    return fetch(`${origin}/v1/routing`, {
      method: "POST",
      headers: { ...auth, "content-type": "application/json" },
      body: stream,
      duplex: "half"
    } as RequestInit)
  })
  return { responses, finish: () => releases.forEach((release) => release()) }
}

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

const shutDownUnderLoad = async (server: Running) => {
  const { finish, responses } = startCreates(server.origin)
  await pause(500) // every request has reached the server and waits for the rest of its body
  const exited = server.stop("SIGTERM")
  await pause(300)
  // It no longer accepts connections...
  const refused = await fetch(`${server.origin}/v1/routing/x`, { headers: auth }).then(() => false, () => true)
  assert.isTrue(refused, "a new connection was accepted after SIGTERM")
  // ...but answers every request already in flight.
  finish()
  const answered = await Promise.all(
    responses.map(async (response) => ({ status: (await response).status, text: await (await response).text() }))
  )
  assert.deepStrictEqual(answered.map((a) => a.status), Array(IN_FLIGHT).fill(201))
  assert.strictEqual(await exited, 0, server.output())
  return answered.map((a) => JSON.parse(a.text) as { id: string })
}

describe("graceful shutdown under load", () => {
  it("memory store: SIGTERM with 50 creates in flight answers all of them and exits 0", async () => {
    await shutDownUnderLoad(await start("examples/server.ts", { ROUTING_ADMIN_TOKENS: ADMIN }))
  })

  it("postgres store: every acknowledged create is there after a restart", async () => {
    const database = await TestDatabase.freshDatabase()
    const env = { DATABASE_URL: database.url, ROUTING_ADMIN_TOKENS: ADMIN }
    onTestFinished(() => database.drop())
    const created = await shutDownUnderLoad(await start("examples/server.ts", env))
    const again = await start("examples/server.ts", env)
    onTestFinished(async () => {
      await again.stop()
    })
    for (const route of created) {
      const found = await fetch(`${again.origin}/v1/routing/${route.id}`, { headers: auth })
      assert.deepStrictEqual(await found.json(), route)
    }
  })
})
