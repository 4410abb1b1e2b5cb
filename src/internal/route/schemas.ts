/**
 * The Schemas of a route's fields, built on the same checks as the body validators (`validate.ts`), so that the
 * OpenAPI document, the typed client and programmatic callers accept and refuse exactly what the HTTP API does.
 * `Route` re-exports them.
 *
 * @internal
 */
import { Either, Schema } from "effect"
import * as Split from "../../Split.js"
import * as When from "../../When.js"
import * as Fields from "./fields.js"
import * as Grammar from "./grammar.js"
import * as Path from "./path.js"
import * as PathPattern from "./pathPattern.js"
import * as Validate from "./validate.js"

const pathMessage = (issues: ReadonlyArray<Path.PathIssue>) => issues.map((issue) => issue.message).join("; ")

export const HttpMethod = Schema.String.pipe(
  Schema.filter((s) => Grammar.checkMethod(s) ?? true, {
    identifier: "HttpMethod",
    description: "HTTP method, case-sensitive: 1–32 uppercase letters, words joined by single hyphens",
    jsonSchema: { pattern: Grammar.METHOD_PATTERN.source, minLength: 1, maxLength: Grammar.MAX_METHOD_LENGTH },
    examples: ["GET" as never, "M-SEARCH" as never]
  }),
  Schema.brand("HttpMethod")
)

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

const nameSchema = <B extends string>(brand: B, description: string) =>
  Schema.String.pipe(
    Schema.filter((s) => Grammar.checkName(s) ?? true, {
      identifier: brand,
      description,
      jsonSchema: { pattern: Grammar.NAME_PATTERN.source, minLength: 1, maxLength: Grammar.MAX_NAME_LENGTH }
    }),
    Schema.brand(brand)
  )

export const MiddlewareName = nameSchema("MiddlewareName", "Name of a middleware function")

export const HandlerName = nameSchema("HandlerName", "Name of the handler function")

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

export const ConfiguredMiddleware = Schema.Struct({ name: MiddlewareName, config: MiddlewareConfig }).annotations({
  identifier: "ConfiguredMiddleware"
})

export const MiddlewareEntry = Schema.Union(MiddlewareName, ConfiguredMiddleware)

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

export const Description = Schema.String.pipe(
  Schema.filter((s) => Fields.checkDescription(s) ?? true, {
    identifier: "Description",
    jsonSchema: { maxLength: Fields.MAX_DESCRIPTION_LENGTH }
  })
)

export const Tag = Schema.String.pipe(Schema.pattern(Fields.TAG_PATTERN), Schema.annotations({ identifier: "Tag" }))

export const Tags = Schema.Array(Tag).pipe(
  Schema.filter((tags) => {
    const issues = Fields.checkTags(tags)
    return issues.length === 0 || issues.map((issue) => `${issue.path}: ${issue.message}`).join("; ")
  }, { identifier: "Tags", jsonSchema: { maxItems: Fields.MAX_TAGS, uniqueItems: true } })
)

// A body's unknown fields are refused, as the HTTP API refuses them, and every problem is reported.
const STRICT = { onExcessProperty: "error", errors: "all" } as const

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
