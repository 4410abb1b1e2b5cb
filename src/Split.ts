/**
 * A route's split (canary and A/B, docs/router.md: disabled routes and splits): a share of a route's traffic, by a key read from each request, goes
 * to other handlers, each key always to the same one in every process. Its schema, and the bucket and handler a key
 * gets, which the routers and `GET /v1/routing/match` compute the same way.
 *
 * @since 0.5.0
 */
import { Schema } from "effect"
import * as Grammar from "./internal/route/grammar.js"
import * as Murmur3 from "./internal/route/murmur3.js"
import * as Internal from "./internal/route/split.js"

/**
 * One target of a split: a handler other than the route's, and its share in basis points (0–10,000).
 *
 * @since 0.5.0
 */
export type SplitTarget = Internal.SplitTarget

/**
 * The choice a split made for one request: the handler that serves it, and the key and its bucket (`null` when the
 * request had no key).
 *
 * @since 0.5.0
 */
export type Choice = Internal.Choice

/**
 * The number of buckets (basis points): a key's bucket is its hash modulo this.
 *
 * @since 0.5.0
 */
export const BUCKETS: number = Internal.BUCKETS

/**
 * MurmurHash3 x86 32-bit of `text`'s UTF-8 bytes with `seed` (0 by default), unsigned.
 *
 * @since 0.5.0
 */
export const murmur3: (text: string, seed?: number) => number = Murmur3.hash

/**
 * The bucket (0–9,999) of `key` in `group`: MurmurHash3 x86 32-bit, seed 0, over `<group>:<key>`, modulo 10,000.
 *
 * @since 0.5.0
 */
export const bucketOf: (group: string, key: string) => number = Internal.bucketOf

/**
 * The handler of a request to `route`: its override header's value, when it names one of the route's handlers, else
 * the key's bucket; a request with no key goes to the route's handler.
 *
 * @since 0.5.0
 */
export const choose = (
  route: { readonly id: string; readonly handler: string; readonly split: Split },
  key: string | undefined,
  override?: string | undefined
): Choice => Internal.choose(route.split, route.id, route.handler, key, override)

const Target = Schema.Struct({
  handler: Schema.String.pipe(
    Schema.filter((s) => Grammar.checkName(s) ?? true, {
      jsonSchema: { pattern: Grammar.NAME_PATTERN.source, minLength: 1, maxLength: Grammar.MAX_NAME_LENGTH }
    }),
    Schema.brand("HandlerName")
  ),
  weight: Schema.Int.pipe(Schema.between(0, Internal.BUCKETS))
})

/**
 * A split: `by` (`header:<name>`, `cookie:<name>` or `query:<name>`), `group` (the route's id when left out), 1–8
 * `targets` whose weights add up to at most 10,000, and `override` (a header naming the handler to use).
 *
 * @since 0.5.0
 */
export const Split = Schema.Struct({
  by: Schema.String,
  group: Schema.optionalWith(Schema.String, { exact: true }),
  targets: Schema.Array(Target),
  override: Schema.optionalWith(Schema.String, { exact: true })
}).pipe(
  Schema.filter((split) => {
    const issues = Internal.check(split, undefined)
    return issues.length === 0 || issues.map((issue) => `${issue.path}: ${issue.message}`).join("; ")
  }),
  (schema) =>
    schema.annotations({
      identifier: "Split",
      description:
        "A share of the route's traffic sent to other handlers by a key (docs/router.md: disabled routes and splits)"
    })
)

/**
 * @since 0.5.0
 */
export type Split = Internal.Split
