/**
 * Property-based tests of the path parser and the create-body validator (the route rules): random and
 * adversarial input never throws, the parser accepts exactly the grammar (checked against an independent oracle,
 * test/utils/oracle.ts), what it accepts round-trips byte for byte through both stores, and what it refuses
 * is reported with positions.
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { Effect, Either, Layer, ManagedRuntime, Schema } from "effect"
import * as fc from "fast-check"
import * as Route from "route-registry/Route"
import * as RouteRepository from "route-registry/RouteRepository"
import {
  adversarialChar,
  adversarialPath,
  createBody,
  grammarPath,
  methodFor,
  mutatedPath,
  segmentCountPath
} from "./utils/arbitraries.js"
import { expectedGroups, groupOf, knownPath, mustReport, oracle, splitsSurrogatePair } from "./utils/oracle.js"
import * as TestDatabase from "./utils/TestDatabase.js"

// ---------------------------------------------------------------------------------------------------------------
// The path parser
// ---------------------------------------------------------------------------------------------------------------

const anyString = fc.oneof(
  fc.string({ unit: "binary", maxLength: 64 }),
  fc.string({ unit: "binary-ascii", maxLength: 64 }),
  fc.string({ unit: "grapheme", maxLength: 32 }),
  fc.string({ unit: "grapheme-composite", maxLength: 16 }),
  adversarialPath,
  fc.string({ unit: adversarialChar, minLength: 2000, maxLength: 2100 }).map((s) => "/" + s)
)

const parse = (path: string) => Route.parsePath(path)

/** A path for a failure message: whole when short, else the part around `at`. */
// The start of a text as the messages quote it: at most 32 characters, then "…".
const quoted = (text: string) => text.length <= 32 ? JSON.stringify(text) : `${JSON.stringify(text.slice(0, 32))}…`

const show = (path: string, at = 0) =>
  path.length <= 120
    ? JSON.stringify(path)
    : `…${JSON.stringify(path.slice(Math.max(0, at - 40), at + 40))}… (${path.length} chars)`

/** Whole-path problems that have no single position: the empty path and one over 2048 characters. */
const wholePath = (path: string) => path.length === 0 || path.length > 2048

const sources: ReadonlyArray<readonly [name: string, arbitrary: fc.Arbitrary<string>, runs: number]> = [
  ["strings generated from the grammar", grammarPath, 4000],
  ["random strings over an adversarial alphabet", adversarialPath, 6000],
  ["mutations of valid paths", mutatedPath, 6000]
]

