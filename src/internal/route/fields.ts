/**
 * A route's description, tags and configured middleware entries (docs/router.md: descriptions, tags and middleware
 * configuration): their rules, with a problem per fault at its path, and the one form every store keeps them in.
 *
 * @internal
 */
import * as Grammar from "./grammar.js"

/** A JSON object, as a middleware's config is. */
export type ConfigObject = { readonly [key: string]: unknown }

/** A middleware entry with its config; `{ "name": "x" }` without one is kept as the name `"x"`. */
export interface Configured {
  readonly name: Grammar.MiddlewareName
  readonly config: ConfigObject
}

/** One entry of a route's middleware list: a name, or a name with its config. */
export type Entry = Grammar.MiddlewareName | Configured

export const MAX_DESCRIPTION_LENGTH = 1024
export const MAX_TAGS = 16
export const TAG_PATTERN = /^[a-z0-9][a-z0-9._:/-]{0,63}$/
export const MAX_CONFIG_BYTES = 4096
export const MAX_CONFIG_DEPTH = 8

/** One problem, at its path (`description`, `tags[2]`, `middleware[1].config`). */
export interface Issue {
  readonly path: string
  readonly message: string
}

const describeType = (u: unknown): string =>
  u === null ? "null" : Array.isArray(u) ? "an array" : typeof u === "object" ? "an object" : `a ${typeof u}`

const isRecord = (u: unknown): u is Record<string, unknown> => typeof u === "object" && u !== null && !Array.isArray(u)

/** The name of a middleware entry. */
export const nameOf = (entry: Entry): Grammar.MiddlewareName => typeof entry === "string" ? entry : entry.name

/** The config of a middleware entry, `undefined` for a bare name. */
export const configOf = (entry: Entry): ConfigObject | undefined => typeof entry === "string" ? undefined : entry.config

/** `true` when some entry carries a config. */
export const hasConfig = (entries: ReadonlyArray<Entry>): boolean => entries.some((entry) => typeof entry !== "string")

// Why `text` is not text a store keeps: a lone surrogate has no UTF-8 form (and Postgres refuses it).
const loneSurrogate = (text: string): number => {
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (c >= 0xd800 && c <= 0xdbff) {
      const d = text.charCodeAt(i + 1)
      if (d >= 0xdc00 && d <= 0xdfff) i++
      else return i
    } else if (c >= 0xdc00 && c <= 0xdfff) return i
  }
  return -1
}

const codePoints = (text: string): number => {
  let n = 0
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (c < 0xd800 || c > 0xdbff) n++
  }
  return n
}

const isControl = (c: number) => c < 0x20 || (c >= 0x7f && c <= 0x9f)

/** Why `value` is not a description, or `undefined`. */
export const checkDescription = (value: unknown): string | undefined => {
  if (typeof value !== "string") return `must be a string (got ${describeType(value)})`
  const length = codePoints(value)
  if (length > MAX_DESCRIPTION_LENGTH) {
    return `must be at most ${MAX_DESCRIPTION_LENGTH} characters (got ${length}): shorten it`
  }
  for (let i = 0; i < value.length; i++) {
    const c = value.charCodeAt(i)
    if (isControl(c)) {
      return `must not hold control characters (U+${
        c.toString(16).toUpperCase().padStart(4, "0")
      } at ${i}): write it on one line without tabs`
    }
  }
  const lone = loneSurrogate(value)
  return lone === -1 ? undefined : `is not valid Unicode (a lone surrogate at ${lone})`
}

/** Every problem of a tag list, each at its path. */
export const checkTags = (value: unknown): ReadonlyArray<Issue> => {
  if (!Array.isArray(value)) {
    return [{
      path: "tags",
      message: `must be an array of tags such as ["team:payments"] (got ${describeType(value)})`
    }]
  }
  const issues: Array<Issue> = []
  if (value.length > MAX_TAGS) {
    issues.push({ path: "tags", message: `must hold at most ${MAX_TAGS} tags (got ${value.length}): drop some` })
  }
  const seen = new Map<string, number>()
  for (let i = 0; i < value.length && i < MAX_TAGS * 2; i++) {
    const tag: unknown = value[i]
    const at = `tags[${i}]`
    if (typeof tag !== "string") issues.push({ path: at, message: `must be a string (got ${describeType(tag)})` })
    else if (!TAG_PATTERN.test(tag)) {
      issues.push({
        path: at,
        message: `${JSON.stringify(tag.slice(0, 80))} is not a tag: 1–64 of lowercase letters, digits and . _ : / -, ` +
          `starting with a letter or digit (such as "team:payments")`
      })
    } else if (seen.has(tag)) {
      issues.push({ path: at, message: `"${tag}" is given twice (at ${seen.get(tag)} and ${i}): give each tag once` })
    } else seen.set(tag, i)
  }
  return issues
}

const utf8Length = (text: string): number => {
  let n = 0
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    n += c < 0x80 ? 1 : c < 0x800 ? 2 : c >= 0xd800 && c <= 0xdbff ? (i++, 4) : 3
  }
  return n
}

