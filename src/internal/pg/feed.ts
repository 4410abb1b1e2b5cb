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
 * Transaction ids are one server's, from its start: a standby promoted after a failover gives the ids after the last
 * it received to new transactions, though the old primary had given some of them to transactions it never sent (and a
 * server restarted after a crash may do the same with ids it never wrote down). So a cursor names the server and
 * start it was taken on (`pg_postmaster_start_time()`, and the last reset of its statistics, which a crash resets),
 * and a read from another answers that the cursor is lost: the reader loads every route again, from a cursor of the
 * server it reaches now.
 *
 * `NOTIFY` makes it fast: once a change is committed, the process that made it announces the routes as it left them
 * (or the removed ids), and every listening process applies them at once, keeping the newest revision of each route.
 * It is a hint only: a notification lost while a connection was down costs latency, never a change, because readers
 * also read the feed every poll interval. A change made inside a host's transaction is announced only as "changed",
 * through that transaction: Postgres delivers it at the commit, and readers then read the feed.
 *
 * A table listens on a connection of the store's own, made from `PgClient`'s config (internal/pg/connect.ts), rather
 * than through `PgClient.listen`: that connection's `error` and `end` events reach the store, so a dead listening
 * connection is noticed at once and replaced, where `PgClient.listen`'s keeps its death to itself and only missed
 * pings find it out. Measured (bench/propagation.ts, the listening backend killed): p99 propagation 503 ms through
 * `PgClient.listen`, 12-24 ms on the store's own connection. `PgClient.listen` stays the fallback for a config that
 * does not say where the pool connects.
 *
 * @internal
 */
import type * as PgClient from "@effect/sql-pg/PgClient"
import * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import type * as Statement from "@effect/sql/Statement"
import type { Scope } from "effect"
import { Clock, Deferred, Duration, Effect, Exit, Fiber, Schedule, Stream as S } from "effect"
import { randomUUID } from "node:crypto"
import Pg from "pg"
import type * as Route from "../../Route.js"
import type * as RouteRepository from "../../RouteRepository.js"
import * as Connect from "./connect.js"
import type { Settings } from "./options.js"
import * as Row from "./row.js"

interface SinceRow {
  readonly cursor: string
  readonly lost: boolean
  readonly upserted: ReadonlyArray<Row.JsonRow>
  readonly removed: ReadonlyArray<string>
}

export interface Parts {
  /** The host's `PgClient`, when it has one: without, there is no listening, and tables follow by polling. */
  readonly pg: PgClient.PgClient | undefined
  /** The same client without the host's name transforms. */
  readonly sql: SqlClient.SqlClient
  readonly settings: Settings
  readonly columns: Statement.Fragment
  /** Starts every read statement, so that one past the deadline can be found and cancelled (internal/pg/deadline.ts). */
  readonly readMark: Statement.Fragment
  /** Runs a statement under the store's deadline, turning an unreachable database into `StoreUnavailable`. */
  readonly guard: <A>(effect: Effect.Effect<A, SqlError>) => Effect.Effect<A, RouteRepository.StoreUnavailable>
}

