/**
 * Route tables built to make a backtracking lookup slow (issue 16, CONTRACT §10's cost rule), and requests against
 * them: long routes of one-character segments, each with a parameter at a different position, so that a request of
 * those characters matches a prefix of every route and a miss is noticed only at its end. Shared by bench/table.ts,
 * which times them, and test/RouteTable.test.ts, which counts the nodes a lookup examines on them.
 */

/** The most segments a path may have (CONTRACT §2). */
export const SEGMENTS = 64

export interface Spec {
  readonly method: string
  readonly path: string
}

/** `SEGMENTS` segments of `char`, with a parameter at each of `at` (0-based positions). */
export const pathWith = (char: string, at: ReadonlyArray<number>): string =>
  Array.from({ length: SEGMENTS }, (_, i) => (at.includes(i) ? `/:p${i}` : `/${char}`)).join("")

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

/**
 * Requests against these tables, of family `a`: a hit (the value `x` at one position picks one route), and misses
 * that every route matches up to their end — one segment short, one too many, and (a 405) a method no route has.
 */
export const requests = {
  hit: { method: "GET", target: run("a", 31) + "/x" + run("a", SEGMENTS - 32) },
  short: { method: "GET", target: run("a", SEGMENTS - 1) },
  long: { method: "GET", target: run("a", SEGMENTS + 1) },
  otherMethod: { method: "POST", target: run("a", SEGMENTS) }
} as const
