/**
 * Independent models of CONTRACT §1–§2 (no code shared with src/Route.ts): which path patterns and which create
 * bodies are valid, and what a refusal must report. The property-based suites check the library against them.
 */

// ---------------------------------------------------------------------------------------------------------------
// The oracle
// ---------------------------------------------------------------------------------------------------------------

const STATIC_SEGMENT = /^(?:[A-Za-z0-9\-._~!$&'+,;=@]|%[0-9A-F]{2})+$/
const PARAM_SEGMENT = /^:([A-Za-z_][A-Za-z0-9_]{0,63})$/
export const UNRESERVED = /^[A-Za-z0-9\-._~]$/

export type OracleSegment =
  | { readonly _tag: "Static"; readonly value: string }
  | { readonly _tag: "Param"; readonly name: string }

export interface OracleParse {
  readonly segments: ReadonlyArray<OracleSegment>
  readonly params: ReadonlyArray<string>
  readonly shape: string
}

/** What CONTRACT §2 says about `path`: its segments and shape when it is a valid pattern, `undefined` otherwise. */
export const oracle = (path: string): OracleParse | undefined => {
  if (path.length < 1 || path.length > 2048) return undefined
  if (path === "/") return { segments: [], params: [], shape: "/" }
  if (!path.startsWith("/")) return undefined
  const parts = path.slice(1).split("/")
  if (parts.length > 64) return undefined
  const segments: Array<OracleSegment> = []
  const params: Array<string> = []
  for (const part of parts) {
    const param = PARAM_SEGMENT.exec(part)
    if (param !== null) {
      const name = param[1]!
      if (params.includes(name)) return undefined
      params.push(name)
      segments.push({ _tag: "Param", name })
      continue
    }
    if (!STATIC_SEGMENT.test(part) || part === "." || part === "..") return undefined
    for (const escape of part.matchAll(/%([0-9A-F]{2})/g)) {
      if (UNRESERVED.test(String.fromCharCode(parseInt(escape[1]!, 16)))) return undefined
    }
    segments.push({ _tag: "Static", value: part })
  }
  const shape = "/" + segments.map((s) => s._tag === "Param" ? ":" : s.value).join("/")
  return { segments, params, shape }
}

/**
 * Positions the contract says must be reported for a refused path of 1–2048 characters: every "?", "#", space,
 * "*", "(", ")", non-ASCII character (its first UTF-16 unit), ":" that does not start a segment, empty segment,
 * trailing slash, dot segment, empty parameter name and reused parameter name, and the start of a 65th segment.
 */
export const mustReport = (path: string): ReadonlyArray<number> => {
  if (path.length < 1 || path.length > 2048) return []
  const positions = new Set<number>()
  if (!path.startsWith("/")) positions.add(0)
  for (let i = 0; i < path.length; i++) {
    const c = path.charCodeAt(i)
    if ("?# *()".includes(path[i]!)) positions.add(i)
    if (c >= 128 && !(c >= 0xdc00 && c <= 0xdfff && i > 0 && isHighSurrogate(path.charCodeAt(i - 1)))) {
      positions.add(i)
    }
    if (c === 58 && i > 0 && path[i - 1] !== "/") positions.add(i)
  }
  if (path !== "/") {
    if (path.length > 1 && path.endsWith("/")) positions.add(path.length - 1)
    const seen = new Set<string>()
    let start = path.startsWith("/") ? 1 : 0
    for (const [i, part] of path.slice(start).split("/").entries()) {
      if (i === 64) positions.add(start)
      if (part === "" && start < path.length) positions.add(start - 1) // "//"
      if (part === "." || part === "..") positions.add(start)
      if (part === ":") positions.add(start)
      const param = PARAM_SEGMENT.exec(part)
      if (param !== null) {
        if (seen.has(param[1]!)) positions.add(start)
        seen.add(param[1]!)
      }
      start += part.length + 1
    }
  }
  return [...positions].sort((a, b) => a - b)
}

export const isHighSurrogate = (c: number) => c >= 0xd800 && c <= 0xdbff
export const isLowSurrogate = (c: number) => c >= 0xdc00 && c <= 0xdfff

/** `true` when `index` points at the second half of a surrogate pair, i.e. inside one character. */
export const splitsSurrogatePair = (s: string, index: number) =>
  index > 0 && index < s.length && isLowSurrogate(s.charCodeAt(index)) && isHighSurrogate(s.charCodeAt(index - 1))

// ---------------------------------------------------------------------------------------------------------------
// Create bodies
// ---------------------------------------------------------------------------------------------------------------

export const FIELDS: ReadonlyArray<string> = ["method", "path", "handler", "middleware"]
const METHOD = /^[A-Z]+(?:-[A-Z]+)*$/
const NAME = /^[A-Za-z_$][A-Za-z0-9_$.:#/-]*$/

export const methodOk = (u: unknown) => typeof u === "string" && u.length >= 1 && u.length <= 32 && METHOD.test(u)
export const nameOk = (u: unknown) => typeof u === "string" && u.length >= 1 && u.length <= 128 && NAME.test(u)
export const middlewareOk = (u: unknown) =>
  u === undefined ||
  (Array.isArray(u) && u.length <= 32 && u.every(nameOk) && new Set(u).size === u.length)
export const pathOk = (u: unknown) => typeof u === "string" && oracle(u) !== undefined
export const isRecord = (u: unknown): u is Record<string, unknown> =>
  typeof u === "object" && u !== null && !Array.isArray(u)

/**
 * The problems CONTRACT §1 predicts for a body, as the fields that must be reported: `""` for a body that is not
 * an object; `"middleware"` stands for the list and its items.
 */
export const expectedGroups = (body: unknown): ReadonlyArray<string> => {
  if (!isRecord(body)) return [""]
  const groups: Array<string> = []
  if (!methodOk(body.method)) groups.push("method")
  if (!pathOk(body.path)) groups.push("path")
  if (!middlewareOk(body.middleware)) groups.push("middleware")
  if (!nameOk(body.handler)) groups.push("handler")
  for (const key of Object.keys(body)) if (!FIELDS.includes(key)) groups.push(key)
  return groups
}

/** The field an issue path belongs to: `middleware[3]` to `middleware` (unless the body has such a key). */
export const groupOf = (body: Record<string, unknown>, path: string) =>
  /^middleware\[\d+\]$/.test(path) && !Object.prototype.hasOwnProperty.call(body, path) ? "middleware" : path

/** `true` for an issue path a body can have: a field, an item of its middleware list, or one of its keys. */
export const knownPath = (body: unknown, path: string): boolean => {
  if (!isRecord(body)) return path === ""
  if (FIELDS.includes(path) || Object.prototype.hasOwnProperty.call(body, path)) return true
  const item = /^middleware\[(\d+)\]$/.exec(path)
  if (item !== null) return Array.isArray(body.middleware) && Number(item[1]) < body.middleware.length
  return false
}