// The problems of a JSON value inside a config at `at`, one level below `depth`.
const checkValue = (value: unknown, at: string, depth: number, issues: Array<Issue>): void => {
  if (typeof value === "string") {
    if (value.includes("\u0000")) issues.push({ path: at, message: "must not hold the character U+0000" })
    else if (loneSurrogate(value) !== -1) issues.push({ path: at, message: "is not valid Unicode (a lone surrogate)" })
    return
  }
  if (typeof value === "number") {
    if (!Number.isFinite(value)) issues.push({ path: at, message: "is a number too large for JSON" })
    return
  }
  if (value === null || typeof value === "boolean" || typeof value !== "object") return
  if (depth >= MAX_CONFIG_DEPTH) {
    issues.push({
      path: at,
      message: `is nested too deep: a config holds at most ${MAX_CONFIG_DEPTH} levels of objects and arrays`
    })
    return
  }
  if (Array.isArray(value)) {
    value.forEach((item, i) => checkValue(item, `${at}[${i}]`, depth + 1, issues))
    return
  }
  for (const key of Object.keys(value)) {
    if (key.includes("\u0000") || loneSurrogate(key) !== -1) {
      issues.push({ path: at, message: `the key ${JSON.stringify(key)} is not text a store keeps` })
    }
    checkValue((value as Record<string, unknown>)[key], Grammar.memberPath(at, key), depth + 1, issues)
  }
}

/** Every problem of a config at `at` (`middleware[1].config`). */
export const checkConfig = (value: unknown, at: string): ReadonlyArray<Issue> => {
  if (!isRecord(value)) {
    return [{ path: at, message: `must be a JSON object such as {"max": 100} (got ${describeType(value)})` }]
  }
  const issues: Array<Issue> = []
  checkValue(value, at, 0, issues)
  if (issues.length > 0) return issues
  const bytes = utf8Length(JSON.stringify(value))
  return bytes > MAX_CONFIG_BYTES
    ? [{ path: at, message: `is ${bytes} bytes as JSON, over the ${MAX_CONFIG_BYTES} a config may have: shorten it` }]
    : []
}

/**
 * The problems of one middleware entry at `at` (`middleware[1]`), besides its name's: an object must be exactly
 * `{ "name", "config"? }`.
 */
export const checkEntryObject = (entry: Record<string, unknown>, at: string): ReadonlyArray<Issue> => {
  const issues: Array<Issue> = []
  for (const key of Object.keys(entry)) {
    if (key !== "name" && key !== "config") {
      issues.push({
        path: Grammar.memberPath(at, key),
        message: `unknown field "${key}": a middleware entry has only "name" and "config"`
      })
    }
  }
  if (!Object.prototype.hasOwnProperty.call(entry, "name")) {
    issues.push({ path: `${at}.name`, message: "is required: the name of the middleware function" })
  }
  if (Object.prototype.hasOwnProperty.call(entry, "config")) issues.push(...checkConfig(entry.config, `${at}.config`))
  return issues
}

// JavaScript puts array-index keys first, in numeric order, whatever order an object was built in.
const isIndex = (key: string) => /^(?:0|[1-9][0-9]{0,9})$/.test(key) && Number(key) < 4294967295

const byteCompare = (a: string, b: string) => {
  const la = utf8Length(a)
  const lb = utf8Length(b)
  if (la !== lb) return la - lb
  const ea = new TextEncoder().encode(a)
  const eb = new TextEncoder().encode(b)
  for (let i = 0; i < ea.length; i++) if (ea[i] !== eb[i]) return ea[i]! - eb[i]!
  return 0
}

// Postgres's jsonb orders an object's keys shorter first, then byte by byte; JavaScript moves index keys first.
const compareKeys = (a: string, b: string) => {
  const ia = isIndex(a)
  const ib = isIndex(b)
  if (ia !== ib) return ia ? -1 : 1
  return ia ? Number(a) - Number(b) : byteCompare(a, b)
}

const canonicalValue = (value: unknown): unknown => {
  if (typeof value !== "object" || value === null) return value
  if (Array.isArray(value)) return value.map(canonicalValue)
  const out: Record<string, unknown> = {}
  for (const key of Object.keys(value).sort(compareKeys)) {
    out[key] = canonicalValue((value as Record<string, unknown>)[key])
  }
  return out
}

/**
 * A config's one kept form: every object's keys in the order Postgres's jsonb keeps them (and JavaScript then reads
 * them), so a config reads the same bytes from every store, the log and every follower.
 */
export const canonicalConfig = (config: ConfigObject): ConfigObject => canonicalValue(config) as ConfigObject

/** A valid entry as a route keeps it: `{ "name": "x" }` becomes `"x"`, a config its canonical form. */
export const canonicalEntry = (entry: unknown): Entry =>
  typeof entry === "string"
    ? entry as Grammar.MiddlewareName
    : (entry as { config?: ConfigObject }).config === undefined
    ? (entry as Configured).name
    : { name: (entry as Configured).name, config: canonicalConfig((entry as Configured).config) }

/** `true` for equal middleware lists: the same names, in order, with the same configs. */
export const sameEntries = (a: ReadonlyArray<Entry>, b: ReadonlyArray<Entry>): boolean =>
  a.length === b.length && a.every((entry, i) => {
    const other = b[i]!
    if (typeof entry === "string" || typeof other === "string") return entry === other
    return entry.name === other.name && JSON.stringify(entry.config) === JSON.stringify(other.config)
  })

/** `true` for equal tag lists (order counts). */
export const sameTags = (a: ReadonlyArray<string> | undefined, b: ReadonlyArray<string> | undefined): boolean => {
  const x = a ?? []
  const y = b ?? []
  return x.length === y.length && x.every((tag, i) => tag === y[i])
}
