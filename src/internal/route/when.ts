/**
 * A route's conditions (`when`, docs/router.md: conditions): the rules of their fields, their canonical form (what a
 * route stores, what conflicts compare and what orders routes of one shape), the precedence among routes of one shape,
 * and how a request is tested against them. Plain functions: the validators, the stores, the table and `match` call
 * them.
 *
 * @internal
 */
import * as Grammar from "./grammar.js"

/** One header or query condition: a name and, optionally, the exact value required (without it, presence). */
export interface Condition {
  readonly name: string
  readonly value?: string
}

/**
 * A route's conditions in canonical form: `host` lowercase, header names lowercase, each list sorted by name then
 * value, an empty list left out. A route without conditions has no `when` at all.
 */
export interface When {
  readonly host?: string
  readonly headers?: ReadonlyArray<Condition>
  readonly query?: ReadonlyArray<Condition>
}

export const MAX_HEADERS = 8
export const MAX_QUERY = 8
/** The longest DNS name (RFC 1035), with its `*.` for a wildcard. */
export const MAX_HOST_LENGTH = 255
export const MAX_NAME_LENGTH = 128
export const MAX_VALUE_LENGTH = 1024

// RFC 9110 §5.6.2 `token`: a header's name.
const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/
const LABEL = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/
// A header value as RFC 9110 §5.5 allows it: visible characters, spaces and tabs inside, no other control character.
const CONTROL = /[\u0000-\u0008\u000a-\u001f\u007f]/

const describe = (u: unknown): string =>
  u === null ? "null" : Array.isArray(u) ? "an array" : typeof u === "object" ? "an object" : `a ${typeof u}`

const isRecord = (u: unknown): u is Record<string, unknown> => typeof u === "object" && u !== null && !Array.isArray(u)

/** One problem, at its path below the route (`when.headers[2].name`). */
export interface Issue {
  readonly path: string
  readonly message: string
}

type Add = (path: string, message: string) => void

const FIELDS = new Set(["host", "headers", "query"])
const CONDITION_FIELDS = new Set(["name", "value"])

// Why a DNS name (the host, or a wildcard's suffix) is refused, or undefined.
const dnsProblem = (name: string): string | undefined => {
  if (name.length === 0) return "is empty"
  const labels = name.split(".")
  for (const label of labels) {
    if (!LABEL.test(label)) {
      return label.length === 0
        ? "has an empty label (two dots, or a dot at an end)"
        : `has the label ${JSON.stringify(label)}: a label is 1–63 lowercase letters, digits and inner hyphens`
    }
  }
  return undefined
}

const checkHost = (host: unknown, add: Add): void => {
  const example = "such as \"api.example.com\" or \"*.example.com\""
  if (typeof host !== "string") return add("when.host", `must be a string ${example} (got ${describe(host)})`)
  if (host.length > MAX_HOST_LENGTH) {
    return add("when.host", `must be at most ${MAX_HOST_LENGTH} characters (got ${host.length})`)
  }
  if (host !== host.toLowerCase()) {
    return add("when.host", `hosts are written in lowercase: use ${JSON.stringify(host.toLowerCase())}`)
  }
  if (/:\d*$/.test(host)) {
    return add("when.host", `${JSON.stringify(host)} has a port: a host is compared without its port, so leave it out`)
  }
  const wildcard = host.startsWith("*.")
  const problem = dnsProblem(wildcard ? host.slice(2) : host)
  if (problem !== undefined) {
    add(
      "when.host",
      `${JSON.stringify(host)} ${problem}; a host is a DNS name, or "*." followed by one (${example})`
    )
  }
}

