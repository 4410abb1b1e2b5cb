/**
 * The grammar of a route: HTTP methods, middleware and handler names, path patterns, and the limits they keep. Plain
 * functions, so the HTTP hot path pays no Schema overhead; `Route` exposes them and builds its Schemas on them.
 *
 * @internal
 */
import type { Brand } from "effect"
import { Either } from "effect"

/** An HTTP method that passed `checkMethod`. */
export type HttpMethod = string & Brand.Brand<"HttpMethod">
/** A path pattern that passed `parsePath`. */
export type RoutePath = string & Brand.Brand<"RoutePath">
/** A middleware name that passed `checkName`. */
export type MiddlewareName = string & Brand.Brand<"MiddlewareName">
/** A handler name that passed `checkName`. */
export type HandlerName = string & Brand.Brand<"HandlerName">

// ---------------------------------------------------------------------------------------------------------------
// Field rules
// ---------------------------------------------------------------------------------------------------------------

export const METHOD_PATTERN = /^[A-Z]+(?:-[A-Z]+)*$/
export const NAME_PATTERN = /^[A-Za-z_$][A-Za-z0-9_$.:#/-]*$/

/**
 * Largest number of middleware names a route may list.
 */
export const MAX_MIDDLEWARE = 32
export const MAX_NAME_LENGTH = 128
export const MAX_METHOD_LENGTH = 32
export const MAX_PATH_LENGTH = 2048
/** Most segments a path pattern may have: what bounds the work of a lookup. */
export const MAX_SEGMENTS = 64
export const MAX_PARAM_NAME_LENGTH = 64

/**
 * Why `method` is refused, or `undefined` when it is a valid HTTP method token.
 */
export const checkMethod = (s: string): string | undefined => {
  if (s.length === 0) return "must not be empty: use an HTTP method such as \"GET\""
  if (s.length > MAX_METHOD_LENGTH) return `must be at most ${MAX_METHOD_LENGTH} characters (got ${s.length})`
  if (METHOD_PATTERN.test(s)) return undefined
  const upper = s.toUpperCase()
  if (METHOD_PATTERN.test(upper)) {
    return `methods are case-sensitive and written in uppercase: use "${upper}" instead of ${JSON.stringify(s)}`
  }
  return `${
    JSON.stringify(s)
  } is not an HTTP method: use uppercase letters, with single hyphens between words (e.g. "GET", "M-SEARCH")`
}

/**
 * Why a middleware or handler name is refused, or `undefined` when it is valid.
 */
export const checkName = (s: string): string | undefined => {
  if (s.length === 0) return "must not be empty"
  if (s.length > MAX_NAME_LENGTH) return `must be at most ${MAX_NAME_LENGTH} characters (got ${s.length})`
  if (NAME_PATTERN.test(s)) return undefined
  const first = s.charCodeAt(0)
  if (!isNameStart(first)) {
    return `${JSON.stringify(s)} must start with a letter, "_" or "$"`
  }
  for (let i = 1; i < s.length; i++) {
    if (!isNameChar(s.charCodeAt(i))) {
      return `${JSON.stringify(s)} has ${
        describeChar(s, i)
      } at index ${i}: names may contain only letters, digits and _ $ . : # / -`
    }
  }
  return `${JSON.stringify(s)} is not a valid name`
}

const isLetter = (c: number) => (c >= 65 && c <= 90) || (c >= 97 && c <= 122)
const isDigit = (c: number) => c >= 48 && c <= 57
const isNameStart = (c: number) => isLetter(c) || c === 95 /* _ */ || c === 36 /* $ */
const isNameChar = (c: number) =>
  isNameStart(c) || isDigit(c) || c === 46 /* . */ || c === 58 /* : */ || c === 35 /* # */ || c === 47 /* / */ ||
  c === 45 /* - */

// ---------------------------------------------------------------------------------------------------------------
// Path patterns
// ---------------------------------------------------------------------------------------------------------------

/**
 * One segment of a parsed path pattern.
 */
export type PathSegment =
  | { readonly _tag: "Static"; readonly value: string }
  | { readonly _tag: "Param"; readonly name: string }

/**
 * A path pattern that passed every rule.
 */
export interface ParsedPath {
  readonly path: RoutePath
  readonly segments: ReadonlyArray<PathSegment>
  readonly params: ReadonlyArray<string>
  /** The path with every parameter name removed: `/users/:/posts/:`. */
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

export const describeChar = (s: string, i: number): string => {
  const c = s.codePointAt(i)!
  if (c === 32) return "a space"
  if (c < 32 || c === 127) return `the control character U+${c.toString(16).toUpperCase().padStart(4, "0")}`
  return JSON.stringify(String.fromCodePoint(c))
}

const percentEncode = (ch: string): string =>
  Array.from(new TextEncoder().encode(ch), (b) => "%" + b.toString(16).toUpperCase().padStart(2, "0")).join("")

// Why one character of a path (outside a percent-escape) is refused; `null` for allowed static characters.
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
      return `"*" at index ${i}: wildcards are not supported; use a parameter segment such as /:name`
    case 40: // (
    case 41: // )
      return `${JSON.stringify(s[i])} at index ${i}: regular-expression groups are not supported`
    case 58: // :
      return `":" at index ${i}: a colon may only start a segment, as in /:name`
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
      message: `must be at most ${MAX_PATH_LENGTH} characters (got ${length})`
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
  const params: Array<string> = []
  const paramIndex = new Map<string, number>()
  let count = 0

  while (start <= length) {
    let end = path.indexOf("/", start)
    if (end === -1) end = length
    if (++count === MAX_SEGMENTS + 1) issues.push(tooManySegments(path, start))
    if (end === start) {
      if (end === length) {
        issues.push({ index: start - 1, message: `trailing slash at index ${start - 1}: remove it` })
      } else {
        issues.push({ index: start - 1, message: `empty segment ("//") at index ${start - 1}: remove the extra "/"` })
      }
    } else if (path.charCodeAt(start) === 58 /* : */) {
      const name = parseParam(path, start, end, issues)
      if (name !== undefined) {
        const seen = paramIndex.get(name)
        if (seen !== undefined) {
          issues.push({
            index: start,
            message: `parameter name "${name}" at index ${start} is already used at index ${seen}: rename one of them`
          })
        } else {
          paramIndex.set(name, start)
          params.push(name)
          segments.push({ _tag: "Param", name })
        }
      }
    } else {
      const value = path.slice(start, end)
      if (value === "." || value === "..") {
        issues.push({
          index: start,
          message: `the dot segment "${value}" at index ${start} is not allowed: write the path without it`
        })
      } else if (checkStatic(path, start, end, issues)) {
        segments.push({ _tag: "Static", value })
      }
    }
    start = end + 1
  }

  if (issues.length > 0) return Either.left(issues)
  return Either.right({ path: path as RoutePath, segments, params, shape: shapeOf(path as RoutePath) })
}

// The issue of a path with more than `MAX_SEGMENTS` segments, reported where the first one too many starts.
const tooManySegments = (path: string, start: number): PathIssue => {
  let count = path.charCodeAt(0) === 47 ? 0 : 1
  for (let i = 0; i < path.length; i++) if (path.charCodeAt(i) === 47) count++
  return {
    index: start,
    message: `has ${count} segments, more than the ${MAX_SEGMENTS} allowed: the ${
      MAX_SEGMENTS + 1
    }th starts at index ${start}; shorten the path to at most ${MAX_SEGMENTS} segments`
  }
}

// Checks a parameter segment `path[start, end)` (starting with ":"); returns its name when valid.
const parseParam = (path: string, start: number, end: number, issues: Array<PathIssue>): string | undefined => {
  const nameStart = start + 1
  if (nameStart === end) {
    issues.push({ index: start, message: `empty parameter name at index ${start}: write a name after ":", as in /:id` })
    return undefined
  }
  let ok = true
  const first = path.charCodeAt(nameStart)
  if (!(isLetter(first) || first === 95)) {
    ok = false
    issues.push({
      index: nameStart,
      message: isDigit(first)
        ? `parameter name at index ${nameStart} starts with a digit: start it with a letter or "_"`
        : paramCharMessage(path, nameStart)
    })
  }
  for (let i = nameStart + charWidth(path, nameStart); i < end; i += charWidth(path, i)) {
    const c = path.charCodeAt(i)
    if (!(isLetter(c) || isDigit(c) || c === 95)) {
      ok = false
      issues.push({ index: i, message: paramCharMessage(path, i) })
    }
  }
  if (end - nameStart > MAX_PARAM_NAME_LENGTH) {
    ok = false
    issues.push({
      index: nameStart,
      message: `parameter name at index ${nameStart} is ${
        end - nameStart
      } characters long: at most ${MAX_PARAM_NAME_LENGTH} are allowed`
    })
  }
  return ok ? path.slice(nameStart, end) : undefined
}

const paramCharMessage = (path: string, i: number): string => {
  const c = path.charCodeAt(i)
  // Characters with a dedicated explanation (query, fragment, wildcard, …) keep it inside parameter names too.
  if (c === 63 || c === 35 || c === 32 || c === 42 || c === 40 || c === 41 || c === 58 || c >= 128) {
    return pathCharProblem(path, i)!
  }
  return `${describeChar(path, i)} at index ${i} is not allowed in a parameter name: use letters, digits and "_"`
}

// Checks a static segment `path[start, end)`; returns true when valid.
const checkStatic = (path: string, start: number, end: number, issues: Array<PathIssue>): boolean => {
  let ok = true
  let i = start
  while (i < end) {
    const c = path.charCodeAt(i)
    if (c === 37 /* % */) {
      const problem = percentProblem(path, i, end)
      if (problem !== null) {
        ok = false
        issues.push({ index: i, message: problem })
      }
      // A "%" that starts no escape covers itself only: what follows is checked on its own.
      i += hasHexPair(path, i, end) ? 3 : 1
      continue
    }
    const problem = pathCharProblem(path, i)
    if (problem !== null) {
      ok = false
      issues.push({ index: i, message: problem })
    }
    i += charWidth(path, i)
  }
  return ok
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

/**
 * The shape of a valid path: every parameter name removed (`/users/:id` → `/users/:`). Two routes with the
 * same method and shape conflict.
 */
export const shapeOf = (path: RoutePath): string => path.replace(/:[A-Za-z0-9_]+/g, ":")

// ---------------------------------------------------------------------------------------------------------------
// Middleware lists
// ---------------------------------------------------------------------------------------------------------------

/**
 * Why a middleware list is refused for its length, or `undefined`.
 */
export const checkMiddlewareList = (names: ReadonlyArray<unknown>): string | undefined =>
  names.length > MAX_MIDDLEWARE
    ? `at most ${MAX_MIDDLEWARE} middleware names are allowed (got ${names.length})`
    : undefined

/**
 * What to say of `names[i]` when it repeats an earlier name.
 */
export const duplicateMessage = (names: ReadonlyArray<unknown>, i: number) =>
  `${JSON.stringify(names[i])} is already listed at middleware[${names.indexOf(names[i])}]: list each name once`
