/**
 * docs/resilience.md with real processes: a follower (`npm start` with FOLLOW_URL and SNAPSHOT_FILE) is killed with
 * SIGKILL at random instants, 20 times (two followers at once, each with a snapshot file of its own), while a writer
 * pours creates and deletes into its registry. After every kill the snapshot on disk is a complete table of one
 * revision, exactly the registry's then, and every restart routes from it (test/utils/killLoop.ts;
 * bench/resilience.ts does it 200 times). Then the last follower catches up with the registry with no reset.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import * as KillLoop from "../utils/killLoop.js"
import * as Spawned from "../utils/spawned.js"

const TOKEN = "killed-test-token"

describe("a follower killed with SIGKILL while changes pour in", () => {
  it("leaves a complete snapshot of some revision after every kill, and every restart routes from it", async () => {
    const dir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "route-registry-killed-"))
    const registry = await Spawned.start("examples/server.ts", { ROUTING_ADMIN_TOKENS: TOKEN, DASHBOARD: "0" })
    try {
      const outcome = await KillLoop.run({
        kills: 20,
        token: TOKEN,
        registry: registry.origin,
        snapshotFile: Path.join(dir, "table.snapshot"),
        maxLifeMillis: 2_500,
        // Two followers at once, ten kills each: twenty starts one after another outlast the test's timeout on a
        // loaded machine (184 s at load 30).
        lanes: 2,
        startFollower: async (snapshotFile) => {
          const follower = await Spawned.start("examples/server.ts", {
            FOLLOW_URL: registry.origin,
            FOLLOW_TOKEN: TOKEN,
            SNAPSHOT_FILE: snapshotFile,
            ROUTING_READ_TOKENS: TOKEN,
            DASHBOARD: "0"
          })
          return { origin: follower.origin, output: follower.output, kill: () => follower.stop("SIGKILL") }
        }
      })
      assert.deepStrictEqual(outcome.problems, [])
      // Most kills find a snapshot (a follower killed before its first write leaves the one before).
      assert.isAtLeast(outcome.checked, 10, JSON.stringify(outcome))
      assert.isAtLeast(outcome.fromSnapshot, 10, JSON.stringify(outcome))
      // With the registry gone, a new follower starts from the snapshot and serves its routes; /readyz says so.
      await registry.stop()
      const alone = await Spawned.start("examples/server.ts", {
        FOLLOW_URL: registry.origin,
        FOLLOW_TOKEN: TOKEN,
        SNAPSHOT_FILE: Path.join(dir, "table.snapshot.0"),
        ROUTING_READ_TOKENS: TOKEN,
        DASHBOARD: "0"
      })
      try {
        const ready = await (await fetch(`${alone.origin}/readyz`)).json() as Record<string, unknown>
        assert.strictEqual(ready.source, "snapshot")
        assert.isNumber(ready.stalenessMillis)
        const listed = await (await fetch(`${alone.origin}/v1/routing?limit=1`, {
          headers: { authorization: `Bearer ${TOKEN}` }
        })).json() as { items: Array<{ path: string }> }
        assert.strictEqual((await fetch(alone.origin + listed.items[0]!.path)).status, 200)
      } finally {
        await alone.stop("SIGKILL")
      }
    } finally {
      await registry.stop()
      Fs.rmSync(dir, { recursive: true, force: true })
    }
  })
})
