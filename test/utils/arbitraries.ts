/**
 * fast-check generators for the property-based suites: path patterns valid by construction (from the path
 * grammar: static, parameter, mixed and wildcard segments), adversarial strings, mutations of valid paths, and create bodies from valid to far off.
 */
import * as fc from "fast-check"
import { UNRESERVED } from "./oracle.js"

// ---------------------------------------------------------------------------------------------------------------
// Generators
// ---------------------------------------------------------------------------------------------------------------

const LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
const DIGITS = "0123456789"
const STATIC_PUNCTUATION = "-._~!$&'+,;=@"

/** A percent-escape the grammar allows: uppercase hex of a byte that is not a letter, digit or `- . _ ~`. */
export const allowedEscape = fc
  .integer({ min: 0, max: 255 })
  .filter((b) => !UNRESERVED.test(String.fromCharCode(b)))
  .map((b) => "%" + b.toString(16).toUpperCase().padStart(2, "0"))

const staticUnit = fc.oneof(
  { weight: 6, arbitrary: fc.constantFrom(...LETTERS, ...DIGITS) },
  { weight: 3, arbitrary: fc.constantFrom(...STATIC_PUNCTUATION) },
  { weight: 2, arbitrary: allowedEscape }
)

export const staticSegment = fc
  .array(staticUnit, { minLength: 1, maxLength: 12 })
  .map((units) => units.join(""))
  .filter((s) => s !== "." && s !== "..")

export const paramName = fc
  .tuple(
    fc.constantFrom(...LETTERS, "_"),
    fc.oneof(
      { weight: 5, arbitrary: fc.string({ unit: fc.constantFrom(...LETTERS, ...DIGITS, "_"), maxLength: 8 }) },
      { weight: 1, arbitrary: fc.string({ unit: fc.constantFrom(...LETTERS, ...DIGITS, "_"), maxLength: 63 }) }
    )
  )
  .map(([first, rest]) => first + rest)

// Static text that may follow a parameter: it starts with a unit outside [A-Za-z0-9_], where the name ends.
const afterName = fc
  .tuple(
    fc.oneof(fc.constantFrom(..."-.~!$&'+,;=@"), allowedEscape),
    fc.array(staticUnit, { maxLength: 4 })
  )
  .map(([first, rest]) => first + rest.join(""))

/**
 * A mixed segment: optional static text, then parameters each followed by static text that ends its name (the last
 * one's may be left out), such as `:file.:ext`, `v:major`, `:base...:head`.
 */
export const mixedSegment = fc
  .tuple(
    fc.array(staticUnit, { maxLength: 4 }).map((units) => units.join("")),
    fc.array(fc.tuple(paramName, afterName), { minLength: 1, maxLength: 3 }),
    fc.boolean()
  )
  .map(([prefix, params, open]) => {
    const text = prefix + params.map(([name, after]) => ":" + name + after).join("")
    return open ? text.slice(0, text.length - params.at(-1)![1].length) : text
  })

export const wildcardSegment = paramName.map((name) => "*" + name)

const segment = fc.oneof(
  { weight: 3, arbitrary: staticSegment },
  { weight: 2, arbitrary: paramName.map((name) => ":" + name) },
  { weight: 1, arbitrary: mixedSegment }
)

/** The parameter and wildcard names of a valid segment (static text holds no ":" or "*"). */
const namesOf = (segment: string) => [...segment.matchAll(/[:*]([A-Za-z0-9_]+)/g)].map((m) => m[1]!)

/**
 * Drops every segment that uses a name already used, so the result is valid by construction; the last segment is
 * a wildcard when `wildcard` is given.
 */
const uniqueParams = (segments: ReadonlyArray<string>, wildcard: string | null = null) => {
  const seen = new Set<string>()
  return [...segments, ...(wildcard === null ? [] : [wildcard])].filter((s) => {
    const names = namesOf(s)
    if (names.some((name) => seen.has(name)) || new Set(names).size !== names.length) return false
    for (const name of names) seen.add(name)
    return true
  })
}

/** Pads a valid path of fewer than `n - 1` characters with static segments to exactly `n` characters. */
export const padTo = (path: string, n: number): string => {
  let out = path === "/" ? "" : path
  while (out.length < n) {
    const room = n - out.length
    let k = Math.min(60, room - 1)
    if (room - (k + 1) === 1) k -= 1 // never leave room for a lone "/"
    out += "/" + "x".repeat(k)
  }
  return out
}

