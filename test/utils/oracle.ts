/**
 * Independent models of the route rules (no code shared with src/Route.ts): which path patterns and which create
 * bodies are valid, and what a refusal must report. The property-based suites check the library against them.
 */

// ---------------------------------------------------------------------------------------------------------------
// The oracle
// ---------------------------------------------------------------------------------------------------------------

const STATIC_TEXT = /^(?:[A-Za-z0-9\-._~!$&'+,;=@]|%[0-9A-F]{2})+$/
const PARAM_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,63}$/
const WILDCARD_SEGMENT = /^\*([A-Za-z_][A-Za-z0-9_]{0,63})$/
export const UNRESERVED = /^[A-Za-z0-9\-._~]$/

type OraclePart = { readonly _tag: "Static"; readonly value: string } | {
  readonly _tag: "Param"
  readonly name: string
}

export type OracleSegment =
  | OraclePart
  | {
    readonly _tag: "Mixed"
    readonly parts: ReadonlyArray<OraclePart>
    readonly shape: string
    readonly staticLength: number
  }
  | { readonly _tag: "Wildcard"; readonly name: string }

export interface OracleParse {
  readonly segments: ReadonlyArray<OracleSegment>
  readonly params: ReadonlyArray<string>
  readonly shape: string
}

const staticTextOk = (text: string) =>
  STATIC_TEXT.test(text) &&
  [...text.matchAll(/%([0-9A-F]{2})/g)].every((escape) =>
    !UNRESERVED.test(String.fromCharCode(parseInt(escape[1]!, 16)))
  )

/**
 * A segment that is not a wildcard, read as the rules say: every ":" starts a name that runs to the first character
 * outside [A-Za-z0-9_]; the texts around the names are static text. `undefined` when it breaks a rule.
 */
const readSegment = (part: string): ReadonlyArray<OraclePart> | undefined => {
  // Odd pieces are ":name" tokens (possibly with an empty or bad name), even pieces the static texts around them.
  const pieces = part.split(/(:[A-Za-z0-9_]*)/)
  const parts: Array<OraclePart> = []
  for (const [i, piece] of pieces.entries()) {
    if (i % 2 === 1) {
      if (!PARAM_NAME.test(piece.slice(1))) return undefined
      parts.push({ _tag: "Param", name: piece.slice(1) })
    } else if (piece === "") {
      // Two parameters need static text between them.
      if (i > 0 && i < pieces.length - 1) return undefined
    } else {
      if (!staticTextOk(piece)) return undefined
      parts.push({ _tag: "Static", value: piece })
    }
  }
  return parts
}

/** What the rules say about `path`: its segments and shape when it is a valid pattern, `undefined` otherwise. */
export const oracle = (path: string): OracleParse | undefined => {
  if (path.length < 1 || path.length > 2048) return undefined
  if (path === "/") return { segments: [], params: [], shape: "/" }
  if (!path.startsWith("/")) return undefined
  const texts = path.slice(1).split("/")
  if (texts.length > 64) return undefined
  const segments: Array<OracleSegment> = []
  const params: Array<string> = []
  for (const [i, text] of texts.entries()) {
    const wildcard = WILDCARD_SEGMENT.exec(text)
    if (wildcard !== null) {
      if (i !== texts.length - 1) return undefined
      params.push(wildcard[1]!)
      segments.push({ _tag: "Wildcard", name: wildcard[1]! })
      continue
    }
    const parts = readSegment(text)
    if (parts === undefined || parts.length === 0) return undefined
    const names = parts.flatMap((p) => p._tag === "Param" ? [p.name] : [])
    params.push(...names)
    if (parts.length === 1 && parts[0]!._tag === "Static") {
      if (text === "." || text === "..") return undefined
      segments.push(parts[0]!)
    } else if (parts.length === 1) {
      segments.push(parts[0]!)
    } else {
      const statics = parts.flatMap((p) => p._tag === "Static" ? [p.value] : [])
      segments.push({
        _tag: "Mixed",
        parts,
        shape: parts.map((p) => p._tag === "Static" ? p.value : ":").join(""),
        staticLength: statics.join("").length
      })
    }
  }
  if (new Set(params).size !== params.length) return undefined
  const shape = "/" +
    segments.map((s) =>
      s._tag === "Static" ? s.value : s._tag === "Param" ? ":" : s._tag === "Wildcard" ? "*" : s.shape
    ).join("/")
  return { segments, params, shape }
}

/**
 * Positions the rules say must be reported for a refused path of 1–2048 characters: every "?", "#", space, "(",
 * ")", "{", "}", non-ASCII character (its first UTF-16 unit), "*" that does not start the last segment, empty
 * segment, trailing slash, dot segment, ":" not followed by a name, name used again, and the start of a 65th
 * segment.
 */
export const mustReport = (path: string): ReadonlyArray<number> => {
  if (path.length < 1 || path.length > 2048) return []
  const positions = new Set<number>()
  if (!path.startsWith("/")) positions.add(0)
  const lastSegment = path.lastIndexOf("/") + 1
  for (let i = 0; i < path.length; i++) {
    const c = path.charCodeAt(i)
    if ("?# (){}".includes(path[i]!)) positions.add(i)
    if (c === 42 && !(i === lastSegment && i > 0)) positions.add(i)
    if (c >= 128 && !(c >= 0xdc00 && c <= 0xdfff && i > 0 && isHighSurrogate(path.charCodeAt(i - 1)))) {
      positions.add(i)
    }
    if (c === 58 && !/[A-Za-z0-9_]/.test(path[i + 1] ?? "")) positions.add(i)
  }
  if (path !== "/") {
    if (path.length > 1 && path.endsWith("/")) positions.add(path.length - 1)
    const seen = new Set<string>()
    let start = path.startsWith("/") ? 1 : 0
    const parts = path.slice(start).split("/")
    for (const [i, part] of parts.entries()) {
      if (i === 64) positions.add(start)
      if (part === "" && start < path.length) positions.add(start - 1) // "//"
      if (part === "." || part === "..") positions.add(start)
      // A name used again, at its ":" or "*".
      const names = part.startsWith("*")
        ? i === parts.length - 1 ? [...part.matchAll(/^\*([A-Za-z0-9_]+)/g)] : []
        : [...part.matchAll(/:([A-Za-z0-9_]+)/g)]
      for (const name of names) {
        if (!PARAM_NAME.test(name[1]!)) continue
        if (seen.has(name[1]!)) positions.add(start + name.index)
        seen.add(name[1]!)
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
// A middleware entry: a name, or `{ "name", "config"? }` whose config is a plain JSON object (docs/router.md).
const entryName = (u: unknown): unknown =>
  typeof u === "object" && u !== null && !Array.isArray(u) &&
    Object.keys(u).every((key) => key === "name" || key === "config") &&
    ((u as { config?: unknown }).config === undefined || isPlainConfig((u as { config?: unknown }).config))
    ? (u as { name?: unknown }).name
    : u
const isPlainConfig = (u: unknown) =>
  typeof u === "object" && u !== null && !Array.isArray(u) &&
  Object.values(u).every((v) => typeof v === "string" || typeof v === "boolean" || Number.isSafeInteger(v))
export const middlewareOk = (u: unknown) =>
  u === undefined ||
  (Array.isArray(u) && u.length <= 32 && u.map(entryName).every(nameOk) && new Set(u.map(entryName)).size === u.length)
export const pathOk = (u: unknown) => typeof u === "string" && oracle(u) !== undefined
export const isRecord = (u: unknown): u is Record<string, unknown> =>
  typeof u === "object" && u !== null && !Array.isArray(u)

/**
 * The problems the rules predict for a body, as the fields that must be reported: `""` for a body that is not
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

/**
 * The field an issue path belongs to: `middleware[3]` (and an entry's parts, `middleware[3].name`) to `middleware`
 * (unless the body has such a key).
 */
export const groupOf = (body: Record<string, unknown>, path: string) =>
  /^middleware\[\d+\](?:[.[].*)?$/.test(path) && !Object.prototype.hasOwnProperty.call(body, path)
    ? "middleware"
    : path

/** `true` for an issue path a body can have: a field, an item of its middleware list, or one of its keys. */
export const knownPath = (body: unknown, path: string): boolean => {
  if (!isRecord(body)) return path === ""
  if (FIELDS.includes(path) || Object.prototype.hasOwnProperty.call(body, path)) return true
  // An entry `{ "name", "config" }` is reported at its parts (`middleware[0].name`, `middleware[1].config.max`).
  const item = /^middleware\[(\d+)\](?:[.[].*)?$/.exec(path)
  if (item !== null) return Array.isArray(body.middleware) && Number(item[1]) < body.middleware.length
  return false
}
