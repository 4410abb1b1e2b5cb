/**
 * The grammar of path patterns (static, parameter, mixed and wildcard segments): parsing with every problem named at
 * its position, and shapes.
 *
 * @internal
 */
import { Either } from "effect"
import {
  describeChar,
  isDigit,
  isLetter,
  MAX_PARAM_NAME_LENGTH,
  MAX_PATH_LENGTH,
  MAX_SEGMENTS,
  type RoutePath
} from "./grammar.js"

/**
 * One segment of a parsed path pattern.
 */
export type PathSegment =
  | { readonly _tag: "Static"; readonly value: string }
  | { readonly _tag: "Param"; readonly name: string }
  | MixedSegment
  | { readonly _tag: "Wildcard"; readonly name: string }

/** A part of a mixed segment: static text or a parameter. */
export type MixedPart =
  | { readonly _tag: "Static"; readonly value: string }
  | { readonly _tag: "Param"; readonly name: string }

/**
 * A segment of static text and parameters, such as `:file.:ext` or `v:major`: its parts alternate (two parameters
 * are always separated by static text), at least one of them a parameter.
 */
export interface MixedSegment {
  readonly _tag: "Mixed"
  readonly parts: ReadonlyArray<MixedPart>
  /** The segment with its parameter names removed: `:.:` for `:file.:ext`. */
  readonly shape: string
  /** How many static characters it has: between two mixed segments, the one with more wins. */
  readonly staticLength: number
}

/**
 * A path pattern that passed every rule.
 */
export interface ParsedPath {
  readonly path: RoutePath
  readonly segments: ReadonlyArray<PathSegment>
  /** Every parameter and wildcard name, in order. */
  readonly params: ReadonlyArray<string>
  /** The path with every parameter and wildcard name removed: `/users/:/posts/:`, `/files/*`. */
  readonly shape: string
}

/**
 * A problem in a path pattern: `index` is the 0-based offset in the path where it was found.
 */
export interface PathIssue {
  readonly index: number
  readonly message: string
}

// Characters a static segment may contain as they are (RFC 3986 pchar without "%" and ":").
const STATIC_CHAR = (() => {
  const table = new Uint8Array(128)
  for (let c = 0; c < 128; c++) if (isLetter(c) || isDigit(c)) table[c] = 1
  for (const ch of "-._~!$&'+,;=@") table[ch.charCodeAt(0)] = 1
  return table
})()

const isHex = (c: number) => isDigit(c) || (c >= 65 && c <= 70)
const isLowerHex = (c: number) => c >= 97 && c <= 102

const hexValue = (c: number) => (c <= 57 ? c - 48 : (c | 0x20) - 87)

const isUnreserved = (c: number) =>
  isLetter(c) || isDigit(c) || c === 45 /* - */ || c === 46 /* . */ || c === 95 /* _ */ || c === 126 /* ~ */

// A parameter or wildcard name is made of these; the first character outside them ends it.
const isParamNameChar = (c: number) => isLetter(c) || isDigit(c) || c === 95 /* _ */

const percentEncode = (ch: string): string =>
  Array.from(new TextEncoder().encode(ch), (b) => "%" + b.toString(16).toUpperCase().padStart(2, "0")).join("")

// Why one character of static text (outside a percent-escape) is refused; `null` for allowed static characters.
const pathCharProblem = (s: string, i: number): string | null => {
  const c = s.charCodeAt(i)
  if (c < 128 && STATIC_CHAR[c] === 1) return null
  switch (c) {
    case 63: // ?
      return `"?" at index ${i}: a path pattern has no query string; remove it and everything after it`
    case 35: // #
      return `"#" at index ${i}: a path pattern has no fragment; remove it and everything after it`
    case 32:
      return `a space at index ${i}: percent-encode it as %20`
    case 42: // *
      return `"*" at index ${i}: a wildcard may only start the last segment, as in /files/*rest`
    case 40: // (
    case 41: // )
      return `${JSON.stringify(s[i])} at index ${i}: regular-expression groups are not supported`
    case 123: // {
    case 125: // }
      return `${
        JSON.stringify(s[i])
      } at index ${i}: braces (optional parts, groups) are not supported; register each form as a route of its own`
  }
  if (c >= 128) {
    const ch = String.fromCodePoint(s.codePointAt(i)!)
    return `the non-ASCII character ${JSON.stringify(ch)} at index ${i}: percent-encode its UTF-8 bytes as ${
      percentEncode(ch)
    }`
  }
  return `${describeChar(s, i)} at index ${i} is not allowed in a path: percent-encode it as %${
    c.toString(16).toUpperCase().padStart(2, "0")
  }`
}

