/**
 * The JSON Schema `pattern` of a path (src/internal/route/pathPattern.ts) against `Route.parsePath`: every accepted path
 * matches it, and every refused path does not, except those refused only for a parameter name used twice (a rule the
 * pattern cannot say; the document says it in words) and those over 2048 characters (the schema's `maxLength`).
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
  mutatedPath,
  paramName,
  staticSegment
} from "./utils/arbitraries.js"

// JSON Schema validators run patterns with and without the Unicode flag: both must agree.
const patterns = [new RegExp(PATH_PATTERN, "u"), new RegExp(PATH_PATTERN)]

const VALID_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,63}$/

// Where each parameter segment starts whose (valid) name an earlier segment already used.
const repeatedParamStarts = (path: string): Set<number> => {
  const starts = new Set<number>()
  const seen = new Set<string>()
  let start = 1
  for (const part of path.slice(1).split("/")) {
    const name = part.slice(1)
    if (part.startsWith(":") && VALID_NAME.test(name)) {
      if (seen.has(name)) starts.add(start)
      seen.add(name)
    }
    start += part.length + 1
  }
  return starts
}

// Valid paths with one parameter name used again later: refused for that reason only.
const repeatedParam = fc
  .tuple(paramName, fc.array(fc.oneof(staticSegment, paramName.map((n) => ":" + n)), { maxLength: 4 }))
  .map(([name, middle]) => {
    const unique = middle.filter((s, i) => s !== ":" + name && middle.indexOf(s) === i)
    return ["", ":" + name, ...unique, ":" + name].join("/")
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
  ["paths with a parameter name used twice", repeatedParam, 1000, false],
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
          const repeated = repeatedParamStarts(path)
          const onlyRepeated = Either.isLeft(result) && result.left.every((issue) => repeated.has(issue.index))
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

  it("a path refused only for a repeated parameter name matches: the document says that rule in words", () => {
    assert.isTrue(Either.isLeft(Route.parsePath("/a/:id/b/:id")))
    assert.isTrue(patterns[0]!.test("/a/:id/b/:id"))
  })

  it("answers a path of 2048 characters at once (no catastrophic backtracking)", () => {
    for (const path of ["/" + "a".repeat(2046) + "?", "/" + ".".repeat(2047), "/" + "%2".repeat(682)]) {
      assert.isFalse(patterns[0]!.test(path + "/"))
    }
  })
})
