/**
 * The route model: identifiers, field rules, the path-pattern grammar and the create input.
 *
 * Every rule of a route has one home: the grammar (`checkMethod`, `checkName`, `parsePath`) and the
 * body validators (`validateCreate`, `validatePatch`) are plain functions, so the HTTP hot path pays no Schema
 * overhead; the Schemas below are built on the same checks, so the OpenAPI document, the typed client and
 * programmatic callers accept and refuse exactly what the HTTP API does.
 *
 * @since 0.1.0
 */
import { Effect, Either, Schema } from "effect"
import * as Uuid from "uuid"
import * as Fields from "./internal/route/fields.js"
import * as Grammar from "./internal/route/grammar.js"
import * as Path from "./internal/route/path.js"
import * as PathPattern from "./internal/route/pathPattern.js"
import * as Validate from "./internal/route/validate.js"
import * as Split from "./Split.js"
import * as When from "./When.js"

// ---------------------------------------------------------------------------------------------------------------
// Issues
// ---------------------------------------------------------------------------------------------------------------

/**
 * One problem found in an input: where (`path` is `"method"`, `"middleware[1]"`, … and `""` for the whole body)
 * and a sentence that says what to do.
 *
 * @since 0.1.0
 */
export type FieldIssue = Validate.FieldIssue

/**
 * A create input that breaks the rules; `errors` lists every problem found, in field order.
 *
 * @since 0.1.0
 */