// The start of `text`, quoted: what a message shows of a text that may be long.
const QUOTED_START = 32
const quoteStart = (text: string): string =>
  text.length <= QUOTED_START ? JSON.stringify(text) : `${JSON.stringify(text.slice(0, QUOTED_START))}…`

// UTF-16 units taken by the character at `i`, so a surrogate pair is reported once.
const charWidth = (s: string, i: number) => (s.codePointAt(i)! > 0xffff ? 2 : 1)

/**
 * Parses a path pattern, returning the parsed pattern or every problem found, each with its position.
 */
export const parsePath = (path: string): Either.Either<ParsedPath, ReadonlyArray<PathIssue>> => {
  const issues: Array<PathIssue> = []
  const length = path.length
  if (length === 0) {
    return Either.left([{ index: 0, message: "must not be empty: a path pattern starts with \"/\", as in /users/:id" }])
  }
  if (length > MAX_PATH_LENGTH) {
    return Either.left([{
      index: MAX_PATH_LENGTH,
      message:
        `must be at most ${MAX_PATH_LENGTH} characters (got ${length}): the excess starts at index ${MAX_PATH_LENGTH} ` +
        `with ${quoteStart(path.slice(MAX_PATH_LENGTH))}`
    }])
  }
  if (path === "/") return Either.right({ path: path as RoutePath, segments: [], params: [], shape: "/" })

  let start = 0
  if (path.charCodeAt(0) !== 47) {
    issues.push({ index: 0, message: `must start with "/" (found ${describeChar(path, 0)} at index 0)` })
  } else {
    start = 1
  }

  const segments: Array<PathSegment> = []
  const scan: Scan = { path, names: { list: [], at: new Map() }, issues }
  let count = 0

  while (start <= length) {
    let end = path.indexOf("/", start)
    if (end === -1) end = length
    if (++count === MAX_SEGMENTS + 1) issues.push(tooManySegments(path, start))
    if (end === start) {
      if (end === length) {
        issues.push({ index: start - 1, message: `trailing slash at index ${start - 1} ("/"): remove it` })
      } else {
        issues.push({ index: start - 1, message: `empty segment ("//") at index ${start - 1}: remove the extra "/"` })
      }
    } else {
      const segment = path.charCodeAt(start) === 42 /* * */
        ? parseWildcard(scan, start, end)
        : parseSegment(scan, start, end)
      if (segment !== undefined) segments.push(segment)
    }
    start = end + 1
  }

  if (issues.length > 0) return Either.left(issues)
  return Either.right({ path: path as RoutePath, segments, params: scan.names.list, shape: shapeOf(path as RoutePath) })
}

// The parameter and wildcard names of a path so far, in order, each with the index of its ":" or "*".
interface Names {
  readonly list: Array<string>
  readonly at: Map<string, number>
}

// A path being parsed: its text, the names so far, and the problems found so far.
interface Scan {
  readonly path: string
  readonly names: Names
  readonly issues: Array<PathIssue>
}

// The issue of a path with more than `MAX_SEGMENTS` segments, reported where the first one too many starts.
const tooManySegments = (path: string, start: number): PathIssue => {
  let count = path.charCodeAt(0) === 47 ? 0 : 1
  for (let i = 0; i < path.length; i++) if (path.charCodeAt(i) === 47) count++
  return {
    index: start,
    message: `has ${count} segments, more than the ${MAX_SEGMENTS} allowed: the ${
      MAX_SEGMENTS + 1
    }th starts at index ${start} (${
      quoteStart(path.slice(start))
    }); shorten the path to at most ${MAX_SEGMENTS} segments`
  }
}

