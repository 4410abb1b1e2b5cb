/**
 * Validation of create and patch bodies: every problem at once, each with the field it concerns, up to
 * `MAX_ISSUES` of them.
 *
 * @internal
 */
import { Either } from "effect"
import * as Fields from "./fields.js"
import * as Grammar from "./grammar.js"
import * as Path from "./path.js"
import * as Split from "./split.js"
import * as When from "./when.js"

/**
 * One problem found in an input: where (`path` is `"method"`, `"middleware[1]"`, … and `""` for the whole body)
 * and a sentence that says what to do.
 */
export interface FieldIssue {
  readonly path: string
  readonly message: string
}

/**
 * A create input that passed every rule; `middleware` is `[]` when the body left it out, and `enabled` and `split`
 * are present only when not at their defaults (`enabled: false`, a split; a store keeps `enabled: true` as absent).
 */
export interface CreateRoute {
  readonly method: Grammar.HttpMethod
  readonly path: Grammar.RoutePath
  readonly middleware: ReadonlyArray<Fields.Entry>
  readonly handler: Grammar.HandlerName
  readonly enabled?: boolean
  readonly split?: Split.Split
  readonly description?: string
  readonly tags?: ReadonlyArray<string>
  readonly when?: When.When
}

/** The fields an update replaces, each with the rules of a create; `split: null` removes the split. */
export interface RoutePatch {
  readonly method?: Grammar.HttpMethod
  readonly path?: Grammar.RoutePath
  readonly middleware?: ReadonlyArray<Fields.Entry>
  readonly handler?: Grammar.HandlerName
  readonly enabled?: boolean
  readonly split?: Split.Split | null
  readonly description?: string
  readonly tags?: ReadonlyArray<string>
  /** `null` (or `{}` in the body) removes the conditions. */
  readonly when?: When.When | null
}

/** The most problems reported for one body: a huge invalid body costs no more to refuse than a small one. */
export const MAX_ISSUES = 50

// Collects issues until MAX_ISSUES; every check asks `full` before doing more work.
class Issues {
  readonly list: Array<FieldIssue> = []
  get full(): boolean {
    return this.list.length >= MAX_ISSUES
  }
  add(path: string, message: string): void {
    if (!this.full) this.list.push({ path, message })
  }
}

const FIELDS = ["method", "path", "middleware", "handler", "enabled", "split", "description", "tags", "when"] as const
type Field = typeof FIELDS[number]
const FIELD_NAMES: ReadonlySet<string> = new Set(FIELDS)

const describeType = (u: unknown): string =>
  u === null ? "null" : Array.isArray(u) ? "an array" : typeof u === "object" ? "an object" : `a ${typeof u}`

const isRecord = (u: unknown): u is Record<string, unknown> => typeof u === "object" && u !== null && !Array.isArray(u)

const hasOwn = (record: object, key: string) => Object.prototype.hasOwnProperty.call(record, key)

