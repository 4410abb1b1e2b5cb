/**
 * A plain reference matcher for the route table, written straight from the contract's rules on which stored route
 * serves a request, and independent of the table's tree: every route is tried against the request, mixed segments
 * by trying every split (each parameter the shortest text after which the rest of the segment still matches), and
 * the matching routes are ranked segment by segment. Slow on purpose: it is what the table is checked against.
 *
 * It reads patterns with a minimal parser of its own (no validation: the patterns it is given are valid), so it
 * shares no code with the table it checks.
 */
import type * as Path from "../../src/internal/route/path.js"

export type PatternSegment =
  | { readonly _tag: "Static"; readonly value: string }
  | { readonly _tag: "Param"; readonly name: string }
  | { readonly _tag: "Mixed"; readonly parts: ReadonlyArray<Path.MixedPart> }
  | { readonly _tag: "Wildcard"; readonly name: string }

const NAME = /^[A-Za-z0-9_]+/

const partsOf = (segment: string): Array<Path.MixedPart> => {
  const parts: Array<Path.MixedPart> = []
  let rest = segment
  while (rest.length > 0) {
    if (rest.startsWith(":")) {
      const name = NAME.exec(rest.slice(1))![0]
      parts.push({ _tag: "Param", name })
      rest = rest.slice(1 + name.length)
    } else {
      const end = rest.indexOf(":")
      const value = end === -1 ? rest : rest.slice(0, end)
      parts.push({ _tag: "Static", value })
      rest = rest.slice(value.length)
    }
  }
  return parts
}

const parse = (path: string): ReadonlyArray<PatternSegment> =>
  (path === "/" ? [] : path.slice(1).split("/")).map((segment): PatternSegment => {
    if (segment.startsWith("*")) return { _tag: "Wildcard", name: segment.slice(1) }
    if (!segment.includes(":")) return { _tag: "Static", value: segment }
    const parts = partsOf(segment)
    return parts.length === 1 ? { _tag: "Param", name: segment.slice(1) } : { _tag: "Mixed", parts }
  })

// The property tests ask for the patterns of every route for each request they check: each is read once (up to a
// bound, then the reading starts over), and the segments, read-only, are shared.
const parsed = new Map<string, ReadonlyArray<PatternSegment>>()

/** The segments of a valid pattern. */
export const parsePattern = (path: string): ReadonlyArray<PatternSegment> => {
  let segments = parsed.get(path)
  if (segments === undefined) {
    if (parsed.size >= 10_000) parsed.clear()
    parsed.set(path, segments = parse(path))
  }
  return segments
}

/** The shape of a segment: the segment with its names removed. */
const segmentShape = (segment: PatternSegment): string => {
  switch (segment._tag) {
    case "Static":
      return segment.value
    case "Param":
      return ":"
    case "Wildcard":
      return "*"
    case "Mixed":
      return segment.parts.map((part) => (part._tag === "Static" ? part.value : ":")).join("")
  }
}

/** The shape of a pattern: two routes of one method conflict when their shapes are equal. */
export const shapeOf = (path: string): string => "/" + parsePattern(path).map(segmentShape).join("/")

/** The names of a pattern's parameters and wildcard, in path order. */
export const namesOf = (path: string): ReadonlyArray<string> =>
  parsePattern(path).flatMap((segment) => {
    switch (segment._tag) {
      case "Static":
        return []
      case "Param":
      case "Wildcard":
        return [segment.name]
      case "Mixed":
        return segment.parts.flatMap((part) => (part._tag === "Param" ? [part.name] : []))
    }
  })

// ---------------------------------------------------------------------------------------------------------------
// Requests
// ---------------------------------------------------------------------------------------------------------------

/** The path of a request target, up to its first `?`. */
export const pathOfTarget = (target: string): string => {
  const query = target.indexOf("?")
  return query === -1 ? target : target.slice(0, query)
}

/** The path normalised as RFC 3986 §6.2.2 says: hex digits uppercase, escapes of unreserved characters decoded. */
export const normalise = (path: string): string =>
  path.replace(/%([0-9A-Fa-f]{2})/g, (_, hex: string) => {
    const char = String.fromCharCode(parseInt(hex, 16))
    return /^[A-Za-z0-9\-._~]$/.test(char) ? char : "%" + hex.toUpperCase()
  })

export const segmentsOf = (path: string): ReadonlyArray<string> => (path === "/" ? [] : path.slice(1).split("/"))

// The values of a mixed segment's parameters in `text`, trying every split: each parameter the shortest non-empty
// text after which the rest of the segment still matches, the last taking what remains.
const splitMixed = (parts: ReadonlyArray<Path.MixedPart>, text: string): Array<string> | undefined => {
  const from = (i: number, at: number): Array<string> | undefined => {
    if (i === parts.length) return at === text.length ? [] : undefined
    const part = parts[i]!
    if (part._tag === "Static") return text.startsWith(part.value, at) ? from(i + 1, at + part.value.length) : undefined
    for (let end = at + 1; end <= text.length; end++) {
      const rest = from(i + 1, end)
      if (rest !== undefined) return [text.slice(at, end), ...rest]
    }
    return undefined
  }
  return from(0, 0)
}

/**
 * The raw (not yet decoded) values of the pattern's parameters and wildcard, in path order, when it matches the
 * request's segments; `undefined` when it does not. A wildcard's value is its segments as they are, joined with `/`.
 */