// Where the name that starts at `from` ends: at the first character outside [A-Za-z0-9_], or at `end`.
const nameEnd = (path: string, from: number, end: number): number => {
  let i = from
  while (i < end && isParamNameChar(path.charCodeAt(i))) i++
  return i
}

// Checks the name `path[sigil + 1, stop)` of the parameter or wildcard whose ":" or "*" is at `sigil`, and that no
// earlier name is the same; records it and returns it when valid.
const takeName = (scan: Scan, sigil: number, stop: number): string | undefined => {
  const { issues, names, path } = scan
  const start = sigil + 1
  const what = path[sigil] === "*" ? "wildcard" : "parameter"
  if (start === stop) {
    issues.push({
      index: sigil,
      message: what === "wildcard"
        ? `"*" at index ${sigil} has no name: name the rest, such as /files/*rest`
        : `empty parameter name at index ${sigil}: a ":" must be followed by a name, as in /:id`
    })
    return undefined
  }
  if (isDigit(path.charCodeAt(start))) {
    issues.push({
      index: start,
      message: `${what} name at index ${start} starts with a digit (${
        JSON.stringify(path.slice(sigil, stop))
      }): start it with a letter or "_"`
    })
    return undefined
  }
  if (stop - start > MAX_PARAM_NAME_LENGTH) {
    issues.push({
      index: start,
      message: `${what} name at index ${start} is ${stop - start} characters long (${
        JSON.stringify(path.slice(sigil, stop))
      }): at most ${MAX_PARAM_NAME_LENGTH} are allowed`
    })
    return undefined
  }
  const name = path.slice(start, stop)
  const seen = names.at.get(name)
  if (seen !== undefined) {
    issues.push({
      index: sigil,
      message: `${what} name "${name}" at index ${sigil} is already used at index ${seen}: rename one of them`
    })
    return undefined
  }
  names.at.set(name, sigil)
  names.list.push(name)
  return name
}

// Checks a wildcard segment `path[start, end)` (starting with "*"): a name, the whole segment, the last segment.
const parseWildcard = (scan: Scan, start: number, end: number): PathSegment | undefined => {
  const { issues, path } = scan
  const before = issues.length
  const stop = nameEnd(path, start + 1, end)
  const name = takeName(scan, start, stop)
  if (end < path.length) {
    issues.push({
      index: start,
      message:
        `the wildcard at index ${start} is not the last segment: ${
          JSON.stringify(path.slice(start, end))
        } stands for the rest of the path, so ` +
        `nothing may follow it; remove "${path.slice(end)}" or use a parameter such as /:name`
    })
  }
  if (stop < end) {
    issues.push({
      index: stop,
      message: `${describeChar(path, stop)} at index ${stop} follows the wildcard "${
        path.slice(start, stop)
      }": a wildcard is a whole segment; end the path with it`
    })
    // What else follows it is reported too, so that every problem is named at once.
    checkStatic(path, stop + charWidth(path, stop), end, issues)
  }
  return issues.length === before && name !== undefined ? { _tag: "Wildcard", name } : undefined
}

// Checks a static, parameter or mixed segment `path[start, end)`.
const parseSegment = (scan: Scan, start: number, end: number): PathSegment | undefined => {
  const { issues, path } = scan
  const before = issues.length
  const parts: Array<MixedPart> = []
  // The name written just before, valid or not, when no static text has followed it yet.
  let previous: string | undefined
  let i = start
  while (i < end) {
    if (path.charCodeAt(i) === 58 /* : */) {
      const stop = nameEnd(path, i + 1, end)
      const written = path.slice(i + 1, stop)
      if (previous !== undefined && written !== "") {
        issues.push({
          index: i,
          message: `":${written}" at index ${i} follows ":${previous}" with no static text between them: put ` +
            `static text between ":${previous}" and ":${written}", as in /:${previous}-:${written}`
        })
      }
      const name = takeName(scan, i, stop)
      if (name !== undefined) parts.push({ _tag: "Param", name })
      previous = written === "" ? undefined : written
      i = stop
    } else {
      let stop = path.indexOf(":", i)
      if (stop === -1 || stop > end) stop = end
      checkStatic(path, i, stop, issues)
      parts.push({ _tag: "Static", value: path.slice(i, stop) })
      previous = undefined
      i = stop
    }
  }
  if (issues.length > before) return undefined
  const only = parts.length === 1 ? parts[0]! : undefined
  if (only?._tag === "Param") return only
  if (only?._tag === "Static") {
    if (only.value !== "." && only.value !== "..") return only
    issues.push({
      index: start,
      message: `the dot segment "${only.value}" at index ${start} is not allowed: write the path without it`
    })
    return undefined
  }
  let shape = ""
  let staticLength = 0
  for (const part of parts) {
    if (part._tag === "Param") {
      shape += ":"
    } else {
      shape += part.value
      staticLength += part.value.length
    }
  }
  return { _tag: "Mixed", parts, shape, staticLength }
}

