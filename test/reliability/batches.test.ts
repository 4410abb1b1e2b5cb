/**
 * docs/batches.md's "One step everywhere" with real processes: a registry (`npm start`) applies batches that change
 * every one of its routes at once, while a follower (`npm start` with FOLLOW_URL, a process of its own) is read again
 * and again between the events its stream brings. Each read of the follower's table (one page of its listing, read in
 * one step) finds every route as of one batch: never some routes before a batch and others after it. Each batch is
 * waited for on the follower before the next is sent, so the reads fall between events, before and after each one.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as Spawned from "../utils/spawned.js"
import { eventually } from "../utils/waiting.js"

const TOKEN = "batches-test-token"
const ROUTES = 40
const BATCHES = 30
const headers = { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" }

interface Listed {
  readonly items: ReadonlyArray<{ readonly handler: string; readonly tags?: ReadonlyArray<string> }>
}

const batch = async (origin: string, operations: ReadonlyArray<unknown>) => {
  const answer = await fetch(`${origin}/v1/routing/batch`, {
    method: "POST",
    headers,
    body: JSON.stringify({ operations })
  })
  assert.strictEqual(answer.status, 200, await answer.clone().text())
  return await answer.json() as { results: ReadonlyArray<{ route: { id: string } }> }
}

// The batch each route of one read of the table was last changed by (its tag), and its handler.
const read = async (origin: string): Promise<Array<string>> => {
  const answer = await fetch(`${origin}/v1/routing?limit=1000&pathPrefix=/batch/`, { headers })
  assert.strictEqual(answer.status, 200)
  return ((await answer.json()) as Listed).items.map((route) => `${route.tags?.[0]} ${route.handler}`)
}

// Batch k gives every route the tag v<k> and a handler that alternates between the demo catalog's two echoes.
const state = (k: number) => `v${k} ${k % 2 === 0 ? "echo" : "echo2"}`

describe("a follower in a process of its own while batches stream", () => {
  it("never holds part of a batch: every read of its table between events finds all routes at one batch", async () => {
    const registry = await Spawned.start("examples/server.ts", { ROUTING_ADMIN_TOKENS: TOKEN, DASHBOARD: "0" })
    let follower: Spawned.Running | undefined
    try {
      const created = await batch(
        registry.origin,
        Array.from({ length: ROUTES }, (_, i) => ({
          op: "create",
          route: { method: "GET", path: `/batch/${i}`, handler: "echo", tags: ["v0"] }
        }))
      )
      const ids = created.results.map((result) => result.route.id)
      follower = await Spawned.start("examples/server.ts", {
        FOLLOW_URL: registry.origin,
        FOLLOW_TOKEN: TOKEN,
        ROUTING_READ_TOKENS: TOKEN,
        DASHBOARD: "0"
      })
      const origin = follower.origin
      const reads: Array<Array<string>> = []
      let writing = true
      const reader = (async () => {
        while (writing) reads.push(await read(origin))
      })()
      for (let k = 1; k <= BATCHES; k++) {
        await batch(
          registry.origin,
          ids.map((id) => ({
            op: "update",
            id,
            patch: { handler: k % 2 === 0 ? "echo" : "echo2", tags: [`v${k}`] }
          }))
        )
        await Effect.runPromise(
          eventually(`batch ${k} on the follower`, async () => (await read(origin)).includes(state(k)), 30_000)
        )
      }
      writing = false
      await reader
      const torn = reads.filter((routes) => routes.length !== ROUTES || new Set(routes).size !== 1)
      assert.deepStrictEqual(torn.slice(0, 3), [], `${torn.length} of ${reads.length} reads hold part of a batch`)
      // The reads saw the batches one after another, not only the last one.
      const seen = new Set(reads.map((routes) => routes[0]))
      assert.isAtLeast(seen.size, BATCHES / 2, [...seen].join(", "))
    } finally {
      await follower?.stop()
      await registry.stop()
    }
  })
})
