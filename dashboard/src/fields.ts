/**
 * A route's fields as the page shows them, declared once: a conflict's two versions, a revision's before and after,
 * what an edit sends and what the live table compares are all read from this list, so a field the API gains is one
 * entry here (and its input in controls.ts).
 */
import type { Condition, MiddlewareEntry, RouteFields, Split, When } from "./api.js"

export type Name = keyof RouteFields

export interface RouteField {
  readonly name: Name
  /** The field's name as people read it (the form's label, docs/dashboard.md lists them). */
  readonly label: string
  /** The value as text, wherever a route is shown field by field. */
  readonly text: (route: RouteFields) => string
}

/**
 * The defaults of the fields a route carries only when it departs from them (docs/http-api.md): the API leaves a field
 * at its default out of its answers, and the page sends it only to bring a field back to it.
 */
const DEFAULTS: Partial<Record<Name, unknown>> = { enabled: true, description: "", tags: [], when: {} }

/** The field's value, its default where the route leaves it out (a split's is none: `null`). */
export const valueOf = (route: RouteFields, name: Name): unknown => route[name] ?? DEFAULTS[name] ?? null

const atDefault = (route: RouteFields, name: Name): boolean =>
  JSON.stringify(valueOf(route, name)) === JSON.stringify(DEFAULTS[name] ?? null)

/** A share in basis points as a percentage: 1,000 is "10 %", 1,250 "12.5 %". */
export const percent = (weight: number): string => `${(weight / 100).toFixed(2).replace(/\.?0+$/, "")} %`

/** A middleware entry's name. */
export const nameOf = (entry: MiddlewareEntry): string => typeof entry === "string" ? entry : entry.name

export const middlewareText = (entry: MiddlewareEntry): string =>
  typeof entry === "string" ? entry : `${entry.name} ${JSON.stringify(entry.config ?? {})}`

/** A condition as the form takes it: `name`, or `name<separator>value`. */
export const conditionText = (condition: Condition, separator: string): string =>
  condition.value === undefined ? condition.name : `${condition.name}${separator}${condition.value}`

const whenText = (when: When): string =>
  [
    when.host === undefined ? undefined : `host ${when.host}`,
    ...(when.headers ?? []).map((c) => `header ${conditionText(c, ": ")}`),
    ...(when.query ?? []).map((c) => `query ${conditionText(c, "=")}`)
  ].filter(Boolean).join("; ")

const splitText = (split: Split): string =>
  `by ${split.by}${split.group === undefined ? "" : `, group ${split.group}`}: ${
    split.targets.map((t) => `${t.handler} ${percent(t.weight)}`).join(", ")
  }, the route's handler the rest${split.override === undefined ? "" : `; override header ${split.override}`}`

export const FIELDS: ReadonlyArray<RouteField> = [
  { name: "method", label: "Method", text: (route) => route.method },
  { name: "path", label: "Path", text: (route) => route.path },
  { name: "middleware", label: "Middleware", text: (route) => route.middleware.map(middlewareText).join(", ") },
  { name: "handler", label: "Handler", text: (route) => route.handler },
  { name: "enabled", label: "Enabled", text: (route) => route.enabled === false ? "disabled" : "enabled" },
  { name: "description", label: "Description", text: (route) => route.description ?? "" },
  { name: "tags", label: "Tags", text: (route) => (route.tags ?? []).join(", ") },
  { name: "when", label: "Conditions", text: (route) => whenText(route.when ?? {}) },
  { name: "split", label: "Split", text: (route) => route.split === undefined ? "" : splitText(route.split) }
]

/** The four fields every route has, shown always; the others where a version shown departs from the default. */
const ALWAYS: ReadonlyArray<Name> = ["method", "path", "middleware", "handler"]

/** The fields worth showing for these versions of a route (a missing one is `null`: before a create, after a delete). */
export const shownFields = (...routes: ReadonlyArray<RouteFields | null>): ReadonlyArray<RouteField> =>
  FIELDS.filter((f) => ALWAYS.includes(f.name) || routes.some((r) => r !== null && !atDefault(r, f.name)))

/** Whether two routes hold the same value of a field, compared as the API sends it (a list's order counts). */
export const same = (a: RouteFields, b: RouteFields, name: Name): boolean =>
  JSON.stringify(valueOf(a, name)) === JSON.stringify(valueOf(b, name))

/** The names of the fields `after` changes from `before`. */
export const changedNames = (before: RouteFields, after: RouteFields): Array<Name> =>
  FIELDS.filter((field) => !same(before, after, field.name)).map((field) => field.name)

/** The given fields with their values in `route`: the body of a patch (`split: null` removes a split). */
export const pick = (route: RouteFields, names: ReadonlyArray<Name>): Record<string, unknown> =>
  Object.fromEntries(names.map((name) => [name, valueOf(route, name)]))

/** The body of a create: the fields at their defaults left out, so a route that uses none reads as before. */
export const createBody = (route: RouteFields): Record<string, unknown> =>
  Object.fromEntries(
    FIELDS.filter((f) => ALWAYS.includes(f.name) || !atDefault(route, f.name)).map((f) => [f.name, route[f.name]])
  )
