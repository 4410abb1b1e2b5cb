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
import * as Fields from "./internal/route/fields.js"
import * as Grammar from "./internal/route/grammar.js"
import * as Id from "./internal/route/id.js"
import * as Path from "./internal/route/path.js"
import * as Schemas from "./internal/route/schemas.js"
import * as Validate from "./internal/route/validate.js"
import * as Conditions from "./internal/route/when.js"
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

/**
 * `true` for a UUID version 7 in lowercase canonical form, the only form the service assigns.
 *
 * @since 0.1.0
 */
export const isRouteId: (u: unknown) => u is RouteId = Id.isRouteId

/**
 * @since 0.1.0
 */
export const RouteId = Id.RouteId

/**
 * @since 0.1.0
 */
export type RouteId = typeof RouteId.Type

/**
 * A new UUID version 7 stamped with `millis` (taken from Effect's `Clock` by the stores). Ids made in the same
 * millisecond sort in the order they were made, so listing by id is listing in creation order.
 *
 * @since 0.1.0
 */
export const makeRouteId: (millis: number) => RouteId = Id.makeRouteId

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

/**
 * An HTTP method token: 1–32 uppercase letters with single hyphens between words (`GET`, `M-SEARCH`).
 *
 * @since 0.1.0
 */
export const HttpMethod = Schemas.HttpMethod
/**
 * @since 0.1.0
 */
export type HttpMethod = Grammar.HttpMethod

/**
 * A path pattern accepted by `parsePath`.
 *
 * @since 0.1.0
 */
export const RoutePath = Schemas.RoutePath
/**
 * @since 0.1.0
 */
export type RoutePath = Grammar.RoutePath

/**
 * @since 0.1.0
 */
export const MiddlewareName = Schemas.MiddlewareName
/**
 * @since 0.1.0
 */
export type MiddlewareName = Grammar.MiddlewareName

/**
 * @since 0.1.0
 */
export const HandlerName = Schemas.HandlerName
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
export const MiddlewareConfig = Schemas.MiddlewareConfig

/**
 * A middleware named with its config (`{ "name": "x" }` without one is kept as `"x"`).
 *
 * @since 0.5.0
 */
export const ConfiguredMiddleware = Schemas.ConfiguredMiddleware

/**
 * One entry of a route's middleware list: a name, or `{ name, config }`.
 *
 * @since 0.5.0
 */
export const MiddlewareEntry = Schemas.MiddlewareEntry
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
export const Middleware = Schemas.Middleware

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
export const Description = Schemas.Description

/**
 * One tag: 1–64 of lowercase letters, digits and `. _ : / -`, starting with a letter or digit.
 *
 * @since 0.5.0
 */
export const Tag = Schemas.Tag

/**
 * A route's tags: at most 16, none twice, kept in the order given.
 *
 * @since 0.5.0
 */
export const Tags = Schemas.Tags

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
  }${route.when === undefined ? "" : `,"when":${Conditions.keyOf(route.when)}`}}`

/**
 * The create input. `middleware` may be omitted and then means `[]`.
 *
 * @since 0.1.0
 */
export const CreateRoute = Schemas.CreateRoute

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
export const PatchRoute = Schemas.PatchRoute

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
