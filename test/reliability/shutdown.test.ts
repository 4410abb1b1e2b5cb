/**
 * SIGTERM while requests are in flight: every one is answered, the process exits 0, and no acknowledged create
 * is lost.
 */
import { assert, describe, it, onTestFinished } from "@effect/vitest"
import { Effect } from "effect"
import * as Http from "node:http"
import { ADMIN } from "../utils/httpContract.js"
import { type Running, start, START_MS } from "../utils/spawned.js"
import * as TestDatabase from "../utils/TestDatabase.js"
import { eventually } from "../utils/waiting.js"

const IN_FLIGHT = 50
const auth = { authorization: `Bearer ${ADMIN}` }

interface Answer {
  readonly status: number | undefined
  readonly text: string
}

/**
 * Starts IN_FLIGHT creates, each on a connection of its own, that send half their body once the server asks for it;
 * `inHand` resolves when the server has asked for every one (its `100 Continue`, sent as the handler starts reading
 * the body: the request is in flight on the server, whatever the machine's load), `finish` sends the rest.
 */
const startCreates = (origin: string) => {
  const releases: Array<() => void> = []
  const asked: Array<Promise<void>> = []
  const responses = Array.from({ length: IN_FLIGHT }, (_, i) => {
    const body = Buffer.from(JSON.stringify({ method: "GET", path: `/shutdown/${i}`, handler: "h" }))
    const request = Http.request(`${origin}/v1/routing`, {
      method: "POST",
      agent: false,
      headers: {
        ...auth,
        "content-type": "application/json",
        "content-length": String(body.length),
        expect: "100-continue"
      }
    })
    asked.push(
      new Promise((resolve, reject) => {
        request.once("continue", () => {
          request.write(body.subarray(0, 10))
          resolve()
        })
        request.once("error", reject)
      })
    )
    releases.push(() => request.end(body.subarray(10)))
    return new Promise<Answer>((resolve, reject) => {
      request.once("error", reject)
      request.once("response", (response) => {
        let text = ""
        response.setEncoding("utf8")
        response.on("data", (chunk: string) => (text += chunk))
        response.once("end", () => resolve({ status: response.statusCode, text }))
        response.once("error", reject)
      })
    })
  })
  return {
    responses,
    inHand: Promise.all(asked),
    finish: () => releases.forEach((release) => release())
  }
}

const refused = (origin: string) => fetch(`${origin}/v1/routing/x`, { headers: auth }).then(() => false, () => true)

const shutDownUnderLoad = async (server: Running) => {
  const { finish, inHand, responses } = startCreates(server.origin)
  await inHand
  const exited = server.stop("SIGTERM")
  // It stops accepting connections (as soon as the process has handled the signal)...
  await Effect.runPromise(
    eventually(
      () => `a new connection still accepted after SIGTERM:\n${server.output()}`,
      () => refused(server.origin),
      START_MS
    )
  )
  // ...but answers every request already in flight.
  finish()
  const answered = await Promise.all(responses)
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
