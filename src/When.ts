/**
 * A route's conditions (docs/router.md: conditions): the host, headers and query a request must carry for the route
 * to serve it, beside its method and path. Their schema, their canonical form and the precedence among routes of one
 * method and shape, which the stores, the routers and `GET /v1/routing/match` share.
 *
 * @since 0.5.0
 */
import { Schema } from "effect"
import * as Internal from "./internal/route/when.js"

/**
 * One header or query condition: its name and, optionally, the exact value required (without it, presence).
 *
 * @since 0.5.0
 */
export type Condition = Internal.Condition

/**
 * The most header conditions, and the most query conditions, of one route.
 *
 * @since 0.5.0
 */
export const MAX_CONDITIONS: number = Internal.MAX_HEADERS

/**
 * The canonical JSON of conditions (keys host, headers, query; header names lowercase; lists sorted by name then
 * value; no whitespace), `""` for none.
 *
 * @since 0.5.0
 */
export const canonicalJson = (when: When | undefined): string =>
  when === undefined ? "" : Internal.keyOf(Internal.canonical({ ...when }))

/**
 * Negative when conditions `a` take precedence over `b` among routes of one method and shape (docs/router.md:
 * conditions); routes without conditions come last.
 *
 * @since 0.5.0
 */
export const compare: (a: When | undefined, b: When | undefined) => number = Internal.compare

const Condition = Schema.Struct({
  name: Schema.String,
  value: Schema.optionalWith(Schema.String, { exact: true })
})

/**
 * Conditions: `host` (`api.example.com`, or `*.example.com` for one or more labels before the suffix), up to 8
 * `headers` and up to 8 `query` conditions.
 *
 * @since 0.5.0
 */
export const When = Schema.Struct({
  host: Schema.optionalWith(Schema.String, { exact: true }),
  headers: Schema.optionalWith(Schema.Array(Condition), { exact: true }),
  query: Schema.optionalWith(Schema.Array(Condition), { exact: true })
}).pipe(
  Schema.filter((when) => {
    const issues = Internal.check(when)
    return issues.length === 0 || issues.map((issue) => `${issue.path}: ${issue.message}`).join("; ")
  }),
  (schema) =>
    schema.annotations({
      identifier: "When",
      description: "The host, headers and query a request must carry for the route to serve it (docs/router.md)"
    })
)

/**
 * @since 0.5.0
 */
export type When = Internal.When
