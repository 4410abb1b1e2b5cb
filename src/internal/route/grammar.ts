/**
 * The grammar of a route: HTTP methods, middleware and handler names, and the limits they keep (path patterns are in
 * `path.ts`). Plain functions, so the HTTP hot path pays no Schema overhead; `Route` exposes them and builds its
 * Schemas on them.
 *
 * @internal
 */
import type { Brand } from "effect"

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

/** The routing API's own path (docs/http-api.md): it and every path below it are the API's in every host. */
export const ROUTING_API_PATH = "/v1/routing"

/** Whether `path` is the routing API's path or below it, which no stored route may take. */
export const isRoutingApiPath = (path: string): boolean =>
  path.startsWith(ROUTING_API_PATH) &&
  (path.length === ROUTING_API_PATH.length || path[ROUTING_API_PATH.length] === "/")

/** Why `path`, the routing API's path or below it, is refused. */
export const routingApiPathTaken = (path: string): string =>
  `${JSON.stringify(path)} is ${path === ROUTING_API_PATH ? "" : "below "}the routing API's path ` +
  `"${ROUTING_API_PATH}" (at index 0): it and every path below it belong to the routing API in every host, so no ` +
  "stored route may take them; choose a path outside it"

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

export const isLetter = (c: number) => (c >= 65 && c <= 90) || (c >= 97 && c <= 122)
export const isDigit = (c: number) => c >= 48 && c <= 57
const isNameStart = (c: number) => isLetter(c) || c === 95 /* _ */ || c === 36 /* $ */
const isNameChar = (c: number) =>
  isNameStart(c) || isDigit(c) || c === 46 /* . */ || c === 58 /* : */ || c === 35 /* # */ || c === 47 /* / */ ||
  c === 45 /* - */

/** A character as a message names it: quoted, or described when it would not show. */
export const describeChar = (s: string, i: number): string => {
  const c = s.codePointAt(i)!
  if (c === 32) return "a space"
  if (c < 32 || c === 127) return `the control character U+${c.toString(16).toUpperCase().padStart(4, "0")}`
  return JSON.stringify(String.fromCodePoint(c))
}

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

const PLAIN_KEY = /^[A-Za-z_$][A-Za-z0-9_$]*$/

/**
 * The path of a member of an object at `at`: `.max`, or `["a b"]` (`[""]`) for a key that is not an identifier, so
 * that every key, the empty one included, has a path of its own.
 */
export const memberPath = (at: string, key: string): string =>
  PLAIN_KEY.test(key) ? `${at}.${key}` : `${at}[${JSON.stringify(key)}]`
