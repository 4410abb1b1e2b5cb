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

/** The names of a "Middleware" field: separated by commas, spaces around them ignored, empty entries dropped. */
const namesOf = (text: string): Array<string> =>
  text.split(",").map((name) => name.trim()).filter((name) => name !== "")

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
    hint: "names separated by commas",
    text: (route) => route.middleware.join(", "),
    read: namesOf
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
