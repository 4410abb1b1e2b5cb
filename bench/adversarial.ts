/**
 * Route tables built to make a backtracking lookup slow (issue 16, the cost rule of docs/router.md, "Bounded lookups"), and requests against
 * them: long routes of one-character segments, each with a parameter at a different position, so that a request of
 * those characters matches a prefix of every route and a miss is noticed only at its end. Shared by bench/table.ts,
 * which times them, and test/RouteTable.test.ts, which counts the nodes a lookup examines on them.
 */

/** The most segments a path may have (docs/http-api.md, "Route rules"). */
export const SEGMENTS = 64

export interface Spec {
  readonly method: string
  readonly path: string
}

/** `SEGMENTS` segments of `char`, with a parameter at each of `at` (0-based positions). */
export const pathWith = (char: string, at: ReadonlyArray<number>): string =>
  Array.from({ length: SEGMENTS }, (_, i) => (at.includes(i) ? `/:p${i}` : `/${char}`)).join("")

/**
 * The variant with mixed segments and wildcards: one route per position, `SEGMENTS` segments of `a.a` with the mixed
 * segment `:p<i>.a` at its position (which `a.a` matches too); and one route per position of a parameter in
 * `SEGMENTS - 2` segments of `a.a`, followed by `b` and a wildcard. A request of `a.a` segments matches a prefix of
 * every route.
 */
export const mixedAndWildcard = (): Array<Spec> => [
  ...Array.from({ length: SEGMENTS }, (_, i) => ({
    method: "GET",
    path: Array.from({ length: SEGMENTS }, (_, j) => (j === i ? `/:p${j}.a` : "/a.a")).join("")
  })),
  ...Array.from({ length: SEGMENTS - 2 }, (_, i) => ({
    method: "GET",
    path: Array.from({ length: SEGMENTS - 2 }, (_, j) => (j === i ? `/:p${j}` : "/a.a")).join("") + "/b/*rest"
  }))
]

/**
 * One route per position, each with its parameter there; `families` such tables over different characters
 * (`a`, `b`, …), so 16 families make 1,024 routes. Every route has each of `methods`.
 */
export const oneParameter = (families = 1, methods: ReadonlyArray<string> = ["GET"]): Array<Spec> =>
  Array.from({ length: families }, (_, f) => String.fromCharCode(97 + f)).flatMap((char) =>
    Array.from({ length: SEGMENTS }, (_, i) => pathWith(char, [i])).flatMap((path) =>
      methods.map((method) => ({ method, path }))
    )
  )

/** One route per pair of positions, each with its two parameters there: 2,016 routes. */
export const twoParameters = (): Array<Spec> =>
  Array.from({ length: SEGMENTS }, (_, i) => i).flatMap((i) =>
    Array.from({ length: SEGMENTS - i - 1 }, (_, j) => ({ method: "GET", path: pathWith("a", [i, i + 1 + j]) }))
  )

/** `n` segments of `char` as a request target. */
const run = (char: string, n: number) => `/${char}`.repeat(n)

// A hit (`value` at one position picks one route), and misses that every route matches up to their end — one segment
// short, one too many, and (a 405) a method no route has — in requests of `char` segments.
const requestsOf = (char: string, value: string) => ({
  hit: { method: "GET", target: run(char, 31) + `/${value}` + run(char, SEGMENTS - 32) },
  short: { method: "GET", target: run(char, SEGMENTS - 1) },
  long: { method: "GET", target: run(char, SEGMENTS + 1) },
  otherMethod: { method: "POST", target: run(char, SEGMENTS) }
})

/** Requests against the tables of family `a`: the value `x` picks one route. */
export const requests = requestsOf("a", "x")

/** The same requests against `mixedAndWildcard`: `x.a` at one position picks one route. */
export const mixedRequests = requestsOf("a.a", "x.a")