// The rules of one given field's value.
const checkField: Record<Field, (value: unknown, issues: Issues, body: Record<string, unknown>) => void> = {
  method: (value, issues) => {
    if (typeof value !== "string") {
      return issues.add("method", `must be a string such as "GET" (got ${describeType(value)})`)
    }
    const problem = Grammar.checkMethod(value)
    if (problem !== undefined) issues.add("method", problem)
  },
  path: (value, issues) => {
    if (typeof value !== "string") {
      return issues.add("path", `must be a string such as "/users/:id" (got ${describeType(value)})`)
    }
    const parsed = Path.parsePathReused(value)
    if (Either.isLeft(parsed)) { for (const issue of parsed.left) issues.add("path", issue.message) }
    else if (Grammar.isRoutingApiPath(value)) issues.add("path", Grammar.routingApiPathTaken(value))
  },
  middleware: (value, issues) => {
    if (!Array.isArray(value)) {
      return issues.add("middleware", `must be an array of names such as ["auth"] (got ${describeType(value)})`)
    }
    const tooMany = Grammar.checkMiddlewareList(value)
    if (tooMany !== undefined) issues.add("middleware", tooMany)
    const seen = new Set<string>()
    const names = value.map((entry: unknown) => isRecord(entry) ? entry.name : entry)
    for (let i = 0; i < value.length && !issues.full; i++) {
      const entry: unknown = value[i]
      const at = `middleware[${i}]`
      if (isRecord(entry)) {
        for (const issue of Fields.checkEntryObject(entry, at)) issues.add(issue.path, issue.message)
        if (!hasOwn(entry, "name")) continue
      } else if (typeof entry !== "string") {
        issues.add(at, `must be a string (a name) or {"name", "config"} (got ${describeType(entry)})`)
        continue
      }
      const name: unknown = names[i]
      const nameAt = isRecord(entry) ? `${at}.name` : at
      if (typeof name !== "string") {
        issues.add(nameAt, `must be a string (got ${describeType(name)})`)
        continue
      }
      const problem = Grammar.checkName(name)
      if (problem !== undefined) issues.add(nameAt, problem)
      else if (seen.has(name)) issues.add(nameAt, Grammar.duplicateMessage(names, i))
      seen.add(name)
    }
  },
  handler: (value, issues) => {
    if (typeof value !== "string") return issues.add("handler", `must be a string (got ${describeType(value)})`)
    const problem = Grammar.checkName(value)
    if (problem !== undefined) issues.add("handler", problem)
  },
  enabled: (value, issues) => {
    if (typeof value !== "boolean") issues.add("enabled", `must be true or false (got ${describeType(value)})`)
  },
  split: (value, issues, body) => {
    const handler = typeof body.handler === "string" ? body.handler : undefined
    for (const issue of Split.check(value, handler)) issues.add(issue.path, issue.message)
  },
  description: (value, issues) => {
    const problem = Fields.checkDescription(value)
    if (problem !== undefined) issues.add("description", problem)
  },
  tags: (value, issues) => {
    for (const issue of Fields.checkTags(value)) issues.add(issue.path, issue.message)
  },
  when: (value, issues) => {
    for (const issue of When.check(value)) issues.add(issue.path, issue.message)
  }
}

// A valid middleware list as a route keeps it: `{ "name": "x" }` as `"x"`, configs in their canonical form.
const entries = (value: ReadonlyArray<unknown>): ReadonlyArray<Fields.Entry> =>
  Fields.hasConfig(value as ReadonlyArray<Fields.Entry>)
    ? value.map(Fields.canonicalEntry)
    : value as ReadonlyArray<Fields.Entry>

// The optional fields of docs/router.md as a route keeps them: only when not at their defaults.
const optionalFields = (body: Record<string, unknown>) => ({
  ...(body.enabled === false ? { enabled: false } : {}),
  ...(body.split === undefined ? {} : { split: Split.canonical(body.split as Record<string, unknown>) }),
  ...(body.description === undefined || body.description === "" ? {} : { description: body.description }),
  ...(body.tags === undefined || (body.tags as ReadonlyArray<string>).length === 0 ? {} : { tags: body.tags }),
  ...whenOf(body)
})

// Conditions at their default (`{}`) are no conditions: a route keeps no `when` then.
const whenOf = (body: Record<string, unknown>): { readonly when?: When.When } => {
  const when = body.when === undefined ? undefined : When.canonical(body.when as Record<string, unknown>)
  return when === undefined ? {} : { when }
}

// What a create says of a required field it lacks; the others are optional.
const REQUIRED: Readonly<Partial<Record<Field, string>>> = {
  method: "is required: an HTTP method such as \"GET\"",
  path: "is required: a path pattern such as \"/users/:id\"",
  handler: "is required: the name of the handler function"
}

