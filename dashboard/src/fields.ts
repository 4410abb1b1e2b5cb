/**
 * A route's fields as the page shows and edits them, declared once: the form's inputs, what an edit sends, the two
 * versions of a conflict and a revision's before and after are all read from this list, so a field the API gains is
 * one entry here.
 */
import type { RouteFields } from "./api.js"
import type { Props } from "./dom.js"

export type Name = keyof RouteFields

export interface RouteField {
  readonly name: Name
  /** The form's label, which is the input's accessible name (docs/dashboard.md lists them). */
  readonly label: string
  readonly hint?: string
  readonly props?: Props
  /** The value as text: in the form's input, and wherever a route is shown field by field. */
  readonly text: (route: RouteFields) => string
  /** The form's input read back as the API takes the field. */
  readonly read: (text: string) => RouteFields[Name]
}

type Entry = RouteFields["middleware"][number]

/** The name of a middleware entry: the entry itself, or the name beside its config. */
export const nameOf = (entry: Entry): string => typeof entry === "string" ? entry : entry.name

/**
 * The middleware of a "Middleware" field: names separated by commas, spaces around them ignored, empty entries
 * dropped; or, for a list with configs, its JSON as the field shows it, so that an edit never drops a config.
 */
const middlewareOf = (text: string): RouteFields["middleware"] => {
  if (text.trim().startsWith("[")) {
    try {
      return JSON.parse(text) as RouteFields["middleware"]
    } catch {
      // Not JSON: read as names, which the API then refuses by name.
    }
  }
  return text.split(",").map((name) => name.trim()).filter((name) => name !== "")
}

export const FIELDS: ReadonlyArray<RouteField> = [
  {
    name: "method",
    label: "Method",
    hint: "such as GET, POST or PROPFIND",
    props: { required: true, autocapitalize: "characters" },
    text: (route) => route.method,
    read: (text) => text.trim()
  },
  {
    name: "path",
    label: "Path",
    hint: "such as /users/:id",
    props: { required: true },
    text: (route) => route.path,
    read: (text) => text
  },
  {
    name: "middleware",
    label: "Middleware",
    hint: "names separated by commas (a list with configs as its JSON)",
    text: (route) =>
      route.middleware.every((entry) => typeof entry === "string")
        ? route.middleware.join(", ")
        : JSON.stringify(route.middleware),
    read: middlewareOf
  },
  {
    name: "handler",
    label: "Handler",
    props: { required: true },
    text: (route) => route.handler,
    read: (text) => text.trim()
  }
]

/** Whether two routes hold the same value of a field, compared as the API sends it (a list's order counts). */
export const same = (a: RouteFields, b: RouteFields, name: Name): boolean =>
  JSON.stringify(a[name]) === JSON.stringify(b[name])

/** The names of the fields `after` changes from `before`. */
export const changedNames = (before: RouteFields, after: RouteFields): Array<Name> =>
  FIELDS.filter((field) => !same(before, after, field.name)).map((field) => field.name)

/** The given fields with their values in `route`: the body of a patch. */
export const pick = (route: RouteFields, names: ReadonlyArray<Name>): Partial<RouteFields> =>
  Object.fromEntries(names.map((name) => [name, route[name]]))