const checkConditions = (
  list: unknown,
  field: "headers" | "query",
  add: Add
): void => {
  const at = `when.${field}`
  const max = field === "headers" ? MAX_HEADERS : MAX_QUERY
  const example = field === "headers"
    ? "such as [{\"name\": \"x-version\", \"value\": \"2\"}]"
    : "such as [{\"name\": \"beta\"}]"
  if (!Array.isArray(list)) return add(at, `must be an array ${example} (got ${describe(list)})`)
  if (list.length > max) add(at, `must list at most ${max} conditions (got ${list.length})`)
  const seen = new Map<string, number>()
  list.slice(0, max).forEach((condition: unknown, i) => {
    const here = `${at}[${i}]`
    if (!isRecord(condition)) return add(here, `must be an object ${example.slice(9, -1)} (got ${describe(condition)})`)
    for (const key of Object.keys(condition)) {
      if (!CONDITION_FIELDS.has(key)) {
        add(Grammar.memberPath(here, key), `unknown field "${key}": a condition has only name and value`)
      }
    }
    const name = condition.name
    if (typeof name !== "string") {
      add(`${here}.name`, `is required: a ${field === "headers" ? "header" : "parameter"} name (got ${describe(name)})`)
    } else if (name.length === 0 || name.length > MAX_NAME_LENGTH) {
      add(`${here}.name`, `must be 1–${MAX_NAME_LENGTH} characters (got ${name.length})`)
    } else if (field === "headers" && !TOKEN.test(name)) {
      add(`${here}.name`, `${JSON.stringify(name)} is not a header name: use letters, digits and !#$%&'*+.^_\`|~-`)
    } else if (CONTROL.test(name) || name.includes("\t")) {
      add(`${here}.name`, "must not contain control characters")
    } else {
      // Header names compare case-insensitively everywhere, so `X-Version` and `x-version` are one name.
      const key = field === "headers" ? name.toLowerCase() : name
      const first = seen.get(key)
      if (first !== undefined) {
        add(`${here}.name`, `${JSON.stringify(name)} is already a condition at ${at}[${first}]: name it once`)
      } else seen.set(key, i)
    }
    const value = condition.value
    if (value === undefined) return
    if (typeof value !== "string") {
      add(`${here}.value`, `must be a string, or left out to require presence only (got ${describe(value)})`)
    } else if (value.length > MAX_VALUE_LENGTH) {
      add(`${here}.value`, `must be at most ${MAX_VALUE_LENGTH} characters (got ${value.length})`)
    } else if (CONTROL.test(value)) add(`${here}.value`, "must not contain control characters")
  })
}

/** Every problem of a `when` value. */
export const check = (value: unknown): ReadonlyArray<Issue> => {
  const issues: Array<Issue> = []
  const add: Add = (path, message) => void issues.push({ path, message })
  if (!isRecord(value)) {
    add(
      "when",
      `must be an object such as {"host": "api.example.com", "headers": [{"name": "x-version", "value": "2"}]} (got ${
        describe(value)
      })`
    )
    return issues
  }
  for (const key of Object.keys(value)) {
    if (!FIELDS.has(key)) {
      add(Grammar.memberPath("when", key), `unknown field "${key}": conditions are only host, headers and query`)
    }
  }
  if (value.host !== undefined) checkHost(value.host, add)
  if (value.headers !== undefined) checkConditions(value.headers, "headers", add)
  if (value.query !== undefined) checkConditions(value.query, "query", add)
  return issues
}

const byNameThenValue = (a: Condition, b: Condition): number =>
  a.name < b.name
    ? -1
    : a.name > b.name
    ? 1
    : (a.value ?? "") < (b.value ?? "")
    ? -1
    : (a.value ?? "") > (b.value ?? "")
    ? 1
    : 0

const canonicalList = (
  list: ReadonlyArray<Record<string, unknown>>,
  lower: boolean
): ReadonlyArray<Condition> =>
  list.map((c) => {
    const name = lower ? (c.name as string).toLowerCase() : c.name as string
    return c.value === undefined ? { name } : { name, value: c.value as string }
  }).sort(byNameThenValue)

/**
 * A valid `when` in canonical form, or `undefined` when it has no condition (`{}`, empty lists): the default, which a
 * route keeps as no `when` at all.
 */