/** Paths of 60–68 short segments, around the 64-segment limit (all valid but for the count). */
export const segmentCountPath: fc.Arbitrary<string> = fc
  .integer({ min: 60, max: 68 })
  .chain((n) =>
    fc.array(
      fc.oneof(
        { weight: 3, arbitrary: fc.array(staticUnit, { minLength: 1, maxLength: 3 }).map((units) => units.join("")) },
        { weight: 1, arbitrary: fc.constantFrom(":p", ":id", ":_") }
      ),
      { minLength: n, maxLength: n }
    )
  )
  // A parameter's name takes its position, so none is used twice; a lone "." or ".." gets a letter.
  .map((segments) =>
    segments.map((s, i) => (s.startsWith(":") ? `${s}${i}` : s === "." || s === ".." ? `${s}a` : s)).map((s) => "/" + s)
      .join("")
  )

/**
 * Valid paths, generated from the grammar (a few near the 2048-character limit and the 64-segment limit, those over
 * them included).
 */
export const grammarPath: fc.Arbitrary<string> = fc.oneof(
  { weight: 1, arbitrary: fc.constant("/") },
  {
    weight: 12,
    arbitrary: fc
      .tuple(fc.array(segment, { minLength: 1, maxLength: 8 }), fc.option(wildcardSegment, { freq: 4 }))
      .map(([s, wildcard]) => "/" + uniqueParams(s, wildcard).join("/"))
  },
  { weight: 1, arbitrary: wildcardSegment.map((s) => "/" + s) },
  {
    weight: 1,
    arbitrary: fc
      .tuple(fc.array(segment, { minLength: 1, maxLength: 4 }), fc.constantFrom(2046, 2047, 2048, 2049, 2050))
      .map(([s, n]) => padTo("/" + uniqueParams(s).join("/"), n))
  },
  { weight: 1, arbitrary: segmentCountPath }
)

/** Characters that matter to the grammar, weighted towards the ones a parser can get wrong. */
export const adversarialChar: fc.Arbitrary<string> = fc.oneof(
  { weight: 8, arbitrary: fc.constantFrom("/", ":", "%") },
  { weight: 5, arbitrary: fc.constantFrom(..."0123456789ABCDEFabcdef") },
  { weight: 3, arbitrary: fc.constantFrom(".", "?", "#", " ", "*", "(", ")") },
  { weight: 3, arbitrary: fc.constantFrom(...STATIC_PUNCTUATION) },
  { weight: 3, arbitrary: fc.constantFrom(...LETTERS, ...DIGITS, "_") },
  {
    weight: 2,
    arbitrary: fc.constantFrom("é", "\u00a0", "\u0085", "\u2028", "中", "\u0130", "\ufeff", "😀", "\ud800", "\udc00")
  },
  { weight: 1, arbitrary: fc.constantFrom("\u0000", "\t", "\n", "\r", "\u000b", "\u001f", "\u007f") },
  { weight: 1, arbitrary: fc.constantFrom("\\", "<", ">", "\"", "`", "^", "{", "}", "|", "[", "]") }
)

/** Random strings over the adversarial alphabet, most of them starting with "/". */
export const adversarialPath: fc.Arbitrary<string> = fc.oneof(
  { weight: 3, arbitrary: fc.string({ unit: adversarialChar, maxLength: 24 }).map((s) => "/" + s) },
  { weight: 1, arbitrary: fc.string({ unit: adversarialChar, maxLength: 24 }) }
)

type Mutation = {
  readonly kind: "insert" | "delete" | "replace" | "duplicate" | "swap" | "case" | "append"
  readonly at: number
  readonly char: string
  readonly length: number
}

const mutation: fc.Arbitrary<Mutation> = fc.record({
  kind: fc.constantFrom("insert", "delete", "replace", "duplicate", "swap", "case", "append"),
  at: fc.nat(),
  char: adversarialChar,
  length: fc.integer({ min: 1, max: 8 })
})

const mutate = (path: string, m: Mutation): string => {
  const at = m.at % (path.length + 1)
  switch (m.kind) {
    case "insert":
      return path.slice(0, at) + m.char + path.slice(at)
    case "delete":
      return path.slice(0, at) + path.slice(at + m.length)
    case "replace":
      return path.slice(0, at) + m.char + path.slice(at + 1)
    case "duplicate":
      return path.slice(0, at + m.length) + path.slice(at, at + m.length) + path.slice(at + m.length)
    case "swap":
      return path.slice(0, at) + path.slice(at + 1, at + 2) + path.slice(at, at + 1) + path.slice(at + 2)
    case "case":
      return m.length % 2 === 0 ? path.toLowerCase() : path.toUpperCase()
    case "append":
      return path + m.char
  }
}

