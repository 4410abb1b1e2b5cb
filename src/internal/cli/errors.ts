/**
 * The failures of the `route-registry` command, each with a message a person can act on.
 *
 * @internal
 */
import { Schema } from "effect"

/** What a failure says: its `message`, or its text. */
export const messageOf = (error: unknown): string =>
  typeof error === "object" && error !== null && "message" in error ? String(error.message) : String(error)

const Problem = Schema.Struct({ line: Schema.Number, column: Schema.Number, message: Schema.String })

/** One entry of a problem's `errors`: where in the request, and what is wrong there. */
const Issue = Schema.Struct({ path: Schema.String, message: Schema.String })

/**
 * A call to the registry failed; `code` is the problem code when the registry answered with one, `headline` its
 * status, code and detail, and `errors` its entries (a batch's name the operations by place).
 */
export class RequestFailed extends Schema.TaggedError<RequestFailed>()("RequestFailed", {
  message: Schema.String,
  code: Schema.optional(Schema.String),
  headline: Schema.optional(Schema.String),
  errors: Schema.optional(Schema.Array(Issue))
}) {}

/** The routes file has problems: every one, with its line and column. Nothing was changed. */
export class InvalidFile extends Schema.TaggedError<InvalidFile>()("InvalidFile", {
  file: Schema.String,
  problems: Schema.Array(Problem)
}) {
  override get message(): string {
    const n = this.problems.length
    return [
      `${this.file}: ${n} problem${n === 1 ? "" : "s"}, nothing changed`,
      ...this.problems.map((problem) => `${this.file}:${problem.line}:${problem.column}: ${problem.message}`)
    ].join("\n")
  }
}

/** Changes of a sync were not applied (or, in a dry run, the server would refuse them): `failed` of `total`. */
export class SyncFailed extends Schema.TaggedError<SyncFailed>()("SyncFailed", {
  failed: Schema.Number,
  total: Schema.Number,
  dryRun: Schema.optional(Schema.Boolean)
}) {
  override get message(): string {
    return `${this.failed} of ${this.total} changes ${
      this.dryRun === true ? "would not be" : "not"
    } applied (see above)`
  }
}

/** The plan is beyond one batch's limits and splitting was not asked for: nothing was changed. */
export class PlanTooLarge extends Schema.TaggedError<PlanTooLarge>()("PlanTooLarge", {
  changes: Schema.Number,
  bytes: Schema.Number,
  batches: Schema.Number
}) {
  override get message(): string {
    return `the plan's ${this.changes} changes (a ${this.bytes}-byte batch) are beyond one batch's limits ` +
      "(5,000 operations, 4 MiB), so it cannot be applied all or nothing: nothing changed. Run sync again with " +
      `--split-batches to apply it as ${this.batches} batches in plan order, each all or nothing`
  }
}

/** No token to call the registry with. */
export class MissingToken extends Schema.TaggedError<MissingToken>()("MissingToken", {}) {
  override get message(): string {
    return "set ROUTING_TOKEN to a bearer token of the registry (routes:read to read, routes:write to sync)"
  }
}

/** `sync --wait`: the wait ended with followers still below the sync's revision (each was named). */
export class FleetBehind extends Schema.TaggedError<FleetBehind>()("FleetBehind", {
  revision: Schema.Number,
  behind: Schema.Number
}) {
  override get message(): string {
    return `${this.behind} follower${this.behind === 1 ? " has" : "s have"} not applied revision ${this.revision} ` +
      "(see above)"
  }
}

/** `match`: no stored route serves the request (its decision was printed). The command exits 1. */
export class NoRoute extends Schema.TaggedError<NoRoute>()("NoRoute", {
  outcome: Schema.String
}) {
  override get message(): string {
    return `no stored route serves the request (${this.outcome})`
  }
}

/** `diff --exit-code`: the registry differs from the file (the plan was printed). The command exits 1. */
export class Differences extends Schema.TaggedError<Differences>()("Differences", {
  changes: Schema.Number
}) {
  override get message(): string {
    return `the registry differs from the file: ${this.changes} change${this.changes === 1 ? "" : "s"} to make`
  }
}

/**
 * `match` or `diff --exit-code` could not answer (the registry cannot be reached, the token is refused, the file has
 * problems): `cause` says why. The command exits 2, so that its 1 always means the answer.
 */
export class Unanswered extends Schema.TaggedError<Unanswered>()("Unanswered", {
  cause: Schema.Unknown
}) {
  override get message(): string {
    return messageOf(this.cause)
  }
}