const unknownFieldMessage = (key: string): string => {
  if (key === "id" || key === "createdAt") return `"${key}" is assigned by the service: remove it from the body`
  const lower = key.toLowerCase()
  for (const field of FIELDS) {
    if (lower === field || lower === field + "s" || lower + "s" === field) {
      return `unknown field "${key}": did you mean "${field}"?`
    }
  }
  return `unknown field "${key}": a route has only method, path, handler, middleware, enabled, split, description, ` +
    "tags and when"
}

const checkUnknownFields = (record: Record<string, unknown>, issues: Issues): void => {
  for (const key in record) {
    if (issues.full) return
    if (!FIELD_NAMES.has(key) && hasOwn(record, key)) issues.add(key, unknownFieldMessage(key))
  }
}

/**
 * Validates a parsed JSON body as a create input.
 */
export const validateCreate = (body: unknown): Either.Either<CreateRoute, ReadonlyArray<FieldIssue>> => {
  if (!isRecord(body)) {
    return Either.left([{
      path: "",
      message: `the body must be a JSON object with the fields method, path, handler and optionally middleware (got ${
        describeType(body)
      })`
    }])
  }
  const issues = new Issues()
  for (const field of FIELDS) {
    // Own fields only: a boxed string's `split` is String.prototype's, not the body's.
    const value = hasOwn(body, field) ? body[field] : undefined
    const required = REQUIRED[field]
    if (value !== undefined) checkField[field](value, issues, body)
    else if (required !== undefined) issues.add(field, required)
  }
  checkUnknownFields(body, issues)
  if (issues.list.length > 0) return Either.left(issues.list)
  return Either.right({
    method: body.method,
    path: body.path,
    middleware: body.middleware === undefined ? [] : entries(body.middleware as ReadonlyArray<unknown>),
    handler: body.handler,
    ...optionalFields(body)
  } as CreateRoute)
}

const CLEAR_HINT: Partial<Record<Field, string>> = {
  middleware: ", or send [] to clear the list",
  enabled: ", or send true or false",
  description: ", or send \"\" to clear it",
  tags: ", or send [] to clear the list"
}

export const NOTHING_TO_CHANGE =
  "nothing to change: give at least one of method, path, middleware, handler, enabled, split, description, tags " +
  "and when"

/**
 * Validates a parsed JSON body as a patch: at least one field, each with the rules of a create; `null` is refused
 * for every field (leave a field out to keep it).
 */
export const validatePatch = (body: unknown): Either.Either<RoutePatch, ReadonlyArray<FieldIssue>> => {
  if (!isRecord(body)) {
    return Either.left([{
      path: "",
      message: `the body must be a JSON object with at least one of method, path, middleware and handler (got ${
        describeType(body)
      })`
    }])
  }
  const issues = new Issues()
  const patch: Record<string, unknown> = {}
  for (const field of FIELDS) {
    const value = body[field]
    if (value === undefined || !hasOwn(body, field)) continue
    patch[field] = value
    if (value === null && (field === "split" || field === "when")) continue
    if (value === null) {
      issues.add(field, `must not be null: leave "${field}" out to keep the stored value${CLEAR_HINT[field] ?? ""}`)
    } else {
      checkField[field](value, issues, body)
    }
  }
  if (patch.split !== undefined && patch.split !== null && issues.list.length === 0) {
    patch.split = Split.canonical(patch.split as Record<string, unknown>)
  }
  if (patch.middleware !== undefined && issues.list.length === 0) {
    patch.middleware = entries(patch.middleware as ReadonlyArray<unknown>)
  }
  if (patch.when !== undefined && patch.when !== null && issues.list.length === 0) {
    patch.when = When.canonical(patch.when as Record<string, unknown>) ?? null
  }
  checkUnknownFields(body, issues)
  // Said only of a body with nothing else wrong: `{"id": …}` needs the field removed, not a hint to add another.
  if (issues.list.length === 0 && Object.keys(patch).length === 0) issues.add("", NOTHING_TO_CHANGE)
  return issues.list.length > 0 ? Either.left(issues.list) : Either.right(patch as RoutePatch)
}