describe("Route.parsePath (property-based)", () => {
  it("never throws, and answers a path or a non-empty list of issues, for any string", () => {
    fc.assert(
      fc.property(anyString, (path) => {
        const result = parse(path)
        if (Either.isLeft(result)) assert.isAbove(result.left.length, 0)
        else assert.strictEqual(result.right.path, path)
      }),
      { numRuns: 5000 }
    )
  })

  for (const [name, arbitrary, numRuns] of sources) {
    it(`accepts exactly the grammar: ${name}`, () => {
      let accepted = 0
      let refused = 0
      fc.assert(
        fc.property(arbitrary, (path) => {
          const expected = oracle(path)
          const result = parse(path)
          assert.strictEqual(
            Either.isRight(result),
            expected !== undefined,
            `${show(path)}: oracle ${expected === undefined ? "refuses" : "accepts"}, parsePath ${
              Either.isRight(result) ? "accepts" : `refuses: ${JSON.stringify(result.left.slice(0, 3))}`
            }`
          )
          if (expected === undefined) refused++
          else accepted++
        }),
        { numRuns }
      )
      // The comparison means something only if both answers occur.
      assert.isAbove(accepted, 0)
      if (arbitrary !== grammarPath) assert.isAbove(refused, 0)
    })
  }

  it("the grammar generator yields valid paths (up to 2048 characters and 64 segments) by construction", () => {
    fc.assert(
      fc.property(grammarPath, (path) => {
        const segments = path === "/" ? 0 : path.split("/").length - 1
        assert.strictEqual(oracle(path) !== undefined, path.length <= 2048 && segments <= 64, JSON.stringify(path))
      }),
      { numRuns: 2000 }
    )
  })

  it("refuses more than 64 segments, naming the count, the limit and where the 65th starts", () => {
    let refused = 0
    fc.assert(
      fc.property(segmentCountPath, (path) => {
        const segments = path.split("/").length - 1
        const result = parse(path)
        if (segments <= 64) return assert.isTrue(Either.isRight(result), show(path))
        refused++
        const at = path.split("/").slice(0, 65).join("/").length + 1
        assert.deepStrictEqual(Either.getOrThrow(Either.flip(result)), [{
          index: at,
          message: `has ${segments} segments, more than the 64 allowed: the 65th starts at index ${at} (${
            quoted(path.slice(at))
          }); shorten the path to at most 64 segments`
        }])
      }),
      { numRuns: 500 }
    )
    assert.isAbove(refused, 0)
  })

  it("what it accepts is kept byte for byte, with the oracle's segments, parameters and shape", () => {
    fc.assert(
      fc.property(fc.oneof(grammarPath, mutatedPath), (path) => {
        const expected = oracle(path)
        const result = parse(path)
        if (expected === undefined || Either.isLeft(result)) return
        const parsed = result.right
        assert.strictEqual(parsed.path, path)
        assert.strictEqual(parsed.shape, expected.shape)
        assert.deepStrictEqual(parsed.params, expected.params)
        assert.deepStrictEqual(parsed.segments, expected.segments)
        assert.strictEqual(Route.shapeOf(parsed.path), expected.shape)
      }),
      { numRuns: 4000 }
    )
  })

  // Short strings, so a failure shrinks quickly to a readable counterexample.
  const refusedPaths = fc.oneof(adversarialPath, mutatedPath.filter((path) => path.length <= 256))

  it("every issue of a refused path has an index within the path and a message naming that position", () => {
    fc.assert(
      fc.property(fc.oneof(refusedPaths, anyString), (path) => {
        const result = parse(path)
        if (Either.isRight(result)) return
        // Plain checks in the loop (a long path has hundreds of issues); assert only on a failure.
        for (const issue of result.left) {
          const where = `${show(path, issue.index)}: ${JSON.stringify(issue)}`
          if (!Number.isInteger(issue.index) || issue.index < 0 || issue.index > path.length) {
            assert.fail(`index outside [0, ${path.length}]: ${where}`)
          }
          if (issue.message.trim().length === 0) assert.fail(`empty message: ${where}`)
          const names = wholePath(path)
            ? (path.length === 0 ? /must not be empty/ : /at most 2048 characters/).test(issue.message)
            : issue.message.includes(`index ${issue.index}`)
          if (!names) assert.fail(`the message does not name its position: ${where}`)
        }
      }),
      { numRuns: 6000 }
    )
  })

  it("every offending part the contract lists is reported at its position (all problems at once)", () => {
    fc.assert(
      fc.property(refusedPaths, (path) => {
        const result = parse(path)
        if (Either.isRight(result)) return
        const reported = new Set(result.left.map((issue) => issue.index))
        for (const position of mustReport(path)) {
          assert.isTrue(
            reported.has(position),
            `${show(path, position)}: nothing reported at index ${position} (${
              JSON.stringify(path[position])
            }); issues: ${JSON.stringify(result.left.filter((issue) => Math.abs(issue.index - position) < 4))}`
          )
        }
      }),
      { numRuns: 6000 }
    )
  })

  it("no issue points inside a character: a surrogate pair is reported once, at its start", () => {
    fc.assert(
      fc.property(refusedPaths, (path) => {
        const result = parse(path)
        if (Either.isRight(result)) return
        for (const issue of result.left) {
          assert.isFalse(
            splitsSurrogatePair(path, issue.index),
            `${show(path, issue.index)}: issue inside a surrogate pair: ${JSON.stringify(issue)}`
          )
        }
      }),
      { numRuns: 6000 }
    )
  })

  it("no issue points inside a character, in parameter names either", () => {
    fc.assert(
      fc.property(fc.string({ unit: adversarialChar, maxLength: 12 }).map((name) => "/:" + name), (path) => {
        const result = parse(path)
        if (Either.isRight(result)) return
        for (const issue of result.left) {
          assert.isFalse(
            splitsSurrogatePair(path, issue.index),
            `${show(path, issue.index)}: issue inside a surrogate pair: ${JSON.stringify(issue)}`
          )
        }
      }),
      { numRuns: 3000 }
    )
  })

  it("accepted paths round-trip byte for byte through the memory store", () => {
    fc.assert(
      fc.property(fc.oneof(grammarPath, mutatedPath), (path) => {
        if (oracle(path) === undefined) return
        const stored = Effect.runSync(Effect.gen(function*() {
          const repository = yield* RouteRepository.makeMemory
          const input = yield* Route.decodeCreate({ method: "GET", path, handler: "h" })
          const created = yield* repository.create(input)
          return (yield* repository.findById(created.id)).path
        }))
        assert.strictEqual(stored, path)
      }),
      { numRuns: 2000 }
    )
  })

  describe("through the Postgres store", () => {
    let runtime: ManagedRuntime.ManagedRuntime<RouteRepository.RouteRepository, unknown>
    beforeAll(async () => {
      runtime = ManagedRuntime.make(TestDatabase.storeLayer().pipe(Layer.provide(TestDatabase.layer())))
      await runtime.runPromise(Effect.void)
    })
    afterAll(() => runtime.dispose())

    it("accepted paths round-trip byte for byte through the Postgres store", async () => {
      let n = 0
      await fc.assert(
        fc.asyncProperty(grammarPath.filter((path) => oracle(path) !== undefined), async (path) => {
          const method = methodFor(n++) // a method of its own, so no two creates conflict
          const [created, found] = await runtime.runPromise(Effect.gen(function*() {
            const repository = yield* RouteRepository.RouteRepository
            const input = yield* Route.decodeCreate({ method, path, handler: "h" })
            const created = yield* repository.create(input)
            const found = yield* repository.findById(created.id)
            // Gone again, so the runs never pile up more distinct methods than the registry holds.
            yield* repository.remove(created.id)
            return [created, found] as const
          }))
          assert.strictEqual(created.path, path)
          assert.strictEqual(found.path, path)
          assert.strictEqual(found.method, method)
        }),
        { numRuns: 150 }
      )
    })
  })
})