export const canonical = (value: Record<string, unknown>): When | undefined => {
  const headers = value.headers as ReadonlyArray<Record<string, unknown>> | undefined
  const query = value.query as ReadonlyArray<Record<string, unknown>> | undefined
  const when: { host?: string; headers?: ReadonlyArray<Condition>; query?: ReadonlyArray<Condition> } = {}
  if (value.host !== undefined) when.host = value.host as string
  if (headers !== undefined && headers.length > 0) when.headers = canonicalList(headers, true)
  if (query !== undefined && query.length > 0) when.query = canonicalList(query, false)
  return when.host === undefined && when.headers === undefined && when.query === undefined ? undefined : when
}

/**
 * The canonical JSON of conditions: keys in the order host, headers, query, no whitespace; `""` for none (a route
 * without conditions), which is what the stores key conflicts by.
 */
export const keyOf = (when: When | undefined): string => when === undefined ? "" : JSON.stringify(when)

/** Equal conditions (as sets): canonical forms are sorted, so their JSON compares. */
export const equal = (a: When | undefined, b: When | undefined): boolean => a === b || keyOf(a) === keyOf(b)

const valued = (list: ReadonlyArray<Condition> | undefined): number =>
  list === undefined ? 0 : list.reduce((n, c) => n + (c.value === undefined ? 0 : 1), 0)

// The rank of a host: an exact host beats every wildcard, a wildcard with a longer suffix a shorter one, any host none.
const hostRank = (host: string | undefined): number =>
  host === undefined ? 0 : host.startsWith("*.") ? 1 + host.length : 2 * MAX_HOST_LENGTH

/**
 * Negative when conditions `a` take precedence over `b` among routes of one method and shape: the host (exact, then
 * wildcard by longer suffix, then none), more header conditions, more query conditions, more conditions with a
 * value, then the canonical JSON in byte order. No conditions at all come last.
 */
export const compare = (a: When | undefined, b: When | undefined): number => {
  if (a === b) return 0
  const ka = keyOf(a)
  const kb = keyOf(b)
  return hostRank(b?.host) - hostRank(a?.host) ||
    (b?.headers?.length ?? 0) - (a?.headers?.length ?? 0) ||
    (b?.query?.length ?? 0) - (a?.query?.length ?? 0) ||
    valued(b?.headers) + valued(b?.query) - valued(a?.headers) - valued(a?.query) ||
    (ka < kb ? -1 : ka > kb ? 1 : 0)
}

// ---------------------------------------------------------------------------------------------------------------
// Testing a request
// ---------------------------------------------------------------------------------------------------------------

/**
 * A request's headers as a router has them: Node's `IncomingHttpHeaders` or Effect's `Headers` (a record by lowercase
 * name), or the Fetch API's `Headers`. Read only when a route reached has conditions.
 */
export type HeaderSource =
  | { readonly get: (name: string) => string | null }
  | Readonly<Record<string, string | ReadonlyArray<string> | undefined>>

/** The value of header `name` (lowercase), several fields joined with ", " as Node and Fetch join them. */
export const headerOf = (headers: HeaderSource | undefined, name: string): string | undefined => {
  if (headers === undefined) return undefined
  if (typeof headers.get === "function") {
    return (headers as { readonly get: (name: string) => string | null }).get(name) ?? undefined
  }
  const value = (headers as Readonly<Record<string, string | ReadonlyArray<string> | undefined>>)[name]
  return value === undefined ? undefined : typeof value === "string" ? value : value.join(", ")
}

/**
 * The request's host: its `Host` header (or HTTP/2's `:authority`) without the port, lowercase, one trailing dot
 * dropped (`Example.COM.:8080` is `example.com`); `undefined` when it has none.
 */
export const hostOf = (headers: HeaderSource | undefined): string | undefined => {
  const raw = headerOf(headers, "host") ?? headerOf(headers, ":authority")
  if (raw === undefined || raw === "") return undefined
  let end = raw.length
  if (raw.charCodeAt(0) === 91 /* [ */) end = raw.indexOf("]") + 1 || raw.length
  else {
    const colon = raw.lastIndexOf(":")
    if (colon >= 0) end = colon
  }
  if (raw.charCodeAt(end - 1) === 46 /* . */) end--
  return raw.slice(0, end).toLowerCase()
}