export class InvalidRoute extends Schema.TaggedError<InvalidRoute>()("InvalidRoute", {
  errors: Schema.Array(Schema.Struct({ path: Schema.String, message: Schema.String }))
}) {
  override get message(): string {
    return this.errors.map((issue) => issue.path === "" ? issue.message : `${issue.path}: ${issue.message}`).join("; ")
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Route id
// ---------------------------------------------------------------------------------------------------------------

// What `uuid`'s validate, its version 7 and lowercase say together, read character by character: it runs on every
// route a store answers with, and the regular expression and `toLowerCase` cost a create about 1% (bench/core.ts).
// It names no `RouteId`: when the schema's filter called `isRouteId`, whose type names the schema's, the schema's type
// depended on itself, and a program that met it from outside typed a route's `id` as `unknown`.
const isUuidV7 = (s: string): boolean => {
  if (s.length !== 36) return false
  for (let i = 0; i < 36; i++) {
    const c = s.charCodeAt(i)
    if (i === 8 || i === 13 || i === 18 || i === 23 ? c !== 45 : !((c >= 48 && c <= 57) || (c >= 97 && c <= 102))) {
      return false
    }
  }
  const variant = s.charCodeAt(19)
  return s.charCodeAt(14) === 55 && (variant === 56 || variant === 57 || variant === 97 || variant === 98)
}

/**
 * `true` for a UUID version 7 in lowercase canonical form, the only form the service assigns.
 *
 * @since 0.1.0
 */
export const isRouteId = (u: unknown): u is RouteId => typeof u === "string" && isUuidV7(u)

/**
 * @since 0.1.0
 */
export const RouteId = Schema.String.pipe(
  Schema.filter((s) => isUuidV7(s) || "a route id is a lowercase UUID version 7", {
    identifier: "RouteId",
    jsonSchema: { format: "uuid" },
    examples: ["01936f1e-5f1a-7cc3-9a2b-3f4e5d6c7b8a" as never]
  }),
  Schema.brand("RouteId")
)

/**
 * @since 0.1.0
 */
export type RouteId = typeof RouteId.Type

// The last id's time and counter (RFC 9562 §6.2, method 1): `uuid` keeps ids of one millisecond in order only when it
// reads the clock itself, and here the time comes from Effect's Clock.
const idState = { millis: Number.NaN, seq: 0 }

/**
 * A new UUID version 7 stamped with `millis` (taken from Effect's `Clock` by the stores). Ids made in the same
 * millisecond sort in the order they were made, so listing by id is listing in creation order.
 *
 * @since 0.1.0
 */
export const makeRouteId = (millis: number): RouteId => {
  if (millis === idState.millis) {
    idState.seq++
  } else {
    idState.millis = millis
    // A random start leaves 2^30 ids of room in one millisecond.
    idState.seq = Math.floor(Math.random() * 2 ** 30)
  }
  return Uuid.v7({ msecs: millis, seq: idState.seq }) as RouteId
}

// ---------------------------------------------------------------------------------------------------------------
// Grammar
// ---------------------------------------------------------------------------------------------------------------

/**
 * Largest number of middleware names a route may list.
 *
 * @since 0.1.0
 */
export const MAX_MIDDLEWARE: number = Grammar.MAX_MIDDLEWARE
/**
 * @since 0.1.0
 */
export const MAX_NAME_LENGTH: number = Grammar.MAX_NAME_LENGTH
/**
 * @since 0.1.0
 */
export const MAX_METHOD_LENGTH: number = Grammar.MAX_METHOD_LENGTH
/**
 * @since 0.1.0
 */
export const MAX_PATH_LENGTH: number = Grammar.MAX_PATH_LENGTH
/**
 * @since 0.1.0
 */
export const MAX_PARAM_NAME_LENGTH: number = Grammar.MAX_PARAM_NAME_LENGTH
/**
 * Most segments a path pattern may have.
 *
 * @since 0.1.0
 */
export const MAX_SEGMENTS: number = Grammar.MAX_SEGMENTS

/**
 * Why `method` is refused, or `undefined` when it is a valid HTTP method token.
 *
 * @since 0.1.0
 */
export const checkMethod: (s: string) => string | undefined = Grammar.checkMethod

/**
 * Why a middleware or handler name is refused, or `undefined` when it is valid.
 *
 * @since 0.1.0
 */
export const checkName: (s: string) => string | undefined = Grammar.checkName

/**
 * Why a middleware list is refused for its length, or `undefined`.
 *
 * @since 0.1.0
 */
export const checkMiddlewareList: (names: ReadonlyArray<unknown>) => string | undefined = Grammar.checkMiddlewareList

/**
 * One segment of a parsed path pattern.
 *
 * @since 0.1.0
 */
export type PathSegment = Path.PathSegment

/**
 * A segment of static text and parameters, such as `:file.:ext` or `v:major`.
 *
 * @since 0.4.0
 */
export type MixedSegment = Path.MixedSegment

/**
 * A part of a mixed segment: static text or a parameter.
 *
 * @since 0.4.0
 */
export type MixedPart = Path.MixedPart

/**
 * A path pattern that passed every rule.
 *
 * @since 0.1.0
 */
export type ParsedPath = Path.ParsedPath

/**
 * A problem in a path pattern: `index` is the 0-based offset in the path where it was found.
 *
 * @since 0.1.0
 */
export type PathIssue = Path.PathIssue

/**
 * Parses a path pattern, returning the parsed pattern or every problem found, each with its position.
 *
 * @since 0.1.0
 */
export const parsePath: (path: string) => Either.Either<ParsedPath, ReadonlyArray<PathIssue>> = Path.parsePath

/**
 * The shape of a valid path: every parameter and wildcard name removed (`/users/:id` → `/users/:`, `/:file.:ext`
 * → `/:.:`, `/files/*rest` → `/files/*`). Two routes with the same method and shape conflict.
 *
 * @since 0.1.0
 */
export const shapeOf: (path: RoutePath) => string = Path.shapeOf

// ---------------------------------------------------------------------------------------------------------------
// Schemas
// ---------------------------------------------------------------------------------------------------------------

const pathMessage = (issues: ReadonlyArray<Path.PathIssue>) => issues.map((issue) => issue.message).join("; ")

/**
 * An HTTP method token: 1–32 uppercase letters with single hyphens between words (`GET`, `M-SEARCH`).
 *
 * @since 0.1.0
 */
export const HttpMethod = Schema.String.pipe(
  Schema.filter((s) => Grammar.checkMethod(s) ?? true, {
    identifier: "HttpMethod",
    description: "HTTP method, case-sensitive: 1–32 uppercase letters, words joined by single hyphens",
    jsonSchema: { pattern: Grammar.METHOD_PATTERN.source, minLength: 1, maxLength: Grammar.MAX_METHOD_LENGTH },
    examples: ["GET" as never, "M-SEARCH" as never]
  }),
  Schema.brand("HttpMethod")
)
/**
 * @since 0.1.0
 */
export type HttpMethod = Grammar.HttpMethod

/**
 * A path pattern accepted by `parsePath`.
 *
 * @since 0.1.0
 */
export const RoutePath = Schema.String.pipe(
  Schema.filter((s) => Either.match(Path.parsePath(s), { onLeft: pathMessage, onRight: () => true }), {
    identifier: "RoutePath",
    description: "Path pattern: \"/\" or 1–64 \"/segment\"; a segment is static, a parameter \":name\", static " +
      "text and parameters (\":file.:ext\"), or, as the last one, a wildcard \"*name\" for the rest of the path. " +
      "A name ends at the first character outside [A-Za-z0-9_]. Beyond the pattern, a parameter name (the " +
      "wildcard's included) may be used only once in a path.",
    jsonSchema: { pattern: PathPattern.PATH_PATTERN, minLength: 1, maxLength: Grammar.MAX_PATH_LENGTH },
    examples: ["/users/:id" as never]
  }),
  Schema.brand("RoutePath")
)
/**
 * @since 0.1.0
 */
export type RoutePath = Grammar.RoutePath

const nameSchema = <B extends string>(brand: B, description: string) =>
  Schema.String.pipe(
    Schema.filter((s) => Grammar.checkName(s) ?? true, {
      identifier: brand,
      description,
      jsonSchema: { pattern: Grammar.NAME_PATTERN.source, minLength: 1, maxLength: Grammar.MAX_NAME_LENGTH }
    }),
    Schema.brand(brand)
  )

/**
 * @since 0.1.0
 */
export const MiddlewareName = nameSchema("MiddlewareName", "Name of a middleware function")
/**
 * @since 0.1.0
 */
export type MiddlewareName = Grammar.MiddlewareName

/**
 * @since 0.1.0
 */
export const HandlerName = nameSchema("HandlerName", "Name of the handler function")
/**
 * @since 0.1.0
 */
export type HandlerName = Grammar.HandlerName

/**
 * A middleware's config on a route: a JSON object of at most 4 KiB as JSON and 8 levels deep (the object itself is
 * level 1). The host's schema for the middleware (`Catalog`) decides what it means.
 *
 * @since 0.5.0
 */
export const MiddlewareConfig = Schema.Record({ key: Schema.String, value: Schema.Unknown }).pipe(
  Schema.filter((config) => {
    const issues = Fields.checkConfig(config, "config")
    return issues.length === 0 || issues.map((issue) => `${issue.path}: ${issue.message}`).join("; ")
  }, {
    identifier: "MiddlewareConfig",
    description: `A JSON object, at most ${Fields.MAX_CONFIG_BYTES} bytes as JSON and ${Fields.MAX_CONFIG_DEPTH} ` +
      "levels deep; its keys are kept in one canonical order (shorter first, then byte order)"
  })
)

/**
 * A middleware named with its config (`{ "name": "x" }` without one is kept as `"x"`).
 *
 * @since 0.5.0
 */
export const ConfiguredMiddleware = Schema.Struct({ name: MiddlewareName, config: MiddlewareConfig }).annotations({
  identifier: "ConfiguredMiddleware"
})

/**
 * One entry of a route's middleware list: a name, or `{ name, config }`.
 *
 * @since 0.5.0
 */
export const MiddlewareEntry = Schema.Union(MiddlewareName, ConfiguredMiddleware)
/**
 * @since 0.5.0
 */
export type MiddlewareEntry = Fields.Entry

/**
 * The name of a middleware entry.
 *
 * @since 0.5.0
 */
export const middlewareName: (entry: MiddlewareEntry) => MiddlewareName = Fields.nameOf

/**
 * The config of a middleware entry; `undefined` for a bare name.
 *
 * @since 0.5.0
 */
export const middlewareConfig: (entry: MiddlewareEntry) => { readonly [key: string]: unknown } | undefined =
  Fields.configOf

/**
 * The ordered middleware of a route: at most 32 entries, no name twice.
 *
 * @since 0.1.0
 */
export const Middleware = Schema.Array(MiddlewareEntry).pipe(
  Schema.filter((entries) => {
    const tooMany = Grammar.checkMiddlewareList(entries)
    if (tooMany !== undefined) return tooMany
    const names = entries.map(Fields.nameOf)
    const seen = new Set<string>()
    for (let i = 0; i < names.length; i++) {
      if (seen.has(names[i]!)) return Grammar.duplicateMessage(names, i)
      seen.add(names[i]!)
    }
    return true
  }, { identifier: "Middleware", jsonSchema: { maxItems: Grammar.MAX_MIDDLEWARE } })
)

/**
 * Most characters of a route's description.
 *
 * @since 0.5.0
 */
export const MAX_DESCRIPTION_LENGTH: number = Fields.MAX_DESCRIPTION_LENGTH

/**
 * Most tags on a route.
 *
 * @since 0.5.0
 */
export const MAX_TAGS: number = Fields.MAX_TAGS

/**
 * What a route is for, in words: 0–1,024 characters, no control characters.
 *
 * @since 0.5.0
 */
export const Description = Schema.String.pipe(
  Schema.filter((s) => Fields.checkDescription(s) ?? true, {
    identifier: "Description",
    jsonSchema: { maxLength: Fields.MAX_DESCRIPTION_LENGTH }
  })
)

/**
 * One tag: 1–64 of lowercase letters, digits and `. _ : / -`, starting with a letter or digit.
 *
 * @since 0.5.0
 */
export const Tag = Schema.String.pipe(Schema.pattern(Fields.TAG_PATTERN), Schema.annotations({ identifier: "Tag" }))

/**
 * A route's tags: at most 16, none twice, kept in the order given.
 *
 * @since 0.5.0
 */
export const Tags = Schema.Array(Tag).pipe(
  Schema.filter((tags) => {
    const issues = Fields.checkTags(tags)
    return issues.length === 0 || issues.map((issue) => `${issue.path}: ${issue.message}`).join("; ")
  }, { identifier: "Tags", jsonSchema: { maxItems: Fields.MAX_TAGS, uniqueItems: true } })
)

/**
 * A stored route: the six fields of the contract, and (0.5.0) `enabled`, `split`, `description`, `tags` and `when`,
 * present only when not at their defaults (`enabled: false`; a split; a description not empty; tags; conditions).
 * `createdAt` encodes as `Date.prototype.toISOString` prints it.
 *
 * @since 0.1.0
 */
export class Route extends Schema.Class<Route>("Route")({
  id: RouteId,
  method: HttpMethod,
  path: RoutePath,
  middleware: Middleware,
  handler: HandlerName,
  createdAt: Schema.Date.annotations({
    jsonSchema: {
      type: "string",
      format: "date-time",
      pattern: "^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}\\.\\d{3}Z$",
      description: "RFC 3339 UTC with exactly three fraction digits, as Date.prototype.toISOString prints it"
    }
  }),
  enabled: Schema.optionalWith(Schema.Boolean, { exact: true }),
  split: Schema.optionalWith(Split.Split, { exact: true }),
  description: Schema.optionalWith(Description, { exact: true }),
  tags: Schema.optionalWith(Tags, { exact: true }),
  when: Schema.optionalWith(When.When, { exact: true })
}) {}

/**
 * A route as a store holds it: the six fields and its revision. The revision grows with every change of the route
 * (never on a change that leaves it equal) and is what the HTTP API's `ETag` carries; it is not part of the route's
 * JSON. A `StoredRoute` is a `Route`, so code that reads routes needs no change.
 *
 * @since 0.2.0
 */
export class StoredRoute extends Route.extend<StoredRoute>("StoredRoute")({
  revision: Schema.Int
}) {}

/**
 * The JSON of a route, byte for byte what `JSON.stringify(route)` gives, built field by field: it spares
 * `JSON.stringify` its slow path through `Date.prototype.toJSON`, the largest cost of answering a GET.
 *
 * @since 0.1.0
 */
export const toJson = (route: Route): string =>
  `{"id":${JSON.stringify(route.id)},"method":${JSON.stringify(route.method)},"path":${
    JSON.stringify(route.path)
  },"middleware":${JSON.stringify(route.middleware)},"handler":${
    JSON.stringify(route.handler)
  },"createdAt":"${route.createdAt.toISOString()}"${route.enabled === false ? `,"enabled":false` : ""}${
    route.split === undefined ? "" : `,"split":${JSON.stringify(route.split)}`
  }${route.description === undefined ? "" : `,"description":${JSON.stringify(route.description)}`}${
    route.tags === undefined ? "" : `,"tags":${JSON.stringify(route.tags)}`
  }${route.when === undefined ? "" : `,"when":${When.canonicalJson(route.when)}`}}`

// A body's unknown fields are refused, as the HTTP API refuses them, and every problem is reported.
const STRICT = { onExcessProperty: "error", errors: "all" } as const

/**
 * The create input. `middleware` may be omitted and then means `[]`.
 *
 * @since 0.1.0
 */
export const CreateRoute = Schema.Struct({
  method: HttpMethod,
  path: RoutePath,
  middleware: Schema.optionalWith(Middleware, { exact: true, default: () => [] }),
  handler: HandlerName,
  enabled: Schema.optionalWith(Schema.Boolean, { exact: true }),
  split: Schema.optionalWith(Split.Split, { exact: true }),
  description: Schema.optionalWith(Description, { exact: true }),
  tags: Schema.optionalWith(Tags, { exact: true }),
  when: Schema.optionalWith(When.When, { exact: true })
}).annotations({ identifier: "CreateRoute", parseOptions: STRICT })

/**
 * @since 0.1.0
 */
export type CreateRoute = Validate.CreateRoute

/**
 * The fields an update replaces; at least one is given, each with the rules of a create.
 *
 * @since 0.2.0
 */
export type RoutePatch = Validate.RoutePatch

/**
 * The body of an update: at least one of the four fields, each with the rules of a create; unknown fields refused.
 *
 * @since 0.2.0
 */
export const PatchRoute = Schema.Struct({
  method: Schema.optionalWith(HttpMethod, { exact: true }),
  path: Schema.optionalWith(RoutePath, { exact: true }),
  middleware: Schema.optionalWith(Middleware, { exact: true }),
  handler: Schema.optionalWith(HandlerName, { exact: true }),
  enabled: Schema.optionalWith(Schema.Boolean, { exact: true }),
  split: Schema.optionalWith(Schema.NullOr(Split.Split), { exact: true }),
  description: Schema.optionalWith(Description, { exact: true }),
  tags: Schema.optionalWith(Tags, { exact: true }),
  when: Schema.optionalWith(Schema.NullOr(When.When), { exact: true })
}).pipe(
  Schema.filter((patch) => Object.keys(patch).length > 0 || Validate.NOTHING_TO_CHANGE, {
    jsonSchema: { minProperties: 1 }
  }),
  (schema) => schema.annotations({ identifier: "PatchRoute", parseOptions: STRICT })
)

// ---------------------------------------------------------------------------------------------------------------
// Body validation
// ---------------------------------------------------------------------------------------------------------------

/**
 * The most problems reported for one body; past it the validators stop looking. When a list has this many
 * entries, there may be more.
 *
 * @since 0.2.0
 */
export const MAX_ISSUES: number = Validate.MAX_ISSUES

/**
 * Validates a parsed JSON body as a create input, collecting every problem at once (up to `MAX_ISSUES`).
 *
 * @since 0.1.0
 */
export const validateCreate: (body: unknown) => Either.Either<CreateRoute, ReadonlyArray<FieldIssue>> =
  Validate.validateCreate

/**
 * Validates a parsed JSON body as a patch: at least one field, each with the rules of a create, `null` refused for
 * every field, unknown fields refused by name (up to `MAX_ISSUES` problems).
 *
 * @since 0.2.0
 */
export const validatePatch: (body: unknown) => Either.Either<RoutePatch, ReadonlyArray<FieldIssue>> =
  Validate.validatePatch

const decodeWith =
  <A>(validate: (body: unknown) => Either.Either<A, ReadonlyArray<FieldIssue>>) =>
  (body: unknown): Effect.Effect<A, InvalidRoute> =>
    Either.match(validate(body), {
      onLeft: (errors) => Effect.fail(new InvalidRoute({ errors })),
      onRight: Effect.succeed
    })

/**
 * Validates an unknown value as a create input, failing with `InvalidRoute` that lists every problem.
 *
 * @since 0.1.0
 */
export const decodeCreate: (body: unknown) => Effect.Effect<CreateRoute, InvalidRoute> = decodeWith(validateCreate)

/**
 * Validates an unknown value as a patch, failing with `InvalidRoute` that lists every problem.
 *
 * @since 0.2.0
 */
export const decodePatch: (body: unknown) => Effect.Effect<RoutePatch, InvalidRoute> = decodeWith(validatePatch)