/** Valid paths with one to three random edits: mostly invalid, some still valid. */
export const mutatedPath: fc.Arbitrary<string> = fc
  .tuple(grammarPath, fc.array(mutation, { minLength: 1, maxLength: 3 }))
  .map(([path, mutations]) => mutations.reduce(mutate, path))

/** A distinct HTTP method for every `n`, so creates in one store never conflict. */
export const methodFor = (n: number): string => {
  let letters = ""
  do {
    letters = String.fromCharCode(65 + (n % 26)) + letters
    n = Math.floor(n / 26)
  } while (n > 0)
  return `P-${letters}`
}

// ---------------------------------------------------------------------------------------------------------------
// Create bodies
// ---------------------------------------------------------------------------------------------------------------

export const nameArb = fc
  .tuple(
    fc.constantFrom(...LETTERS, "_", "$"),
    fc.string({ unit: fc.constantFrom(...LETTERS, ..."0123456789_$.:#/-"), maxLength: 12 })
  )
  .map(([first, rest]) => first + rest)

export const almostName = fc.oneof(
  nameArb,
  fc.constantFrom("", " ", "1abc", "a b", "a\"b", "a'b", "a;b", "a\r\nb", "é", "a*", "-a", ".a", "a".repeat(129)),
  fc.constant("$" + "a".repeat(127)),
  nameArb.map((n) => n + " "),
  fc.string({ maxLength: 8 })
)

export const methodArb = fc.oneof(
  { weight: 6, arbitrary: fc.constantFrom("GET", "POST", "M-SEARCH", "PROPFIND", "A".repeat(32)) },
  {
    weight: 3,
    arbitrary: fc
      .array(fc.string({ unit: fc.constantFrom(..."ABCDEFGHIJKLMNOPQRSTUVWXYZ"), minLength: 1, maxLength: 6 }), {
        minLength: 1,
        maxLength: 4
      })
      .map((words) => words.join("-"))
  },
  {
    weight: 3,
    arbitrary: fc.constantFrom(
      "get",
      "Get",
      "",
      "GET ",
      " GET",
      "GET-",
      "-GET",
      "M--SEARCH",
      "G1",
      "GÉT",
      "A".repeat(33)
    )
  },
  { weight: 1, arbitrary: fc.string({ maxLength: 6 }) },
  { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 1 }) }
)

export const pathArb = fc.oneof(
  { weight: 5, arbitrary: grammarPath },
  { weight: 2, arbitrary: adversarialPath },
  { weight: 2, arbitrary: mutatedPath },
  { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 1 }) }
)

export const middlewareArb = fc.oneof(
  { weight: 6, arbitrary: fc.uniqueArray(nameArb, { maxLength: 5 }) },
  { weight: 3, arbitrary: fc.array(almostName, { maxLength: 6 }) },
  {
    weight: 1,
    arbitrary: fc.integer({ min: 31, max: 34 }).map((n) => Array.from({ length: n }, (_, i) => `m${i}`))
  },
  { weight: 1, arbitrary: fc.array(fc.jsonValue({ maxDepth: 1 }), { maxLength: 3 }) },
  { weight: 1, arbitrary: fc.constantFrom(null, "auth", 1, {}, true) }
)

export const handlerArb = fc.oneof(
  { weight: 6, arbitrary: nameArb },
  { weight: 3, arbitrary: almostName },
  { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 1 }) }
)

export const nearMissKey = fc.constantFrom(
  "id",
  "createdAt",
  "Method",
  "PATH",
  "paths",
  "middlewares",
  "Middleware",
  "handlers",
  "method ",
  " path",
  "méthod",
  "__proto__",
  "constructor",
  "toString",
  "hasOwnProperty",
  "",
  "middleware[9]" // looks like an item path, but no generated list has a bad 10th name
)

/** Bodies with the real keys (each present or not) and values from valid to far off, plus near-miss keys. */
export const createBody = fc
  .tuple(
    fc.record({ method: methodArb, path: pathArb, middleware: middlewareArb, handler: handlerArb }, {
      requiredKeys: []
    }),
    fc.oneof(
      { weight: 3, arbitrary: fc.constant<Record<string, unknown>>({}) },
      { weight: 1, arbitrary: fc.dictionary(nearMissKey, fc.jsonValue({ maxDepth: 1 }), { maxKeys: 2 }) }
    )
  )
  // Through JSON text, as the HTTP core sees a body ("__proto__" becomes an own key, as JSON.parse makes it).
  .map(([fields, extra]) => JSON.parse(JSON.stringify({ ...extra, ...fields })) as unknown)

// ---------------------------------------------------------------------------------------------------------------
// Store operations (the model-based suite)
// ---------------------------------------------------------------------------------------------------------------

