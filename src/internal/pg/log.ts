/**
 * The Postgres store's change log: the revision counter every write takes first, the log entry written by the change's
 * own statement, bounded pruning, reading pages of the log, and dry runs.
 *
 * Every write transaction first locks the counter's one row (`SELECT … FOR UPDATE`) and holds it to its commit, so the
 * store's writers commit one after the other in the order they took it, across every process on the database: a
 * change that commits after another reads the counter the other advanced, and takes a larger revision, whatever order
 * their transactions began in. A change's statement advances the counter by the rows it changed, writes their log
 * entries and prunes, all in the transaction of the change: a rolled-back change (a dry run, a refusal, a crash) takes
 * back its revision with it, so revisions have no gaps, and none is ever used twice.
 *
 * @internal
 */
import type * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import type * as Statement from "@effect/sql/Statement"
import { Data, Effect } from "effect"
import * as Route from "../../Route.js"
import type { Action, HistoryEntry, HistoryPage, HistoryQuery, LogRead } from "../../RouteRepository.js"
import type { StoreUnavailable } from "../store/errors.js"
import type { Store } from "./store.js"

/**
 * The most old entries one change prunes besides one per entry it writes: after a lower `historyCapacity`, the log
 * shrinks back to it by this many entries per write, so no write ever deletes more than its own count and this.
 */
export const PRUNE_EXTRA = 16

/** Who makes a change and what it is, as its log entry records it. */
export interface Change {
  readonly actor: string | null
  readonly at: Date
  readonly restoredFrom?: number | undefined
  readonly dryRun?: boolean | undefined
}

/** Locks the counter (held to the commit: the store's writers commit one at a time) and gives the last revision. */
export const lock = ({ settings, sql }: Store): Effect.Effect<number, SqlError> =>
  Effect.map(
    sql<{ revision: string }>`SELECT revision FROM ${sql(settings.counter)} FOR UPDATE`,
    (rows) => Number(rows[0]!.revision)
  )

/** A route row as the API answers it, as JSON built by the database from the row `alias`. */
export const routeJson = (sql: SqlClient.SqlClient, alias: string): Statement.Fragment => {
  const a = sql.literal(alias)
  return sql`jsonb_build_object('id', ${a}.id, 'method', ${a}.method, 'path', ${a}.path,
    'middleware', to_jsonb(${a}.middleware), 'handler', ${a}.handler,
    'createdAt', to_char(${a}.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'))`
}

/**
 * The end of a change statement whose `changed` CTE holds the rows it changed: the counter advanced past the
 * revisions they took (from `base`, the revision `lock` gave), and the oldest entries past the retention pruned.
 */
export const advance = ({ settings, sql }: Store, base: number): Statement.Fragment => {
  const history = sql(settings.history)
  return sql`
    advanced AS (UPDATE ${sql(settings.counter)} SET revision = CASE WHEN NOT EXISTS (SELECT 1 FROM changed)
      THEN revision
      -- The sequence follows, so a host of an earlier release inserting meanwhile (a rolling upgrade) takes a larger
      -- revision than any this store gave.
      ELSE GREATEST(revision + (SELECT count(*) FROM changed),
        setval(${settings.sequence}, revision + (SELECT count(*) FROM changed))) END),
    pruned AS (DELETE FROM ${history} WHERE revision IN (
      SELECT revision FROM ${history}
      WHERE revision <= ${base}::bigint + (SELECT count(*) FROM changed) - ${settings.historyCapacity}::bigint
      ORDER BY revision LIMIT (SELECT count(*) FROM changed) + ${PRUNE_EXTRA}))`
}

/**
 * The `logged` CTE of a change of one row: its entry from `changed` (the row after, or before for a delete) and `old`
 * (the row before), when the change's statement names them.
 */
export const logOne = (
  store: Store,
  action: Action,
  change: Change,
  rows: { readonly before: "old" | "changed" | undefined; readonly after: "changed" | undefined }
): Statement.Fragment => {
  const { settings, sql } = store
  const before = rows.before === undefined ? sql`NULL::jsonb` : routeJson(sql, rows.before)
  const after = rows.after === undefined ? sql`NULL::jsonb` : routeJson(sql, "changed")
  const source = rows.before === "old" ? sql`FROM changed JOIN old ON old.id = changed.id` : sql`FROM changed`
  return sql`
    logged AS (INSERT INTO ${sql(settings.history)}
      (revision, at, actor, action, route_id, before, after, restored_from)
      SELECT changed.revision, ${change.at}, ${change.actor}, ${action}, changed.id, ${before}, ${after},
        ${change.restoredFrom ?? null}::bigint
      ${source})`
}

/** A dry run's outcome, carried out of its transaction as a failure so that the transaction is rolled back. */
class Undone extends Data.TaggedError("Undone")<{ readonly value: unknown }> {}

/** Runs a write's work in its transaction; a dry run's is rolled back once done, and answered as it went. */
export const write = <A, E>(
  store: Store,
  work: Effect.Effect<A, E | SqlError>,
  dryRun: boolean | undefined
): Effect.Effect<A, E | SqlError | StoreUnavailable> =>
  dryRun !== true ? store.deadline.write(work) : store.deadline.write(
    Effect.flatMap(work, (value) => Effect.fail(new Undone({ value })))
  ).pipe(
    Effect.catchIf(
      (error): error is Undone => error instanceof Undone,
      (undone) => Effect.succeed(undone.value as A)
    )
  ) as Effect.Effect<A, E | SqlError | StoreUnavailable>

