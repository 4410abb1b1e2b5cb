/**
 * docs/reliability.md, "Failover", as an operator would try it (bench/failover.ts, which `npm run bench:failover` runs
 * several times): two `npm start` registries and a follower, writers on both registries, the primary killed, the
 * address on the still read-only standby for 2.5 s, then the standby promoted. No acknowledged create is lost, no
 * revision is answered twice, a refused write is a 503 (never a 500), writes succeed again within 5 s of the promotion
 * and every process hears them, the follower is sent no `reset`, and every process ends serving exactly the rows.
 */
import { assert, describe, it } from "@effect/vitest"
import { describe as describeRun, failover } from "../../bench/failover.js"

describe("a Postgres failover under load", () => {
  it("primary killed, the address on the read-only standby, then the standby promoted", async () => {
    const figures = await failover({ standbyMillis: 2_500, beforeMillis: 2_000, afterMillis: 6_000, compiled: false })
    console.log(`failover: ${describeRun(figures)}`)
    assert.isAbove(figures.acknowledged, 0)
    assert.strictEqual(figures.lost, 0, "acknowledged creates missing on the new primary")
    assert.strictEqual(figures.found, figures.acknowledged)
    assert.strictEqual(figures.reusedRevisions, 0, "revisions answered to two creates")
    assert.deepStrictEqual(Object.keys(figures.statuses).filter((status) => status !== "201" && status !== "503"), [])
    assert.isAtMost(figures.recoveryMillis, 5_000, "the first write after the promotion")
    assert.isAtMost(figures.caughtUpMillis, 5_000, "every process serving a write made after the promotion")
    assert.strictEqual(figures.followerResets, 0)
    assert.deepStrictEqual(figures.differences.slice(0, 20), [])
    for (const ready of figures.readiness) {
      assert.strictEqual(ready.reachable, true, JSON.stringify(ready))
      assert.strictEqual(ready.following, "notifications", JSON.stringify(ready))
    }
  })
})