// ---------------------------------------------------------------------------------------------------------------
// The create-body validator
// ---------------------------------------------------------------------------------------------------------------

const checkValidation = (body: unknown) => {
  const result = Route.validateCreate(body)
  if (Either.isRight(result)) {
    const record = body as Record<string, unknown>
    assert.deepStrictEqual(result.right, {
      method: record.method,
      path: record.path,
      middleware: record.middleware ?? [],
      handler: record.handler
    } as unknown as Route.CreateRoute)
    return result
  }
  assert.isAbove(result.left.length, 0)
  for (const issue of result.left) {
    assert.isTrue(knownPath(body, issue.path), `unexpected issue path ${JSON.stringify(issue.path)}`)
    assert.isAbove(issue.message.trim().length, 0)
  }
  return result
}

describe("Route.validateCreate (property-based)", () => {
  it("never throws on arbitrary values, and reports only known field paths", () => {
    fc.assert(
      fc.property(
        fc.anything({
          withNullPrototype: true,
          withBoxedValues: true,
          withSparseArray: true,
          withMap: true,
          withSet: true,
          withDate: true,
          withTypedArray: true,
          withBigInt: true,
          withObjectString: true
        }),
        (body) => void checkValidation(body)
      ),
      { numRuns: 3000 }
    )
  })

  it("never throws on arbitrary JSON values, and reports only known field paths", () => {
    fc.assert(fc.property(fc.jsonValue(), (body) => void checkValidation(body)), { numRuns: 3000 })
  })

  it("on create-like bodies: accepts exactly the route rules, reporting each broken field", () => {
    let accepted = 0
    fc.assert(
      fc.property(createBody, (body) => {
        const result = checkValidation(body)
        const expected = expectedGroups(body)
        if (Either.isRight(result)) {
          accepted++
          assert.deepStrictEqual(expected, [], JSON.stringify(body))
        } else {
          const reported = [
            ...new Set(result.left.map((issue) => groupOf(body as Record<string, unknown>, issue.path)))
          ]
          assert.deepStrictEqual(reported.sort(), [...expected].sort(), JSON.stringify({ body, result: result.left }))
        }
      }),
      { numRuns: 6000 }
    )
    assert.isAbove(accepted, 0)
  })

  it("the CreateRoute schema agrees with validateCreate", () => {
    const decode = Schema.decodeUnknownEither(Route.CreateRoute, { errors: "all", onExcessProperty: "error" })
    fc.assert(
      fc.property(createBody, (body) => {
        assert.strictEqual(
          Either.isRight(decode(body)),
          Either.isRight(Route.validateCreate(body)),
          JSON.stringify(body)
        )
      }),
      { numRuns: 1500 }
    )
  })
})
