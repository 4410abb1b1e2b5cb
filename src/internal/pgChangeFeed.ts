/**
 * The Postgres store's change feed (`RouteRepository.ChangeFeed`), read by the route table of every process.
 *
 * A cursor is a Postgres snapshot (`pg_current_snapshot()`): which transactions had committed when it was taken, and
 * which were still running. Every route row carries the id of the transaction that wrote it last (`txid`), and every
 * removal leaves the route's id with the id of the transaction that removed it. A read returns, in one statement and
 * so in one snapshot, the rows and removals whose transaction the cursor did not see committed, with that snapshot
 * as the next cursor. Transaction ids, not revisions or clocks, decide: a writer that took revision 10 and commits
 * after another's 11 was running when the cursor was taken, so its row comes with the first read after its commit.
 *
 * `NOTIFY` only wakes readers early: a notification lost while a connection was down costs nothing but latency,
 * because readers also read every poll interval.
 *
 * @internal
 */
import type * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import type * as Statement from "@effect/sql/Statement"
import type { Stream } from "effect"
import { Duration, Effect, Stream as S } from "effect"
import { randomUUID } from "node:crypto"
import type * as Route from "../Route.js"
import type * as RouteRepository from "../RouteRepository.js"

/** The names and settings the feed works with, as the store resolved them. */
export interface Settings {
  readonly qualified: string
  readonly removals: string
  readonly feed: string
  readonly channel: string
  readonly notifications: boolean
  readonly pollInterval: Duration.Duration
  readonly changeRetention: Duration.Duration
}

/** A route row as `json_agg` gives it: `created_at` is text there. */
export interface JsonRow {
  readonly id: string
  readonly method: string
  readonly path: string
  readonly middleware: ReadonlyArray<string>
  readonly handler: string
  readonly created_at: string
  readonly revision: number
}

interface SinceRow {
  readonly cursor: string
  readonly lost: boolean
  readonly upserted: ReadonlyArray<JsonRow>
  readonly removed: ReadonlyArray<string>
}

/** `@effect/sql-pg`'s client offers `listen`; another driver's does not, and its tables follow by polling. */
type Listen = (channel: string) => Stream.Stream<string, SqlError>

export interface Parts {
  /** The host's client as it is in context (the one with `listen`, when it has it). */
  readonly client: SqlClient.SqlClient
  /** The same client without the host's name transforms. */
  readonly sql: SqlClient.SqlClient
  readonly settings: Settings
  readonly columns: Statement.Fragment
  readonly fromJson: (row: JsonRow) => Route.StoredRoute
  /** Runs a statement under the store's deadline, turning an unreachable database into `StoreUnavailable`. */
  readonly guard: <A>(effect: Effect.Effect<A, SqlError>) => Effect.Effect<A, RouteRepository.StoreUnavailable>
}

const PING_PREFIX = "ping:"
const CHANGED = "changed"
// A listening connection that has not heard its own ping for this many poll intervals is taken as dead and replaced.
const DEAF_INTERVALS = 3

export interface Feed {
  readonly changes: RouteRepository.ChangeFeed
  /** Tells the other processes that this one committed a change (at most one `NOTIFY` in flight at a time). */
  readonly announce: Effect.Effect<void>
  /** Prunes removals older than the retention, at most once per tenth of it. */
  readonly prune: Effect.Effect<void>
}

export const make = ({ client, columns, fromJson, guard, settings, sql }: Parts): Feed => {
  const routes = sql(settings.qualified)
  const removals = sql(settings.removals)
  const feed = sql(settings.feed)

  const unseenBy = (cursor: string) =>
    sql`txid >= pg_snapshot_xmin(${cursor}::pg_snapshot) AND NOT pg_visible_in_snapshot(txid, ${cursor}::pg_snapshot)`

  const since = (cursor: string) =>
    Effect.map(
      sql<SinceRow>`
        SELECT pg_current_snapshot()::text AS cursor,
          (SELECT pruned_through FROM ${feed}) >= pg_snapshot_xmin(${cursor}::pg_snapshot) AS lost,
          (SELECT COALESCE(json_agg(changed), '[]') FROM (SELECT ${columns} FROM ${routes} WHERE ${unseenBy(cursor)})
            AS changed) AS upserted,
          (SELECT COALESCE(json_agg(DISTINCT id), '[]') FROM ${removals} WHERE ${unseenBy(cursor)}) AS removed`,
      ([row]): RouteRepository.Changes =>
        row!.lost
          ? { cursor: row!.cursor, upserted: [], removed: [], complete: false }
          : { cursor: row!.cursor, upserted: row!.upserted.map(fromJson), removed: row!.removed, complete: true }
    )

  const listen = (client as { readonly listen?: Listen }).listen
  const changes: RouteRepository.ChangeFeed = {
    cursor: guard(
      Effect.map(sql<{ cursor: string }>`SELECT pg_current_snapshot()::text AS cursor`, ([row]) => row!.cursor)
    ),
    since: (cursor) => guard(since(cursor)),
    pollInterval: settings.pollInterval,
    wakeups: settings.notifications && listen !== undefined ? hear(listen, sql, settings) : undefined
  }

  return { changes, announce: announcer(sql, settings), prune: pruner(sql, settings, removals, feed, guard) }
}