// Small alphabets, so that conflicts (renamed parameters, same shape), no-op patches and filter hits are frequent.
// The paths hold "_" and "%" (literal in a prefix) and a capital (byte order is case-sensitive).
const OPERATION_METHODS = ["GET", "POST"] as const
const OPERATION_PATHS = [
  "/",
  "/a",
  "/A",
  "/a/:id",
  "/a/:key",
  "/a/b",
  "/a_b",
  "/a%25",
  "/ab/:x",
  "/ab/:y",
  "/b/:id/c",
  "/b/:k/c"
] as const
const OPERATION_HANDLERS = ["h", "k"] as const
const OPERATION_MIDDLEWARE = ["m", "n", "o"] as const

/** How an update or remove names revisions: not at all, the current one, a stale one, none, or several. */
export interface Preconditioned {
  readonly precondition: "none" | "current" | "stale" | "empty" | "several"
}

export interface RoutePatchFields {
  readonly method?: string
  readonly path?: string
  readonly middleware?: ReadonlyArray<string>
  readonly handler?: string
}

/**
 * One step of a model-based run. `target` picks a route by position among those created so far (removed ones
 * included), or an id that never existed; `after` is such a position or a literal cursor.
 */
export type Operation =
  | {
    readonly kind: "create"
    readonly method: string
    readonly path: string
    readonly middleware: ReadonlyArray<string>
    readonly handler: string
  }
  | { readonly kind: "findById"; readonly target: number }
  | { readonly kind: "update"; readonly target: number; readonly patch: RoutePatchFields } & Preconditioned
  | { readonly kind: "remove"; readonly target: number } & Preconditioned
  | {
    readonly kind: "list"
    readonly query: {
      readonly limit: number
      readonly after: number | string | undefined
      readonly method: string | undefined
      readonly pathPrefix: string | undefined
      readonly handler: string | undefined
      readonly middleware: string | undefined
    }
  }

// A filter or cursor given in about a third of the listings, so that most listings have few and still match.
const sometimes = <A>(arbitrary: fc.Arbitrary<A>) =>
  fc.oneof({ weight: 2, arbitrary: fc.constant(undefined) }, { weight: 1, arbitrary })

const operationMiddleware = fc.uniqueArray(fc.constantFrom(...OPERATION_MIDDLEWARE), { maxLength: 3 })
const precondition = fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom<Preconditioned["precondition"]>("none", "current") },
  { weight: 1, arbitrary: fc.constantFrom<Preconditioned["precondition"]>("stale", "empty", "several") }
)

const operation: fc.Arbitrary<Operation> = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.record({
      kind: fc.constant("create" as const),
      method: fc.constantFrom(...OPERATION_METHODS),
      path: fc.constantFrom(...OPERATION_PATHS),
      middleware: operationMiddleware,
      handler: fc.constantFrom(...OPERATION_HANDLERS)
    })
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("findById" as const), target: fc.nat() }) },
  {
    weight: 4,
    arbitrary: fc.record({
      kind: fc.constant("update" as const),
      target: fc.nat(),
      patch: fc.record({
        method: fc.constantFrom(...OPERATION_METHODS),
        path: fc.constantFrom(...OPERATION_PATHS),
        middleware: operationMiddleware,
        handler: fc.constantFrom(...OPERATION_HANDLERS)
      }, { requiredKeys: [] }),
      precondition
    })
  },
  {
    weight: 2,
    arbitrary: fc.record({ kind: fc.constant("remove" as const), target: fc.nat(), precondition })
  },
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant("list" as const),
      query: fc.record({
        limit: fc.constantFrom(1, 2, 3, 1000),
        after: sometimes(fc.oneof(
          fc.nat(),
          // Before and after every id, and strings that are no id at all.
          fc.constantFrom("00000000-0000-7000-8000-000000000000", "ffffffff-ffff-7fff-bfff-ffffffffffff", "", "0", "g")
        )),
        method: sometimes(fc.constantFrom(...OPERATION_METHODS, "PUT")),
        pathPrefix: sometimes(fc.constantFrom("/", "/a", "/a/", "/a_", "/a%", "/a%2", "/ab", "/b/:", "/A", "/c")),
        handler: sometimes(fc.constantFrom(...OPERATION_HANDLERS, "z")),
        middleware: sometimes(fc.constantFrom(...OPERATION_MIDDLEWARE, "p"))
      })
    })
  }
)

/** Sequences of store operations for the model-based suite. */
export const repositoryOperations: fc.Arbitrary<ReadonlyArray<Operation>> = fc.array(operation, {
  minLength: 1,
  maxLength: 60,
  size: "max"
})