// Checks static text `path[start, end)`, reporting each refused character or escape.
const checkStatic = (path: string, start: number, end: number, issues: Array<PathIssue>): void => {
  let i = start
  while (i < end) {
    const c = path.charCodeAt(i)
    if (c === 37 /* % */) {
      const problem = percentProblem(path, i, end)
      if (problem !== null) issues.push({ index: i, message: problem })
      // A "%" that starts no escape covers itself only: what follows is checked on its own.
      i += hasHexPair(path, i, end) ? 3 : 1
      continue
    }
    const problem = pathCharProblem(path, i)
    if (problem !== null) issues.push({ index: i, message: problem })
    i += charWidth(path, i)
  }
}

// Two hex digits, in either case, follow the "%" at `i`.
const hasHexPair = (path: string, i: number, end: number): boolean =>
  i + 2 < end && isAnyHex(path.charCodeAt(i + 1)) && isAnyHex(path.charCodeAt(i + 2))

const isAnyHex = (c: number) => isHex(c) || isLowerHex(c)

const percentProblem = (path: string, i: number, end: number): string | null => {
  if (hasHexPair(path, i, end)) {
    const h1 = path.charCodeAt(i + 1)
    const h2 = path.charCodeAt(i + 2)
    if (!isHex(h1) || !isHex(h2)) {
      return `percent-escape "${path.slice(i, i + 3)}" at index ${i}: write its hex digits in uppercase, as "${
        path.slice(i, i + 3).toUpperCase()
      }"`
    }
    const byte = hexValue(h1) * 16 + hexValue(h2)
    if (isUnreserved(byte)) {
      return `percent-escape "${path.slice(i, i + 3)}" at index ${i} encodes ${
        JSON.stringify(String.fromCharCode(byte))
      }: write that character plainly`
    }
    return null
  }
  return `"%" at index ${i} does not start a percent-escape: write "%" followed by two uppercase hex digits (a literal "%" is %25)`
}

// A create takes its path's shape and parse more than once in a row (validating the body, the store's conflict key,
// the route table's insert): the last of each is kept, so that the same path is worked out once.
let lastShaped = "/"
let lastShape = "/"
let lastParsed: Either.Either<ParsedPath, ReadonlyArray<PathIssue>> = Either.right({
  path: "/" as RoutePath,
  segments: [],
  params: [],
  shape: "/"
})

/**
 * The shape of a valid path: every parameter and wildcard name removed (`/users/:id` → `/users/:`, `/:file.:ext` →
 * `/:.:`, `/files/*rest` → `/files/*`). Two routes with the same method and shape conflict.
 */
export const shapeOf = (path: RoutePath): string => {
  if (path !== lastShaped) {
    lastShape = path.replace(/([:*])[A-Za-z0-9_]+/g, "$1")
    lastShaped = path
  }
  return lastShape
}

/**
 * `parsePath`, answered from the last call when it parsed the same path: its result is shared, so read it only (the
 * library's own callers: validation, which reads it, and the route table, which keeps its arrays unchanged).
 */
export const parsePathReused = (path: string): Either.Either<ParsedPath, ReadonlyArray<PathIssue>> => {
  const last = lastParsed
  if (Either.isRight(last) && last.right.path === path) return last
  return lastParsed = parsePath(path)
}