interface EntryRow {
  readonly revision: string | number
  readonly at: Date
  readonly actor: string | null
  readonly action: Action
  readonly route_id: string
  readonly before: RouteJson | null
  readonly after: RouteJson | null
  readonly restored_from: string | number | null
}

/** A route as the log keeps it: the API's JSON. */
export interface RouteJson {
  readonly id: string
  readonly method: string
  readonly path: string
  readonly middleware: ReadonlyArray<string>
  readonly handler: string
  readonly createdAt: string
}

/** The route a log entry holds. Entries were written from stored routes, so they are trusted as routes. */
export const decodeRoute = (json: RouteJson): Route.Route =>
  new Route.Route({
    id: json.id as Route.RouteId,
    method: json.method as Route.HttpMethod,
    path: json.path as Route.RoutePath,
    middleware: json.middleware as ReadonlyArray<Route.MiddlewareName>,
    handler: json.handler as Route.HandlerName,
    createdAt: new Date(json.createdAt)
  }, true)

const decodeEntry = (row: EntryRow): HistoryEntry => ({
  revision: Number(row.revision),
  at: row.at,
  actor: row.actor,
  action: row.action,
  routeId: row.route_id,
  before: row.before === null ? null : decodeRoute(row.before),
  after: row.after === null ? null : decodeRoute(row.after),
  ...(row.restored_from === null ? {} : { restoredFrom: Number(row.restored_from) })
})

const ENTRY_COLUMNS = "revision, at, actor, action, route_id, before, after, restored_from"

/** The entry at `revision`, if the log holds it. */
export const entryAt = ({ readMark, settings, sql }: Store, revision: number) =>
  Effect.map(
    sql<EntryRow>`${readMark}SELECT ${sql.literal(ENTRY_COLUMNS)} FROM ${sql(settings.history)}
      WHERE revision = ${revision}`,
    (rows) => rows[0] === undefined ? undefined : decodeEntry(rows[0])
  )

/** `true` when the log holds an entry of the route. */
export const holds = ({ readMark, settings, sql }: Store, routeId: Route.RouteId) =>
  Effect.map(
    sql`${readMark}SELECT 1 FROM ${sql(settings.history)} WHERE route_id = ${routeId} LIMIT 1`,
    (rows) => rows.length > 0
  )

/**
 * One page of the log, newest first: one backward walk of the index its filters select (the route's, the actor's,
 * the action's, or the revisions').
 */
export const page = ({ readMark, settings, sql }: Store, query: HistoryQuery): Effect.Effect<HistoryPage, SqlError> => {
  if (query.routeId !== undefined && !Route.isRouteId(query.routeId)) {
    return Effect.succeed({ items: [], hasMore: false })
  }
  const conditions = [
    query.before === undefined ? undefined : sql`revision < ${query.before}`,
    query.routeId === undefined ? undefined : sql`route_id = ${query.routeId}`,
    query.actor === undefined ? undefined : sql`actor = ${query.actor}`,
    query.action === undefined ? undefined : sql`action = ${query.action}`
  ].filter((condition) => condition !== undefined)
  return Effect.map(
    sql<EntryRow>`${readMark}SELECT ${sql.literal(ENTRY_COLUMNS)} FROM ${sql(settings.history)}
      WHERE ${sql.and(conditions)} ORDER BY revision DESC LIMIT ${query.limit + 1}`,
    (rows) => ({ items: rows.slice(0, query.limit).map(decodeEntry), hasMore: rows.length > query.limit })
  )
}

interface AfterRow {
  readonly store: string
  readonly revision: string | number
  readonly oldest: string | number | null
  readonly entries: ReadonlyArray<Omit<EntryRow, "at"> & { readonly at: string }>
}

/**
 * The entries after `revision`, oldest first, with the store's identity and newest revision, in one statement (one
 * snapshot: revisions commit in order, so what it sees is every change up to the newest). A walk of the primary key.
 */
export const after = (
  { readMark, settings, sql }: Store,
  revision: number,
  limit: number
): Effect.Effect<LogRead, SqlError> => {
  const history = sql(settings.history)
  return Effect.map(
    sql<AfterRow>`${readMark}
      SELECT counter.store, counter.revision, (SELECT min(revision) FROM ${history}) AS oldest,
        (SELECT COALESCE(json_agg(entry ORDER BY entry.revision), '[]') FROM (
          SELECT ${sql.literal(ENTRY_COLUMNS)} FROM ${history} WHERE revision > ${revision}
          ORDER BY revision LIMIT ${limit}) AS entry) AS entries
      FROM ${sql(settings.counter)} AS counter`,
    ([row]) => {
      const newest = Number(row!.revision)
      return {
        store: row!.store,
        revision: newest,
        entries: row!.entries.map((entry) => decodeEntry({ ...entry, at: new Date(entry.at) })),
        complete: revision >= newest || row!.oldest === null || Number(row!.oldest) <= revision + 1
      }
    }
  )
}
