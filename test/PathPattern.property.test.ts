/**
 * The JSON Schema `pattern` of a path (src/internal/route/pathPattern.ts) against `Route.parsePath`: every accepted path
 * matches it, and every refused path does not, except those refused only for a name used twice (a rule the pattern
 * cannot say; the document says it in words) and those over 2048 characters (the schema's `maxLength`).
 */
import { assert, describe, it } from "@effect/vitest"
import { Either } from "effect"
import * as fc from "fast-check"
import * as Route from "route-registry/Route"
import { PATH_PATTERN } from "../src/internal/route/pathPattern.js"
import {
  adversarialChar,
  adversarialPath,
  grammarPath,
  mixedSegment,
  mutatedPath,
  paramName,
  staticSegment
} from "./utils/arbitraries.js"

// JSON Schema validators run patterns with and without the Unicode flag: both must agree.
const patterns = [new RegExp(PATH_PATTERN, "u"), new RegExp(PATH_PATTERN)]

const VALID_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,63}$/

// Where each parameter's ":" or a wildcard's "*" (at the start of a segment) is whose (valid) name came earlier in
// the path already.
const repeatedNameAt = (path: string): Set<number> => {
  const at = new Set<number>()
  const seen = new Set<string>()
  for (const match of path.matchAll(/(?<=^|\/)\*([A-Za-z0-9_]+)|:([A-Za-z0-9_]+)/g)) {
    const name = match[1] ?? match[2]!
    if (!VALID_NAME.test(name)) continue
    if (seen.has(name)) at.add(match.index)
    seen.add(name)
  }
  return at
}

// Valid paths with one name used again later, as a parameter, in a mixed segment or as the wildcard: refused for
// that reason only.
const repeatedParam = fc
  .tuple(
    paramName,
    fc.array(fc.oneof(staticSegment, paramName.map((n) => ":" + n)), { maxLength: 4 }),
    fc.constantFrom(
      (n: string) => ":" + n,
      (n: string) => "v:" + n,
      (n: string) => ":" + n + ".json",
      (n: string) => "*" + n
    )
  )
  .map(([name, middle, again]) => {
    const unique = middle.filter((s, i) => s !== ":" + name && middle.indexOf(s) === i)
    return ["", ":" + name, ...unique, again(name)].join("/")
  })

// Mixed segments of the grammar, with a name or two changed to break a rule of the parameters around them.
const brokenMixed = fc
  .tuple(mixedSegment, fc.constantFrom(":", ":1", "::", "*", ":a:b", "*x", "{", "}"), fc.nat())
  .map(([segment, breaking, at]) => {
    const i = at % (segment.length + 1)
    return "/x/" + segment.slice(0, i) + breaking + segment.slice(i)
  })

const anyString = fc.oneof(
  fc.string({ unit: "binary", maxLength: 48 }).map((s) => "/" + s),
  fc.string({ unit: adversarialChar, maxLength: 48 })
)

// Each source with whether it yields paths the pattern refuses (the first two yield only paths it matches).
const sources: ReadonlyArray<
  readonly [name: string, arbitrary: fc.Arbitrary<string>, runs: number, yieldsRefusals: boolean]
> = [
  ["strings generated from the grammar", grammarPath, 3000, false],
  ["paths with a name used twice", repeatedParam, 1000, false],
  ["mixed segments with a rule broken", brokenMixed, 3000, true],
  ["random strings over an adversarial alphabet", adversarialPath, 5000, true],
  ["mutations of valid paths", mutatedPath, 5000, true],
  ["any string", anyString, 3000, true]
]

describe("PATH_PATTERN", () => {
  for (const [name, arbitrary, numRuns, yieldsRefusals] of sources) {
    it(`matches exactly what parsePath accepts, but for repeated names and length: ${name}`, () => {
      let matched = 0
      let unmatched = 0
      fc.assert(
        fc.property(arbitrary, (path) => {
          if (path.length > Route.MAX_PATH_LENGTH) return
          const result = Route.parsePath(path)
          const repeated = repeatedNameAt(path)
          const onlyRepeated = Either.isLeft(result) &&
            result.left.every((issue) => repeated.has(issue.index) && issue.message.includes("is already used"))
          const expected = Either.isRight(result) || onlyRepeated
          if (arbitrary === repeatedParam) assert.isTrue(onlyRepeated, JSON.stringify(path))
          for (const pattern of patterns) {
            assert.strictEqual(
              pattern.test(path),
              expected,
              `${JSON.stringify(path)}: parsePath ${
                Either.isRight(result) ? "accepts" : `refuses: ${JSON.stringify(result.left.slice(0, 3))}`
              }`
            )
          }
          if (expected) matched++
          else unmatched++
        }),
        { numRuns }
      )
      // The comparison means something only if both answers occur.
      assert.isAbove(matched, 0)
      if (yieldsRefusals) assert.isAbove(unmatched, 0)
    })
  }

  it("a path refused only for a repeated name matches: the document says that rule in words", () => {
    for (const path of ["/a/:id/b/:id", "/enterprises/:enterprise/teams/:enterprise-team", "/:rest/*rest"]) {
      assert.isTrue(Either.isLeft(Route.parsePath(path)))
      assert.isTrue(patterns[0]!.test(path))
    }
  })

  it("answers a path of 2048 characters at once (no catastrophic backtracking)", () => {
    for (const path of ["/" + "a".repeat(2046) + "?", "/" + ".".repeat(2047), "/" + "%2".repeat(682)]) {
      assert.isFalse(patterns[0]!.test(path + "/"))
    }
  })
})
