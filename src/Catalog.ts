/**
 * The names of the handler and middleware functions a host process has registered with its router. Declared to the
 * library (catalog checking), it makes creates and updates through that process refuse a route that names a function
 * the process does not have, naming the closest registered name.
 *
 * @since 0.2.0
 */
import { Context, Layer } from "effect"
import { distance } from "fastest-levenshtein"
import type * as Route from "./Route.js"

/**
 * @since 0.2.0
 */
export interface Names {
  readonly handlers: ReadonlyArray<string>
  readonly middleware: ReadonlyArray<string>
}

/**
 * The catalog checked on create and update; `undefined` (the default) checks nothing.
 *
 * @since 0.2.0
 */
export class Catalog extends Context.Reference<Catalog>()("route-registry/Catalog", {
  defaultValue: (): Names | undefined => undefined
}) {}

/**
 * Turns catalog checking on with these names.
 *
 * @since 0.2.0
 */
export const layer = (names: Names): Layer.Layer<never> => Layer.succeed(Catalog, names)

// A suggestion is offered only when it is plausibly a typo: two edits (a swapped pair of letters), or up to a third
// of the name's characters for a longer name.
const closest = (name: string, registered: ReadonlyArray<string>): string | undefined => {
  let best: string | undefined
  let bestDistance = Math.max(2, Math.floor(name.length / 3)) + 1
  for (const candidate of registered) {
    const d = distance(name, candidate)
    if (d < bestDistance) {
      best = candidate
      bestDistance = d
    }
  }
  return best
}

// How many registered names a problem lists when it suggests none: enough for a demo or a small host, bounded for a
// large catalog.
const LISTED_NAMES = 10

const registeredNames = (kind: "handler" | "middleware", registered: ReadonlyArray<string>): string => {
  if (registered.length === 0) return `this process registers no ${kind}`
  const listed = [...registered].sort().slice(0, LISTED_NAMES).map((name) => JSON.stringify(name)).join(", ")
  const more = registered.length > LISTED_NAMES ? ` and ${registered.length - LISTED_NAMES} more` : ""
  return `this process registers ${listed}${more}`
}

const unknownName = (kind: "handler" | "middleware", name: string, registered: ReadonlyArray<string>): string => {
  const suggestion = closest(name, registered)
  const fix = suggestion !== undefined
    ? `did you mean ${JSON.stringify(suggestion)}?`
    : `use a registered name (${registeredNames(kind, registered)}), or register it with this process's router first`
  return `${JSON.stringify(name)} is not a registered ${kind}: ${fix}`
}

/**
 * Every name of `route` (a create input or a patch) missing from the catalog, one problem each, in field order.
 *
 * @since 0.2.0
 */
export const check = (
  names: Names,
  route: {
    readonly middleware?: ReadonlyArray<string> | undefined
    readonly handler?: string | undefined
    /** (0.5.0) Every target of a split is checked as a handler. */
    readonly split?: { readonly targets: ReadonlyArray<{ readonly handler: string }> } | null | undefined
  }
): ReadonlyArray<Route.FieldIssue> => {
  const issues: Array<Route.FieldIssue> = []
  route.middleware?.forEach((name, i) => {
    if (!names.middleware.includes(name)) {
      issues.push({ path: `middleware[${i}]`, message: unknownName("middleware", name, names.middleware) })
    }
  })
  if (route.handler !== undefined && !names.handlers.includes(route.handler)) {
    issues.push({ path: "handler", message: unknownName("handler", route.handler, names.handlers) })
  }
  route.split?.targets.forEach(({ handler }, i) => {
    if (!names.handlers.includes(handler)) {
      issues.push({ path: `split.targets[${i}].handler`, message: unknownName("handler", handler, names.handlers) })
    }
  })
  return issues
}
