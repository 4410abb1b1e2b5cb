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
 * `NOTIFY` makes it fast: once a change is committed, the process that made it announces the routes as it left them
 * (or the removed ids), and every listening process applies them at once, keeping the newest revision of each route.
 * It is a hint only: a notification lost while a connection was down costs latency, never a change, because readers
 * also read the feed every poll interval. A change made inside a host's transaction is announced only as "changed",
 * through that transaction: Postgres delivers it at the commit, and readers then read the feed.
 *
 * @internal
 */
import * as SqlClient from "@effect/sql/SqlClient"
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
// Postgres refuses a payload of 8,000 bytes or more; announcements are cut into payloads below this.
const MAX_PAYLOAD = 7_500
// A listener pings itself every poll interval, or every second if that is longer; one that has not heard its own
// ping for this many periods takes its connection as dead and listens on a new one.
const PING_MILLIS = 1_000
const FIRST_PING_MILLIS = 25
const DEAF_PERIODS = 3

/** A committed change, as announced: the route as it was left, or the id of a removed route. */
export type Announcement = { readonly upserted: Route.StoredRoute } | { readonly removed: string }

export interface Feed {
  readonly changes: RouteRepository.ChangeFeed
  /**
   * Tells the other processes of a change this one committed. Changes announced while a `NOTIFY` is on its way go
   * together in the next one.
   */
  readonly announce: (change: Announcement) => Effect.Effect<void>
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
  // Names this store's announcements, so its own listener skips them: its table has those changes already.
  const origin = randomUUID()
  const changes: RouteRepository.ChangeFeed = {
    cursor: guard(
      Effect.map(sql<{ cursor: string }>`SELECT pg_current_snapshot()::text AS cursor`, ([row]) => row!.cursor)
    ),
    since: (cursor) => guard(since(cursor)),
    pollInterval: settings.pollInterval,
    listen: settings.notifications && listen !== undefined ? hear(listen, sql, settings, fromJson, origin) : undefined
  }

  return {
    changes,
    announce: announcer(sql, settings, origin),
    prune: pruner(sql, settings, removals, feed, guard)
  }
}

/**
 * Listens on the table's channel, giving `listener` each change another process announces. It proves its own
 * connection alive by pinging itself; when pings stop coming back (the connection was killed, the server restarted),
 * it listens on a new connection, and wakes the reader once it hears again, for what was said while it could not.
 */
const hear = (
  listen: Listen,
  sql: SqlClient.SqlClient,
  settings: Settings,
  fromJson: Parts["fromJson"],
  origin: string
) =>
(listener: RouteRepository.ChangeListener): Effect.Effect<never> => {
  const ping = PING_PREFIX + origin
  const own = payloadStart(origin)
  const period = Math.min(Duration.toMillis(settings.pollInterval), PING_MILLIS)
  const heard = (payload: string) => {
    if (payload === CHANGED) return listener.wake()
    if (payload.startsWith(own)) return
    try {
      const { removed, upserted } = JSON.parse(payload) as Payload
      listener.apply(upserted.map(fromJson), removed)
    } catch {
      listener.wake() // not an announcement of this version: read the feed instead
    }
  }
  const session = Effect.scoped(Effect.gen(function*() {
    const startedAt = Date.now()
    let heardAt: number | undefined
    yield* Effect.forkScoped(S.runForEach(listen(settings.channel), (payload) =>
      Effect.sync(() => {
        if (payload === ping) {
          if (heardAt === undefined) listener.wake()
          heardAt = Date.now()
        } else if (!payload.startsWith(PING_PREFIX)) {
          heard(payload)
        }
      })))
    return yield* Effect.forever(Effect.gen(function*() {
      yield* Effect.ignore(sql`SELECT pg_notify(${settings.channel}, ${ping})`)
      // Until the first ping comes back, `LISTEN` may not have been sent yet: ping again soon.
      yield* Effect.sleep(heardAt === undefined ? FIRST_PING_MILLIS : period)
      if (Date.now() - (heardAt ?? startedAt) > DEAF_PERIODS * period) {
        return yield* Effect.fail("the listening connection stopped hearing")
      }
    }))
  }))
  return Effect.forever(Effect.zipRight(Effect.catchAllCause(session, () => Effect.void), Effect.sleep(period)))
}

/** An announcement's payload: who sent it, routes as JSON rows (as the feed reads them), and removed ids. */
interface Payload {
  readonly from: string
  readonly upserted: ReadonlyArray<JsonRow>
  readonly removed: ReadonlyArray<string>
}

const toJsonRow = (route: Route.StoredRoute): JsonRow => ({
  id: route.id,
  method: route.method,
  path: route.path,
  middleware: route.middleware,
  handler: route.handler,
  created_at: route.createdAt.toISOString(),
  revision: route.revision
})

/** The payloads that carry `changes`, each under Postgres's limit; a change too large for one says "changed". */
const payloadStart = (origin: string) => `{"from":${JSON.stringify(origin)},`

const payloads = (origin: string, changes: ReadonlyArray<Announcement>): Array<string> => {
  const all: Array<string> = []
  let upserted: Array<string> = []
  let removed: Array<string> = []
  let size = 0
  const flush = () => {
    if (upserted.length + removed.length > 0) {
      all.push(`${payloadStart(origin)}"upserted":[${upserted.join(",")}],"removed":[${removed.join(",")}]}`)
    }
    upserted = []
    removed = []
    size = 0
  }
  for (const change of changes) {
    const json = JSON.stringify("upserted" in change ? toJsonRow(change.upserted) : change.removed)
    if (json.length > MAX_PAYLOAD - 40) {
      all.push(CHANGED)
      continue
    }
    if (size + json.length > MAX_PAYLOAD - 40) flush()
    if ("upserted" in change) upserted.push(json)
    else removed.push(json)
    size += json.length + 1
  }
  flush()
  return all
}

/**
 * Sends the changes this process committed, at most one `NOTIFY` in flight: what is announced meanwhile goes in the
 * next. A change made inside a host's transaction is not committed yet: it is announced as "changed" through that
 * transaction, which Postgres delivers when it commits and drops if it rolls back.
 */
const announcer = (sql: SqlClient.SqlClient, settings: Settings, origin: string) => {
  let pending: Array<Announcement> = []
  let sending = false
  const notify = (payload: string) => Effect.ignore(sql`SELECT pg_notify(${settings.channel}, ${payload})`)
  const send: Effect.Effect<void> = Effect.suspend(() => {
    if (pending.length === 0) {
      sending = false
      return Effect.void
    }
    const batch = pending
    pending = []
    return Effect.zipRight(Effect.forEach(payloads(origin, batch), notify, { discard: true }), send)
  })
  return (change: Announcement): Effect.Effect<void> => {
    if (!settings.notifications) return Effect.void
    return Effect.flatMap(Effect.serviceOption(SqlClient.TransactionConnection), (transaction) => {
      if (transaction._tag === "Some") return notify(CHANGED)
      pending.push(change)
      if (sending) return Effect.void
      sending = true
      return Effect.asVoid(Effect.forkDaemon(send))
    })
  }
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
