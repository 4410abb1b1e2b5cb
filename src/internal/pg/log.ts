/**
 * The Postgres store's change log: the revision counter every write takes first, the log entry written by the change's
 * own statement, bounded pruning, reading pages of the log, and dry runs.
 *
 * Every write transaction first locks the counter's one row (`SELECT … FOR UPDATE`) and holds it to its commit, so the
 * store's writers commit one after the other in the order they took it, across every process on the database: a
 * change that commits after another reads the counter the other advanced, and takes a larger revision, whatever order
 * their transactions began in. A change's statement advances the counter by the rows it changed, writes their log
 * entries and prunes, all in the transaction of the change: a dry run or a refusal takes back its revision with it, and
 * none is ever used twice. Gaps come only from the sequence, which is not transactional: revisions hosts of an earlier
 * release take from it during a rolling upgrade, and a change rolled back after its statement moved it (a crash).
 *
 * @internal
 */
import type * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import type * as Statement from "@effect/sql/Statement"
import { Data, Effect } from "effect"
import * as Route from "../../Route.js"
import type { Action, HistoryPage, HistoryQuery, LogRead } from "../../RouteRepository.js"
import type { StoreUnavailable } from "../store/errors.js"
import type * as Deadline from "./deadline.js"
import * as Row from "./row.js"
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

/**
 * The CTE `locked` of a change statement: the counter locked (held to the commit: the store's writers commit one at a
 * time), and the last revision: the counter's, or the sequence's when a host of an earlier release took a larger one
 * from it since (a rolling upgrade). The sequence is read once the lock is held (the locked row comes first), so no
 * revision it gave before is reused. A statement that takes it first of all needs no statement of its own for the lock.
 */
export const locked = ({ settings, sql }: Store): Statement.Fragment =>
  sql`held AS MATERIALIZED (SELECT revision FROM ${sql(settings.counter)} FOR UPDATE),
    locked AS MATERIALIZED (
      SELECT GREATEST(revision, (SELECT last_value FROM ${sql(settings.sequence)})) AS revision FROM held)`

/** `locked` as a statement of its own, giving the last revision. */
export const lock = (store: Store): Effect.Effect<number, SqlError> => {
  const { sql } = store
  return Effect.map(
    sql<{ revision: string }>`WITH ${locked(store)} SELECT revision FROM locked`,
    (rows) => Number(rows[0]!.revision)
  )
}

/** A route row as the API answers it, as JSON built by the database from the row `alias`. */
export const routeJson = (sql: SqlClient.SqlClient, alias: string): Statement.Fragment => {
  const a = sql.literal(alias)
  return sql`jsonb_build_object('id', ${a}.id, 'method', ${a}.method, 'path', ${a}.path,
    'middleware', COALESCE(${a}.middleware_config, to_jsonb(${a}.middleware)), 'handler', ${a}.handler,
    'createdAt', to_char(${a}.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'))
    || CASE WHEN ${a}.enabled THEN '{}'::jsonb ELSE '{"enabled": false}'::jsonb END
    || CASE WHEN ${a}.split IS NULL THEN '{}'::jsonb ELSE jsonb_build_object('split', ${a}.split) END
    || CASE WHEN ${a}.description = '' THEN '{}'::jsonb ELSE jsonb_build_object('description', ${a}.description) END
    || CASE WHEN ${a}.tags = '{}' THEN '{}'::jsonb ELSE jsonb_build_object('tags', to_jsonb(${a}.tags)) END
    || CASE WHEN ${a}.when_key = '' THEN '{}'::jsonb ELSE jsonb_build_object('when', ${a}.when_key::jsonb) END`
}

/**
 * The end of a change statement whose `changed` CTE holds the rows it changed: the counter advanced past the
 * revisions they took (from `base`, the revision `lock` gave, or `locked`'s in the statement), and the oldest entries
 * past the retention pruned. Their revisions follow `base` one by one, unless `skipping`: then some of the revisions
 * after `base` were left out (rows the statement numbered and then did not write), and the counter takes the largest
 * in `changed`.
 * The sequence follows, so a host of an earlier release inserting meanwhile takes a larger revision than any this store
 * gave; it never moves back below a revision such a host already took. A dry run leaves it: setting a sequence is not
 * undone by a rollback, and the next change would skip the revision.
 */
