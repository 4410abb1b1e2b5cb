/**
 * Security: the static authenticator compares a presented token with every configured one in constant time.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Redacted } from "effect"
import * as fc from "fast-check"
import * as Authenticator from "route-registry/Authenticator"

/**
 * Runs `f` while counting the calls of `String.prototype.charCodeAt` made on any of `strings` (the presented and
 * configured tokens): the static authenticator compares tokens character by character with it, so the count is
 * the number of character comparisons. Deterministic: no clock involved.
 */
const TOKEN68_CHARS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~+/"

const countCharCodeAt = <A>(strings: ReadonlyArray<string>, f: () => A): readonly [A, number] => {
  const watched = new Set(strings)
  const original = String.prototype.charCodeAt
  let count = 0
  String.prototype.charCodeAt = function(this: string, index: number) {
    if (watched.has(this)) count++
    return original.call(this, index)
  }
  // Restored as soon as `f` returns, whatever it does: every other string operation of the run goes through it.
  try {
    return [f(), count] as const
  } finally {
    String.prototype.charCodeAt = original
  }
}

const comparisons = (configured: ReadonlyArray<string>, presented: string) => {
  const authenticator = Authenticator.makeStaticTokens(
    configured.map((token, i) => ({ token: Redacted.make(token), scopes: ["routes:read"], id: `t${i}` }))
  )
  const [exit, count] = countCharCodeAt(
    [...configured, presented],
    () => Effect.runSyncExit(authenticator.authenticate(Redacted.make(presented)))
  )
  return { accepted: Exit.isSuccess(exit), count }
}

describe("constant-time token comparison", () => {
  const configured = ["tok-AAAAAAAAAAAAAAAAAAAA", "tok-BBBBBBBBBBBBBBBBBBBB", "tok-CCCCCCCCCCCCCCCCCCCC"]
  const first = configured[0]!
  const last = configured[2]!

  it("the same number of character comparisons whichever token matches, or none, wherever they differ", () => {
    const cases = {
      "matches the first token": first,
      "matches the last token": last,
      "matches none": "xyz-QQQQQQQQQQQQQQQQQQQQ",
      "differs from the first token at its first character": "X" + first.slice(1),
      "differs from the first token at its last character": first.slice(0, -1) + "X",
      "differs from the last token at its last character": last.slice(0, -1) + "X"
    }
    const counts = Object.entries(cases).map(([name, presented]) => {
      const { accepted, count } = comparisons(configured, presented)
      assert.strictEqual(accepted, configured.includes(presented), name)
      return [name, count] as const
    })
    for (const [name, count] of counts) {
      assert.strictEqual(count, counts[0]![1], `${name}: ${JSON.stringify(counts)}`)
    }
    // Every configured token is walked over the whole presented token (fewer means an early exit, or a comparison
    // this test cannot observe).
    assert.isAtLeast(counts[0]![1], first.length * configured.length, JSON.stringify(counts))
  })

  it("for any configured list, the count depends only on the presented token's length (property)", () => {
    fc.assert(
      fc.property(
        // Configured tokens must be well formed (letters, digits, - . _ ~ + /, then = padding).
        fc.uniqueArray(fc.string({ unit: fc.constantFrom(...TOKEN68_CHARS), minLength: 1, maxLength: 16 }), {
          minLength: 1,
          maxLength: 6
        }),
        fc.nat(),
        fc.integer({ min: 1, max: 16 }),
        fc.nat(),
        (configured, pick, length, seed) => {
          // Two presented tokens of one length: one a configured token (when one has that length) or a
          // near-miss of it, the other unrelated.
          const target = configured[pick % configured.length]!
          const a = target.length === length ? target : target.padEnd(length, "x").slice(0, length)
          const b = Array.from({ length }, (_, i) => String.fromCharCode(33 + ((seed + i * 7) % 90))).join("")
          const near = a.slice(0, seed % length) + (a[seed % length] === "#" ? "%" : "#") + a.slice((seed % length) + 1)
          const counts = [a, b, near].map((presented) => comparisons(configured, presented).count)
          assert.isAtLeast(counts[0]!, length * configured.length)
          assert.deepStrictEqual(
            counts,
            [counts[0]!, counts[0]!, counts[0]!],
            JSON.stringify({ configured, a, b, near })
          )
        }
      ),
      { numRuns: 1000 }
    )
  })
})
