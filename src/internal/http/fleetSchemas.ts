/**
 * The fleet's payloads and parameters (`GET` and `POST /v1/routing/followers`, docs/scaling-out.md), as `RoutingApi`
 * declares and re-exports them.
 *
 * @internal
 */
import { Schema } from "effect"

/**
 * The header a follower names itself with on the change stream, to be listed in the fleet.
 *
 * @since 0.4.0
 */
export const FollowerName = Schema.Struct({
  "follower-name": Schema.optional(Schema.String.annotations({
    description: "The follower's name (1 to 128 letters, digits and . _ : @ -, starting with a letter or digit): " +
      "the stream joins this process's fleet, and the answer carries Follower-Stream, the id its reports name."
  }))
})

// Where a table came from (RouteTable.Status's `source`).
const SOURCES = ["registry", "database", "snapshot", "bootstrap"] as const

/**
 * One follower as the fleet lists it.
 *
 * @since 0.4.0
 */
export const FollowerEntry = Schema.Struct({
  name: Schema.String,
  address: Schema.String.annotations({ description: "Its address as the process it follows saw it, or unknown." }),
  via: Schema.NullOr(Schema.String).annotations({
    description: "The relay it follows, null when it follows this one."
  }),
  connectedAt: Schema.String.annotations({ description: "When its stream opened, RFC 3339 UTC." }),
  appliedRevision: Schema.NullOr(Schema.Int).annotations({
    description: "The revision it last reported applying, null before its first report."
  }),
  reportedAt: Schema.NullOr(Schema.String).annotations({ description: "When it last reported, RFC 3339 UTC." }),
  connected: Schema.Boolean.annotations({ description: "false for one that left in the last 5 minutes." }),
  source: Schema.optional(
    Schema.NullOr(Schema.Literal(...SOURCES)).annotations({
      description: "(v5) Where its table came from, as its last report said; null before one that says."
    })
  )
}).annotations({ identifier: "FollowerEntry" })

/**
 * The answer of `GET /v1/routing/followers`.
 *
 * @since 0.4.0
 */
export const Fleet = Schema.Struct({
  revision: Schema.Int.annotations({ description: "This process's latest revision." }),
  items: Schema.Array(FollowerEntry),
  complete: Schema.optional(Schema.Boolean.annotations({
    description: "With revision: whether every connected follower had applied it when the answer was given."
  })),
  counts: Schema.optional(
    Schema.Struct({
      followers: Schema.Int.annotations({ description: "Every follower listed, connected or gone." }),
      connected: Schema.Int.annotations({ description: "Those connected." }),
      behind: Schema.Int.annotations({
        description: "Those connected below revision (this process's latest without it)."
      })
    }).annotations({
      description:
        "The whole fleet's counts: present when the query pages (limit, cursor, behind) or more pages follow."
    })
  ),
  nextCursor: Schema.optional(
    Schema.NullOr(Schema.String).annotations({
      description: "The cursor of the next page, null on the last: present with counts."
    })
  )
}).annotations({ identifier: "Fleet" })

/**
 * The query of `GET /v1/routing/followers`.
 *
 * @since 0.4.0
 */
export const FollowersParams = Schema.Struct({
  revision: Schema.optional(
    Schema.NumberFromString.pipe(Schema.int(), Schema.nonNegative()).annotations({
      jsonSchema: { type: "integer", minimum: 0, description: "Answer with complete: has every follower applied it?" }
    })
  ),
  wait: Schema.optional(
    Schema.NumberFromString.pipe(Schema.int(), Schema.between(0, 60)).annotations({
      jsonSchema: {
        type: "integer",
        minimum: 0,
        maximum: 60,
        description: "With revision: seconds to wait for every connected follower to apply it."
      }
    })
  ),
  limit: Schema.optional(
    Schema.NumberFromString.pipe(Schema.int(), Schema.between(1, 1000)).annotations({
      jsonSchema: {
        type: "integer",
        minimum: 1,
        maximum: 1000,
        description: "Followers in the page (default and most 1000)."
      }
    })
  ),
  cursor: Schema.optional(Schema.String.annotations({ description: "The nextCursor of the previous page." })),
  behind: Schema.optional(
    Schema.Literal("true", "false").annotations({
      description: "true: only the connected followers below revision (this process's latest without it)."
    })
  )
})

/**
 * A follower's report: the revision it applied on its open stream, and its own followers (a relay).
 *
 * @since 0.4.0
 */
export const FollowerReport = Schema.Struct({
  stream: Schema.String.annotations({ description: "The Follower-Stream of the follower's open change stream." }),
  appliedRevision: Schema.Int.pipe(Schema.nonNegative()),
  source: Schema.optional(
    Schema.Literal(...SOURCES).annotations({
      description: "(v5) Where the follower's table came from: registry, snapshot or bootstrap (docs/resilience.md)."
    })
  ),
  followers: Schema.optional(Schema.Array(FollowerEntry).pipe(Schema.maxItems(10_000)))
}).annotations({ identifier: "FollowerReport" })