export const advance = (
  { settings, sql }: Store,
  base: number | Statement.Fragment,
  dryRun: boolean | undefined,
  skipping = false
): Statement.Fragment => {
  const history = sql(settings.history)
  const follow = dryRun === true
    ? sql`revision`
    : sql`setval(${settings.sequence}, GREATEST(revision, (SELECT last_value FROM ${sql(settings.sequence)})))`
  const newest = skipping
    ? sql`(SELECT max(revision) FROM changed)`
    : sql`${base}::bigint + (SELECT count(*) FROM changed)`
  return sql`
    advanced AS (UPDATE ${sql(settings.counter)} SET revision = ${newest}
      WHERE EXISTS (SELECT FROM changed)
      RETURNING ${follow}),
    pruned AS (DELETE FROM ${history} WHERE revision IN (
      SELECT revision FROM ${history}
      WHERE revision <= ${newest} - ${settings.historyCapacity}::bigint
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

/**
 * Runs a write's work in its transaction, settled by `witness` if its COMMIT goes unanswered; a dry run's is rolled
 * back once done, and answered as it went.
 */
export const write = <A, E>(
  store: Store,
  work: Effect.Effect<A, E | SqlError>,
  dryRun: boolean | undefined,
  witness: Deadline.Witness<A>
): Effect.Effect<A, E | SqlError | StoreUnavailable> =>
  dryRun !== true ? store.deadline.write(witness)(work) : store.deadline.write(() => undefined)( // never committed
    Effect.flatMap(work, (value) => Effect.fail(new Undone({ value })))
  ).pipe(
    Effect.catchIf(
      (error): error is Undone => error instanceof Undone,
      (undone) => Effect.succeed(undone.value as A)
    )
  ) as Effect.Effect<A, E | SqlError | StoreUnavailable>

/** The entry at `revision`, if the log holds it. */
export const entryAt = ({ readMark, settings, sql }: Store, revision: number) =>
  Effect.map(
    sql<Row.EntryRow>`${readMark}SELECT ${Row.entryColumns(sql)} FROM ${sql(settings.history)}
      WHERE revision = ${revision}`,
    (rows) => rows[0] === undefined ? undefined : Row.decodeEntry(rows[0])
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
  if ([query.routeId, query.batch].some((id) => id !== undefined && !Route.isRouteId(id))) {
    return Effect.succeed({ items: [], hasMore: false })
  }
  const conditions = [
    query.before === undefined ? undefined : sql`revision < ${query.before}`,
    query.routeId === undefined ? undefined : sql`route_id = ${query.routeId}`,
    query.actor === undefined ? undefined : sql`actor = ${query.actor}`,
    query.action === undefined ? undefined : sql`action = ${query.action}`,
    query.batch === undefined ? undefined : sql`batch = ${query.batch}::uuid`
  ].filter((condition) => condition !== undefined)
  return Effect.map(
    sql<Row.EntryRow>`${readMark}SELECT ${Row.entryColumns(sql)} FROM ${sql(settings.history)}
      WHERE ${sql.and(conditions)} ORDER BY revision DESC LIMIT ${query.limit + 1}`,
    (rows) => ({ items: rows.slice(0, query.limit).map(Row.decodeEntry), hasMore: rows.length > query.limit })
  )
}

interface AfterRow {
  readonly store: string
  readonly revision: string | number
  readonly oldest: string | number | null
  readonly entries: ReadonlyArray<Omit<Row.EntryRow, "at"> & { readonly at: string }>
}

/**
 * The entries after `revision`, oldest first, with the store's identity and newest revision, in one statement (one
 * snapshot: revisions commit in order, so what it sees is every change up to the newest). A walk of the primary key.
 * A batch is never cut: the rest of one the last entry begins comes with it.
 */
export const after = (
  { readMark, settings, sql }: Store,
  revision: number,
  limit: number
): Effect.Effect<LogRead, SqlError> => {
  const history = sql(settings.history)
  return Effect.map(
    sql<AfterRow>`${readMark}
      WITH page AS (
        SELECT ${Row.entryColumns(sql)} FROM ${history} WHERE revision > ${revision} ORDER BY revision LIMIT ${limit})
      SELECT counter.store, counter.revision, (SELECT min(revision) FROM ${history}) AS oldest,
        (SELECT COALESCE(json_agg(entry ORDER BY entry.revision), '[]') FROM (
          SELECT * FROM page
          UNION ALL
          SELECT ${Row.entryColumns(sql)} FROM ${history}
          WHERE revision > (SELECT max(revision) FROM page)
            AND revision <= (SELECT batch_end FROM page ORDER BY revision DESC LIMIT 1)) AS entry) AS entries
      FROM ${sql(settings.counter)} AS counter`,
    ([row]) => {
      const newest = Number(row!.revision)
      return {
        store: row!.store,
        revision: newest,
        entries: row!.entries.map((entry) => Row.decodeEntry({ ...entry, at: new Date(entry.at) })),
        complete: revision >= newest || row!.oldest === null || Number(row!.oldest) <= revision + 1
      }
    }
  )
}