export const matchPattern = (
  pattern: ReadonlyArray<PatternSegment>,
  request: ReadonlyArray<string>
): Array<Array<string>> | undefined => {
  const wildcard = pattern.length > 0 && pattern[pattern.length - 1]!._tag === "Wildcard"
  if (wildcard ? request.length < pattern.length : request.length !== pattern.length) return undefined
  const values: Array<Array<string>> = []
  for (let i = 0; i < pattern.length; i++) {
    const segment = pattern[i]!
    const text = request[i]!
    switch (segment._tag) {
      case "Static":
        if (segment.value !== text) return undefined
        break
      case "Param":
        if (text === "") return undefined
        values.push([text])
        break
      case "Mixed": {
        const split = splitMixed(segment.parts, text)
        if (split === undefined) return undefined
        for (const value of split) values.push([value])
        break
      }
      case "Wildcard": {
        const rest = request.slice(i)
        if (rest.includes("")) return undefined
        values.push(rest)
      }
    }
  }
  return values
}

// Static beats mixed beats parameter beats wildcard.
const RANK = { Static: 0, Mixed: 1, Param: 2, Wildcard: 3 } as const

const staticLength = (segment: PatternSegment & { _tag: "Mixed" }): number =>
  segment.parts.reduce((n, part) => n + (part._tag === "Static" ? part.value.length : 0), 0)

/**
 * Which of two patterns that match one request is the more specific: negative for `a`, positive for `b`, 0 when
 * they cannot be told apart (same shape). Decided at the first segment where their shapes differ.
 */
export const compareSpecificity = (a: ReadonlyArray<PatternSegment>, b: ReadonlyArray<PatternSegment>): number => {
  for (let i = 0; i < Math.min(a.length, b.length); i++) {
    const x = a[i]!
    const y = b[i]!
    if (segmentShape(x) === segmentShape(y)) continue
    if (x._tag !== y._tag) return RANK[x._tag] - RANK[y._tag]
    if (x._tag === "Mixed" && y._tag === "Mixed") {
      const more = staticLength(y) - staticLength(x)
      if (more !== 0) return more
      return segmentShape(x) < segmentShape(y) ? -1 : 1
    }
    // Two static segments that differ cannot both match: not reached for patterns that match one request.
    return segmentShape(x) < segmentShape(y) ? -1 : 1
  }
  return a.length - b.length
}

// ---------------------------------------------------------------------------------------------------------------
// Resolution
// ---------------------------------------------------------------------------------------------------------------

export interface ReferenceRoute {
  readonly id: string
  readonly method: string
  readonly path: string
  /** When it was inserted: of two routes with one method and shape, the later serves. */
  readonly seq: number
}

export type Expected =
  | { readonly _tag: "Found"; readonly id: string; readonly params: Record<string, string> }
  | { readonly _tag: "MethodNotAllowed"; readonly allow: ReadonlyArray<string> }
  | { readonly _tag: "NotFound" }
  | { readonly _tag: "BadPath" }

interface Match {
  readonly route: ReferenceRoute
  readonly pattern: ReadonlyArray<PatternSegment>
  readonly values: Array<Array<string>>
}

const mostSpecific = (candidates: ReadonlyArray<Match>): Match | undefined =>
  candidates.reduce<Match | undefined>((best, candidate) => {
    if (best === undefined) return candidate
    const order = compareSpecificity(candidate.pattern, best.pattern)
    return order < 0 || (order === 0 && candidate.route.seq > best.route.seq) ? candidate : best
  }, undefined)

/** The routes of `method` that match the request, for checks of ties; `undefined` for a malformed path. */
export const matching = (
  routes: ReadonlyArray<ReferenceRoute>,
  target: string
): ReadonlyArray<Match> | undefined => {
  const raw = pathOfTarget(target)
  if (/%(?![0-9A-Fa-f]{2})/.test(raw)) return undefined
  const request = segmentsOf(normalise(raw))
  return routes.flatMap((route) => {
    const pattern = parsePattern(route.path)
    const values = matchPattern(pattern, request)
    return values === undefined ? [] : [{ route, pattern, values }]
  })
}

/** What the table must answer for a request (an origin-form target). */
export const resolve = (routes: ReadonlyArray<ReferenceRoute>, method: string, target: string): Expected => {
  const matches = matching(routes, target)
  if (matches === undefined) return { _tag: "BadPath" }
  const ofMethod = (m: string) => matches.filter((match) => match.route.method === m)
  const winner = method === "HEAD"
    ? mostSpecific(ofMethod("HEAD")) ?? mostSpecific(ofMethod("GET"))
    : mostSpecific(ofMethod(method))
  if (winner !== undefined) {
    const names = namesOf(winner.route.path)
    const params: Record<string, string> = {}
    for (let i = 0; i < names.length; i++) {
      try {
        params[names[i]!] = winner.values[i]!.map((value) => decodeURIComponent(value)).join("/")
      } catch {
        return { _tag: "BadPath" }
      }
    }
    return { _tag: "Found", id: winner.route.id, params }
  }
  const allow = new Set<string>(matches.map((match) => match.route.method))
  if (allow.has("GET")) allow.add("HEAD")
  if (allow.size === 0) return { _tag: "NotFound" }
  return { _tag: "MethodNotAllowed", allow: [...allow].sort() }
}