/** Whether `host` (as `hostOf` gives it) meets a route's `host`: equal, or for `*.suffix` one or more labels before. */
export const hostMatches = (condition: string, host: string | undefined): boolean => {
  if (host === undefined) return false
  if (!condition.startsWith("*.")) return host === condition
  const suffix = condition.length - 1 // ".suffix"
  return host.length > suffix && host.endsWith(condition.slice(1)) && host.charCodeAt(host.length - suffix - 1) !== 46
}

/** The query string of a request target, as `URLSearchParams` reads it (empty when it has none). */
export const queryOf = (target: string): URLSearchParams => {
  const q = target.indexOf("?")
  if (q < 0) return new URLSearchParams()
  const hash = target.indexOf("#", q)
  return new URLSearchParams(hash < 0 ? target.slice(q + 1) : target.slice(q + 1, hash))
}

/**
 * One request as conditions read it: its headers, and its host and query worked out on first use and kept (a lookup
 * makes one only when it reaches a route with conditions).
 */
export class Facts {
  #host: string | undefined | null = null
  #query: URLSearchParams | undefined = undefined
  constructor(readonly headers: HeaderSource | undefined, readonly target: string) {}
  get host(): string | undefined {
    if (this.#host === null) this.#host = hostOf(this.headers)
    return this.#host
  }
  get query(): URLSearchParams {
    return this.#query ??= queryOf(this.target)
  }
}

const headerMet = (condition: Condition, headers: HeaderSource | undefined): boolean => {
  const value = headerOf(headers, condition.name)
  return value !== undefined && (condition.value === undefined || value === condition.value)
}

// A query condition holds when the parameter is present, and, with a value, when one of its values is that value.
const queryMet = (condition: Condition, query: URLSearchParams): boolean =>
  condition.value === undefined ? query.has(condition.name) : query.getAll(condition.name).includes(condition.value)

/** Whether the request meets every condition of `when`: the router's test, which says nothing of why. */
export const meets = (when: When, facts: Facts): boolean => {
  if (when.host !== undefined && !hostMatches(when.host, facts.host)) return false
  const headerList = when.headers
  if (headerList !== undefined) {
    for (let i = 0; i < headerList.length; i++) if (!headerMet(headerList[i]!, facts.headers)) return false
  }
  const queryList = when.query
  if (queryList !== undefined) {
    for (let i = 0; i < queryList.length; i++) if (!queryMet(queryList[i]!, facts.query)) return false
  }
  return true
}

const quote = (values: ReadonlyArray<string>) => values.map((v) => JSON.stringify(v)).join(", ")

/**
 * The first condition of `when` that the request fails, as its path (`when.headers[0]`) and a sentence, or `undefined`
 * when it meets them all: what `match` says of a near miss.
 */
export const failed = (when: When, facts: Facts): Issue | undefined => {
  if (when.host !== undefined && !hostMatches(when.host, facts.host)) {
    return {
      path: "when.host",
      message: facts.host === undefined
        ? `the request has no host, and the route needs ${JSON.stringify(when.host)}`
        : `the host ${JSON.stringify(facts.host)} is not ${JSON.stringify(when.host)}`
    }
  }
  const headerList = when.headers ?? []
  for (let i = 0; i < headerList.length; i++) {
    const condition = headerList[i]!
    if (headerMet(condition, facts.headers)) continue
    const value = headerOf(facts.headers, condition.name)
    return {
      path: `when.headers[${i}]`,
      message: value === undefined
        ? `the request has no header ${condition.name}`
        : `the header ${condition.name} is ${JSON.stringify(value)}, not ${JSON.stringify(condition.value)}`
    }
  }
  const queryList = when.query ?? []
  for (let i = 0; i < queryList.length; i++) {
    const condition = queryList[i]!
    if (queryMet(condition, facts.query)) continue
    const values = facts.query.getAll(condition.name)
    return {
      path: `when.query[${i}]`,
      message: values.length === 0
        ? `the query has no parameter ${JSON.stringify(condition.name)}`
        : `the query parameter ${JSON.stringify(condition.name)} is ${quote(values)}, not ${
          JSON.stringify(condition.value)
        }`
    }
  }
  return undefined
}
