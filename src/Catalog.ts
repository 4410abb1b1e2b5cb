/**
 * The names of the handler and middleware functions a host process has registered with its router, and (0.5.0) the
 * config schema of each middleware that takes a config. Declared to the library (catalog checking), it makes creates
 * and updates through that process refuse a route that names a function the process does not have, naming the closest
 * registered name, or that gives a middleware a config its schema refuses.
 *
 * @since 0.2.0
 */
import { Context, Either, Layer, ParseResult, Schema } from "effect"
import { distance } from "fastest-levenshtein"
import * as Grammar from "./internal/route/grammar.js"
import type * as Route from "./Route.js"

/**
 * A middleware's config schema, whatever it decodes to. Its context is `never`: routers decode configs synchronously,
 * once per stored version of a route.
 *
 * @since 0.5.0
 */
export type ConfigSchema = Schema.Schema<any, any, never>

/**
 * @since 0.2.0
 */
export interface Names {
  readonly handlers: ReadonlyArray<string>
  readonly middleware: ReadonlyArray<string>
  /** (0.5.0) The config schema of each middleware that takes a config, by name; a middleware not here takes none. */
  readonly configs?: Readonly<Record<string, ConfigSchema>> | undefined
}

const ConfiguredTypeId: unique symbol = Symbol.for("route-registry/Catalog/Configured")

/**
 * A middleware registered with the schema of its config: what a router form's `configured` makes. The router decodes
 * each route's config with `config` once per stored version of the route and hands the decoded value to `middleware`
 * on every request (docs/router.md: middleware configuration).
 *
 * @since 0.5.0
 */
export interface Configured<F> {
  readonly [ConfiguredTypeId]: typeof ConfiguredTypeId
  readonly config: ConfigSchema
  readonly middleware: F
}

/**
 * A middleware `F` (a router form's function taking the decoded config) with its config schema. Each router form
 * offers a typed version (`RouterListener.configured`, `RouterHttpApp.configured`, `Express.configured`, …).
 *
 * @since 0.5.0
 */
export const configured = <A, I, F>(config: Schema.Schema<A, I, never>, middleware: F): Configured<F> => ({
  [ConfiguredTypeId]: ConfiguredTypeId,
  config,
  middleware
})

/**
 * `true` for a middleware registered with a config schema.
 *
 * @since 0.5.0
 */
export const isConfigured = (u: unknown): u is Configured<unknown> =>
  typeof u === "object" && u !== null && ConfiguredTypeId in u

/**
 * The names (and config schemas) of a host's functions, for catalog checking.
 *
 * @since 0.5.0
 */
export const namesOf = (functions: {
  readonly handlers: Readonly<Record<string, unknown>>
  readonly middleware?: Readonly<Record<string, unknown>> | undefined
}): Names => {
  const middleware = functions.middleware ?? {}
  const configs: Record<string, ConfigSchema> = {}
  for (const name of Object.keys(middleware)) {
    const fn = middleware[name]
    if (isConfigured(fn)) configs[name] = fn.config
  }
  return { handlers: Object.keys(functions.handlers), middleware: Object.keys(middleware), configs }
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

// A route that names a configured middleware without a config gives it this one.
const NO_CONFIG = {}

/**
 * What a config is to the middleware `name`: its decoded value, or the problems at their paths below `at`
 * (`middleware[1].config`), for a config its schema refuses or a config for a middleware that takes none.
 *
 * @since 0.5.0
 */
export const decodeConfig = (
  schema: ConfigSchema | undefined,
  name: string,
  config: unknown,
  at: string
): Either.Either<unknown, ReadonlyArray<Route.FieldIssue>> => {
  if (schema === undefined) {
    return config === undefined ? Either.right(undefined) : Either.left([{
      path: at,
      message: `${JSON.stringify(name)} takes no config: its function is registered without a config schema; ` +
        `write it as the name alone`
    }])
  }
  return Either.mapLeft(
    Schema.decodeUnknownEither(schema, { errors: "all", onExcessProperty: "error" })(config ?? NO_CONFIG),
    (error) =>
      ParseResult.ArrayFormatter.formatErrorSync(error).map((issue) => ({
        path: issue.path.reduce<string>(
          (path, key) => typeof key === "number" ? `${path}[${key}]` : Grammar.memberPath(path, String(key)),
          at
        ),
        message: issue.message
      }))
  )
}

/**
 * Every name of `route` (a create input or a patch) missing from the catalog, one problem each, and every problem of
 * its middleware configs (0.5.0), at their full paths, in field order.
 *
 * @since 0.2.0
 */
export const check = (
  names: Names,
  route: {
    readonly middleware?: ReadonlyArray<string | { readonly name: string; readonly config?: unknown }> | undefined
    readonly handler?: string | undefined
    /** (0.5.0) Every target of a split is checked as a handler. */
    readonly split?: { readonly targets: ReadonlyArray<{ readonly handler: string }> } | null | undefined
  }
): ReadonlyArray<Route.FieldIssue> => {
  const issues: Array<Route.FieldIssue> = []
  route.middleware?.forEach((entry, i) => {
    const name = typeof entry === "string" ? entry : entry.name
    const config = typeof entry === "string" ? undefined : entry.config
    if (!names.middleware.includes(name)) {
      const at = config === undefined ? `middleware[${i}]` : `middleware[${i}].name`
      issues.push({ path: at, message: unknownName("middleware", name, names.middleware) })
      return
    }
    const schema = names.configs !== undefined && Object.hasOwn(names.configs, name) ? names.configs[name] : undefined
    const decoded = decodeConfig(schema, name, config, `middleware[${i}].config`)
    if (Either.isLeft(decoded)) issues.push(...decoded.left)
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