/**
 * Listens on the table's channel, calling `wake` for each change another process announces. It proves its own
 * connection alive by sending itself a ping every poll interval; when pings stop coming back (the connection was
 * killed, the server restarted), it listens on a new connection, and wakes the reader once it hears again, for what
 * was said while it could not hear.
 */
const hear =
  (listen: Listen, sql: SqlClient.SqlClient, settings: Settings) => (wake: () => void): Effect.Effect<never> => {
    const ping = PING_PREFIX + randomUUID()
    const interval = Duration.toMillis(settings.pollInterval)
    const session = Effect.scoped(Effect.gen(function*() {
      const startedAt = Date.now()
      let heardAt: number | undefined
      yield* Effect.forkScoped(S.runForEach(listen(settings.channel), (payload) =>
        Effect.sync(() => {
          if (payload === ping) {
            if (heardAt === undefined) wake()
            heardAt = Date.now()
          } else if (!payload.startsWith(PING_PREFIX)) {
            wake()
          }
        })))
      return yield* Effect.forever(Effect.gen(function*() {
        yield* Effect.ignore(sql`SELECT pg_notify(${settings.channel}, ${ping})`)
        yield* Effect.sleep(interval)
        if (Date.now() - (heardAt ?? startedAt) > DEAF_INTERVALS * interval) {
          return yield* Effect.fail("the listening connection stopped hearing")
        }
      }))
    }))
    return Effect.forever(Effect.zipRight(Effect.catchAllCause(session, () => Effect.void), Effect.sleep(interval)))
  }

/** Sends one `NOTIFY` for any number of changes committed while the previous one was on its way. */
const announcer = (sql: SqlClient.SqlClient, settings: Settings): Effect.Effect<void> => {
  if (!settings.notifications) return Effect.void
  let sending = false
  let again = false
  const send: Effect.Effect<void> = Effect.suspend(() => {
    again = false
    return Effect.ignore(sql`SELECT pg_notify(${settings.channel}, ${CHANGED})`)
  }).pipe(Effect.zipRight(Effect.suspend(() => {
    if (again) return send
    sending = false
    return Effect.void
  })))
  return Effect.suspend(() => {
    if (sending) {
      again = true
      return Effect.void
    }
    sending = true
    return Effect.asVoid(Effect.forkDaemon(send))
  })
}

/**
 * Deletes removals older than the retention, and records the newest transaction it deleted: a reader whose cursor
 * is not past it may have missed one, and loads every route again instead.
 */
const pruner = (
  sql: SqlClient.SqlClient,
  settings: Settings,
  removals: Statement.Identifier,
  feed: Statement.Identifier,
  guard: Parts["guard"]
): Effect.Effect<void> => {
  const retentionSeconds = Duration.toSeconds(settings.changeRetention)
  const every = Duration.toMillis(settings.changeRetention) / 10
  let prunedAt = 0
  const prune = sql`
    WITH gone AS (
      DELETE FROM ${removals} WHERE removed_at < now() - make_interval(secs => ${retentionSeconds}) RETURNING txid
    )
    UPDATE ${feed} SET pruned_through = newest.txid
    FROM (SELECT txid FROM gone ORDER BY txid DESC LIMIT 1) AS newest
    WHERE ${feed}.pruned_through < newest.txid`
  return Effect.suspend(() => {
    const now = Date.now()
    if (now - prunedAt < every) return Effect.void
    prunedAt = now
    return Effect.asVoid(Effect.forkDaemon(Effect.ignore(guard(prune))))
  })
}
