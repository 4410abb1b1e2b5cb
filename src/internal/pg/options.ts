/**
 * The Postgres store's options: what a host may set, their defaults, and the names and settings the store works with
 * once they are checked.
 *
 * @internal
 */
import { Duration, Either } from "effect"
import { InvalidOption } from "../../InvalidOption.js"
import { checkHistoryCapacity } from "../store/rules.js"

/**
 * The options a host gives the Postgres store (`PgRouteRepository.Options`).
 */
export interface Options {
  /** Table that holds the routes. Default `route_registry_routes`. */
  readonly table?: string | undefined
  /** Schema of that table. Default: the connection's `search_path` (usually `public`). */
  readonly schema?: string | undefined
  /**
   * Longest time one store operation may take, in real time, before it is interrupted and fails with
   * `StoreUnavailable`. Default 5 seconds.
   */
  readonly queryTimeout?: Duration.DurationInput | undefined
  /**
   * Whether processes tell each other of their changes with `LISTEN`/`NOTIFY`, so every route table hears of a change
   * within milliseconds. Turn it off for a Postgres-wire engine without them (CockroachDB, YugabyteDB): tables then
   * follow by polling alone, every `pollInterval`. Default `true`.
   */
  readonly notifications?: boolean | undefined
  /**
   * How often a route table reads the changes when nothing woke it: the longest a change takes to reach the other
   * processes without notifications, and how often a table confirms it is current. Default 500 milliseconds.
   */
  readonly pollInterval?: Duration.DurationInput | undefined
  /**
   * How long the ids of removed routes are kept for processes that were away. A process away longer loads every
   * route again when it is back. Default 10 minutes.
   */
  readonly changeRetention?: Duration.DurationInput | undefined
  /**
   * The newest change log entries kept at least (docs/history.md). Each write prunes at most its own count of entries
   * and `PRUNE_EXTRA` more, so after a lower capacity the log shrinks back to it over the next writes. Default 100,000.
   */
  readonly historyCapacity?: number | undefined
}

/** The defaults of the options a host leaves out. */
export const DEFAULTS = {
  table: "route_registry_routes",
  queryTimeout: Duration.seconds(5),
  notifications: true,
  pollInterval: Duration.millis(500),
  changeRetention: Duration.minutes(10),
  historyCapacity: 100_000
} as const

/** The names and settings the store works with: every name qualified with the schema, when there is one. */
export interface Settings {
  readonly table: string
  readonly schema: string | undefined
  readonly qualified: string
  readonly migrationsTable: string
  readonly sequence: string
  readonly removals: string
  readonly feed: string
  readonly stampFunction: string
  readonly removalFunction: string
  readonly idempotencyKeys: string
  readonly methodBoundFunction: string
  readonly searchFunction: string
  readonly limits: string
  /** The change log, and the one-row counter of its revisions. */
  readonly history: string
  readonly counter: string
  readonly historyCapacity: number
  readonly channel: string
  readonly queryTimeout: Duration.Duration
  readonly notifications: boolean
  readonly pollInterval: Duration.Duration
  readonly changeRetention: Duration.Duration
}

// Names go into DDL as identifiers; 48 characters leave room for the suffixes of the names derived from the table's.
const IDENTIFIER = /^[a-z_][a-z0-9_]{0,47}$/

const invalidName = (option: string, value: string | undefined): InvalidOption | undefined =>
  value === undefined || IDENTIFIER.test(value) ? undefined : new InvalidOption({
    option,
    message: `PgRouteRepository: ${option} ${
      JSON.stringify(value)
    } must be a lowercase SQL identifier of at most 48 characters ([a-z_][a-z0-9_]*)`
  })

/** The options checked, with their defaults applied; a table or schema name that is not a plain identifier fails. */
export const resolve = (options: Options): Either.Either<Settings, InvalidOption> => {
  const table = options.table ?? DEFAULTS.table
  const historyCapacity = options.historyCapacity ?? DEFAULTS.historyCapacity
  const capacityProblem = checkHistoryCapacity(historyCapacity)
  const invalid = invalidName("table", table) ?? invalidName("schema", options.schema) ??
    (capacityProblem === undefined ? undefined : new InvalidOption({
      option: "historyCapacity",
      message: `PgRouteRepository: ${capacityProblem}`
    }))
  if (invalid !== undefined) return Either.left(invalid)
  const qualify = (name: string) => options.schema === undefined ? name : `${options.schema}.${name}`
  return Either.right({
    table,
    schema: options.schema,
    qualified: qualify(table),
    migrationsTable: qualify(`${table}_migrations`),
    sequence: qualify(`${table}_revision_seq`),
    removals: qualify(`${table}_removals`),
    feed: qualify(`${table}_feed`),
    stampFunction: qualify(`${table}_stamp`),
    removalFunction: qualify(`${table}_log_removal`),
    idempotencyKeys: qualify(`${table}_idempotency`),
    methodBoundFunction: qualify(`${table}_bound_methods`),
    searchFunction: qualify(`${table}_search_text`),
    limits: qualify(`${table}_limits`),
    history: qualify(`${table}_history`),
    counter: qualify(`${table}_revision`),
    historyCapacity,
    // One channel per table name: two schemas with tables of one name only wake each other's tables for nothing.
    channel: `${table}_changes`,
    queryTimeout: Duration.decode(options.queryTimeout ?? DEFAULTS.queryTimeout),
    notifications: options.notifications ?? DEFAULTS.notifications,
    pollInterval: Duration.decode(options.pollInterval ?? DEFAULTS.pollInterval),
    changeRetention: Duration.decode(options.changeRetention ?? DEFAULTS.changeRetention)
  })
}

/** `resolve`, throwing its `InvalidOption` where a bad name must be refused at once (when a layer is made). */
export const resolveOrThrow = (options: Options): Settings =>
  Either.getOrThrowWith(resolve(options), (invalid) => invalid)