/** A cursor's server (empty in a cursor of an earlier release, which is a snapshot alone) and snapshot. */
const parseCursor = (cursor: string) => {
  const at = cursor.indexOf("@")
  return { server: cursor.slice(0, Math.max(at, 0)), snapshot: cursor.slice(at + 1) }
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
// The first pause before listening again on a connection that died soon after it was opened.
const RETRY_MILLIS = 10

/**
 * The pauses before listening again after sessions that failed in a row: doubling from `RETRY_MILLIS` up to `period`,
 * each drawn within ±20% so that the processes a restarted server cut off do not all come back at the same instant.
 */
export const relisten = (period: number): Schedule.Schedule<unknown> =>
  Schedule.exponential(Duration.millis(RETRY_MILLIS)).pipe(
    Schedule.jittered,
    Schedule.union(Schedule.spaced(Duration.millis(period)))
  )
// Sessions on the store's own connection that end without hearing a ping, before it listens through PgClient.listen.
const UNHEARD_BEFORE_SHARED = 2

/** A committed change, as announced: the route as it was left, or the id of a removed route. */
export type Announcement = { readonly upserted: Route.StoredRoute } | { readonly removed: string }

export interface Feed {
  readonly changes: RouteRepository.ChangeFeed
  /**
   * Tells the other processes of a change this one committed. Changes announced while a `NOTIFY` is on its way go
   * together in the next one.
   */
  readonly announce: (change: Announcement) => Effect.Effect<void>
  /**
   * Tells the other processes that something changed, for them to read the feed: a batch, which they must apply in one
   * step, and which announcements, cut into payloads, would bring them in parts.
   */
  readonly announceChanged: Effect.Effect<void>
  /** Prunes removals older than the retention, at most once per tenth of it. */
  readonly prune: Effect.Effect<void>
}

export const make = ({ columns, guard, pg, readMark, settings, sql }: Parts): Feed => {
  const routes = sql(settings.qualified)
  // The server a cursor was taken on, since its start: its postmaster's start time, and when its shared statistics
  // were last reset, which a crash does too (a backend killed: the server restarts its processes, not its
  // postmaster), each in microseconds.
  const thisServer = sql`(extract(epoch FROM pg_postmaster_start_time()) * 1000000)::bigint::text || '.' ||
    COALESCE((extract(epoch FROM (SELECT stats_reset FROM pg_stat_archiver)) * 1000000)::bigint::text, '')`
  const removals = sql(settings.removals)
  const feed = sql(settings.feed)

  const unseenBy = (snapshot: string) =>
    sql`txid >= pg_snapshot_xmin(${snapshot}::pg_snapshot) AND NOT pg_visible_in_snapshot(txid, ${snapshot}::pg_snapshot)`

  // A cursor of another server or start, or of an earlier release (a snapshot alone), is lost: nothing is read by it.
  const since = (cursor: string) => {
    const { server, snapshot } = parseCursor(cursor)
    return Effect.map(
      sql<SinceRow>`${readMark}
        WITH here AS (SELECT ${thisServer} AS server),
        seen AS (SELECT here.server <> ${server}
          OR (SELECT pruned_through FROM ${feed}) >= pg_snapshot_xmin(${snapshot}::pg_snapshot) AS lost FROM here)
        SELECT here.server || '@' || pg_current_snapshot()::text AS cursor, seen.lost,
          CASE WHEN seen.lost THEN '[]'::json ELSE (SELECT COALESCE(json_agg(changed), '[]')
            FROM (SELECT ${columns} FROM ${routes} WHERE ${unseenBy(snapshot)}) AS changed) END AS upserted,
          CASE WHEN seen.lost THEN '[]'::json ELSE (SELECT COALESCE(json_agg(DISTINCT id), '[]')
            FROM ${removals} WHERE ${unseenBy(snapshot)}) END AS removed
        FROM here, seen`,
      ([row]): RouteRepository.Changes =>
        row!.lost
          ? { cursor: row!.cursor, upserted: [], removed: [], complete: false }
          : { cursor: row!.cursor, upserted: row!.upserted.map(Row.decode), removed: row!.removed, complete: true }
    )
  }

  const channels = pg === undefined ? undefined : channelsOf(pg, settings.channel)
  // Names this store's announcements, so its own listener skips them: its table has those changes already.
  const origin = randomUUID()
  const changes: RouteRepository.ChangeFeed = {
    cursor: guard(
      Effect.map(
        sql<{ cursor: string }>`${readMark}SELECT ${thisServer} || '@' || pg_current_snapshot()::text AS cursor`,
        ([row]) => row!.cursor
      )
    ),
    since: (cursor) => guard(since(cursor)),
    pollInterval: settings.pollInterval,
    listen: settings.notifications && channels !== undefined
      ? hear(channels, sql, settings, origin)
      : undefined
  }

  return {
    changes,
    announce: announcer(sql, settings, origin),
    announceChanged: settings.notifications
      ? Effect.ignore(sql`SELECT pg_notify(${settings.channel}, ${CHANGED})`)
      : Effect.void,
    prune: pruner(sql, settings, removals, feed, guard)
  }
}

/** Listening on one connection: `open` starts it. */
interface Channel {
  readonly open: (heard: (payload: string) => void) => Effect.Effect<Listening, unknown, Scope.Scope>
}

interface Listening {
  /** Fails when the connection dies. */
  readonly died: Effect.Effect<never, unknown>
  /** Sends a notification on the listening connection itself, where it is the store's own (it then hears it too). */
  readonly notify: ((payload: string) => Effect.Effect<void, unknown>) | undefined
}

/**
 * Where a table listens: on a connection of the store's own, made from the `PgClient`'s config, whose `error` and
 * `end` events say at once that it died (a terminated backend, a restarted server); else through `PgClient.listen`,
 * whose connection keeps its death to itself (pings find it out, within a few periods).
 */
interface Channels {
  readonly own: Channel | undefined
  readonly shared: Channel
}

const channelsOf = (pg: PgClient.PgClient, name: string): Channels => {
  const make = Connect.fromConfig(pg.config)
  return {
    own: make === undefined ? undefined : {
      open: (heard) =>
        Effect.gen(function*() {
          const dead = yield* Deferred.make<never, string>()
          const client = yield* Connect.connected(() => {
            const client = make()
            client.on(
              "error",
              (error) => Deferred.unsafeDone(dead, Exit.fail(`the listening connection failed: ${error}`))
            )
            client.on("end", () => Deferred.unsafeDone(dead, Exit.fail("the listening connection ended")))
            client.on("notification", (message) => {
              if (message.channel === name && message.payload !== undefined) heard(message.payload)
            })
            return client
          })
          yield* Effect.tryPromise(() => client.query(`LISTEN ${Pg.escapeIdentifier(name)}`))
          return {
            died: Deferred.await(dead),
            // NOTIFY rather than the pool's `SELECT pg_notify(...)`: in pg_stat_activity the listening connection
            // shows LISTEN or NOTIFY on its channel, told apart from the pool's connections.
            notify: (payload) =>
              Effect.tryPromise(() => client.query(`NOTIFY ${Pg.escapeIdentifier(name)}, ${Pg.escapeLiteral(payload)}`))
          }
        })
    },
    shared: {
      open: (heard) =>
        Effect.map(
          Effect.forkScoped(S.runForEach(pg.listen(name), (payload) => Effect.sync(() => heard(payload)))),
          (fiber) => ({
            died: Effect.zipRight(Fiber.join(fiber), Effect.fail("the listening stream ended")),
            notify: undefined
          })
        )
    }
  }
}

/**
 * Listens on the table's channel, giving `listener` each change another process announces. When the connection
 * dies, it listens on a new one at once, and wakes the reader once it hears its first ping there, for what was said
 * meanwhile. The pings also find out a connection that dies without a word (a network that drops everything): one
 * that has not heard its own ping for a few periods is taken as dead too. A connection of the store's own that never
 * heard a ping reaches another database than the pool (a config that does not say how the pool connects, such as a
 * PGlite pool's): after a second such one, the table listens through `PgClient.listen` for good. Once it has heard
 * one, it pings on itself, so the pool serves only the polls while the process is idle (docs/scaling-out.md).
 */
const hear = (
  channels: Channels,
  sql: SqlClient.SqlClient,
  settings: Settings,
  origin: string
) =>
(listener: RouteRepository.ChangeListener): Effect.Effect<never> =>
  Effect.clockWith((clock) => {
    const ping = PING_PREFIX + origin
    const own = payloadStart(origin)
    const period = Math.min(Duration.toMillis(settings.pollInterval), PING_MILLIS)
    const heard = (payload: string) => {
      if (payload === CHANGED) return listener.wake()
      if (payload.startsWith(own)) return
      try {
        const { removed, upserted } = JSON.parse(payload) as Payload
        listener.apply(upserted.map(Row.decode), removed)
      } catch {
        listener.wake() // not an announcement of this version: read the feed instead
      }
    }
    // Whether the store's own connection ever heard a ping, and how many of its sessions ended before one did.
    let verified = false
    let unheard = 0
    const channel = () =>
      channels.own !== undefined && (verified || unheard < UNHEARD_BEFORE_SHARED) ? channels.own : channels.shared
    // When the last session opened, and for how long it listened.
    let openedAt: number | undefined
    const session = Effect.suspend(() => {
      const using = channel()
      openedAt = undefined
      let heardAt: number | undefined
      return Effect.scoped(Effect.gen(function*() {
        const { died, notify } = yield* using.open((payload) => {
          if (payload === ping) {
            if (heardAt === undefined) listener.wake()
            // Heard on the connection's own callback, outside any fiber: the clock is read directly.
            heardAt = clock.unsafeCurrentTimeMillis()
            if (using === channels.own) verified = true
          } else if (!payload.startsWith(PING_PREFIX)) {
            heard(payload)
          }
        })
        const startedAt = yield* Clock.currentTimeMillis
        openedAt = startedAt
        // Through the pool until the store's own connection has heard a ping (so it reaches the pool's database),
        // then on that connection itself: an idle process's pings and polls never take two pool connections at once.
        // A ping the connection does not answer is given up after a period; its silence then ends the session.
        const send = Effect.suspend(() =>
          notify !== undefined && verified
            ? Effect.timeout(notify(ping), period)
            : sql`SELECT pg_notify(${settings.channel}, ${ping})`
        )
        const pinging = Effect.forever(Effect.gen(function*() {
          yield* Effect.ignore(send)
          // Until the first ping comes back, `LISTEN` may not be in place (through PgClient.listen): ping again soon.
          yield* Effect.sleep(heardAt === undefined ? FIRST_PING_MILLIS : period)
          if ((yield* Clock.currentTimeMillis) - (heardAt ?? startedAt) > DEAF_PERIODS * period) {
            return yield* Effect.fail("the listening connection stopped hearing")
          }
        }))
        return yield* Effect.raceFirst(died, pinging)
      })).pipe(Effect.ensuring(Effect.sync(() => {
        if (using === channels.own && !verified) unheard++
      })))
    })
    // A connection that listened a while is replaced at once, and the backoff starts over. One that could not be
    // opened, or died soon after, is tried again after the next pause of `relisten`, so a server refusing or killing
    // connections is not hammered.
    return Effect.flatMap(Schedule.driver(relisten(period)), (retry) => {
      const pause = Effect.flatMap(Clock.currentTimeMillis, (now) =>
        openedAt !== undefined && now - openedAt >= period
          ? retry.reset
          : Effect.orDie(retry.next(undefined))) // the backoff never ends
      return Effect.forever(Effect.zipRight(Effect.catchAllCause(session, () => Effect.void), pause))
    })
  })

/** An announcement's payload: who sent it, routes as JSON rows (as the feed reads them), and removed ids. */
interface Payload {
  readonly from: string
  readonly upserted: ReadonlyArray<Row.JsonRow>
  readonly removed: ReadonlyArray<string>
}

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
    const json = JSON.stringify("upserted" in change ? Row.encode(change.upserted) : change.removed)
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
 * next, all its payloads in one statement. A change made inside a host's transaction is not committed yet: it is
 * announced as "changed" through that transaction, which Postgres delivers when it commits and drops if it rolls back.
 *
 * A `NOTIFY` is a transaction with an id of its own, whose commit would wait for a flush of the log to disk, holding
 * the server's one lock on the notification queue meanwhile: a second flush for every group of changes, which the
 * changes of every writing process waited behind (docs/performance.md, "Group commit"). What it announces is already
 * committed and it is a hint only, so it commits without waiting for the flush (`synchronous_commit` off, for its
 * own transaction alone): a crash can lose a hint, never a change.
 */
const announcer = (sql: SqlClient.SqlClient, settings: Settings, origin: string) => {
  let pending: Array<Announcement> = []
  let sending = false
  const notify = (payload: string) => Effect.ignore(sql`SELECT pg_notify(${settings.channel}, ${payload})`)
  const notifyAll = (all: ReadonlyArray<string>) =>
    Effect.ignore(sql`SELECT set_config('synchronous_commit', 'off', true), pg_notify(${settings.channel}, payload)
      FROM json_array_elements_text(${JSON.stringify(all)}::json) AS payload`)
  const send: Effect.Effect<void> = Effect.suspend(() => {
    if (pending.length === 0) {
      sending = false
      return Effect.void
    }
    const batch = pending
    pending = []
    return Effect.zipRight(notifyAll(payloads(origin, batch)), send)
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
  return Effect.flatMap(Clock.currentTimeMillis, (now) => {
    if (now - prunedAt < every) return Effect.void
    prunedAt = now
    return Effect.asVoid(Effect.forkDaemon(Effect.ignore(guard(prune))))
  })
}
