/**
 * The sweep of the Postgres store's late reads (internal/pg/deadline.ts): a read answered `StoreUnavailable` at its
 * deadline may still run in the database, holding its pool connection (a lock it waits for); the sweep cancels it there
 * (`pg_cancel_backend`), found by the mark every read statement of the store starts with.
 *
 * @internal
 */
import * as SqlClient from "@effect/sql/SqlClient"
import { Clock, Context, Effect, Option, Runtime } from "effect"
import * as Connect from "./connect.js"

// Cancels the store's read statements that have run longer than the deadline: $1 is the mark, $2 the deadline in s.
const CANCEL_LATE_READS = `SELECT count(pg_cancel_backend(pid))::int AS cancelled FROM pg_stat_activity
  WHERE datname = current_database() AND pid <> pg_backend_pid() AND state = 'active'
    AND starts_with(query, $1) AND query_start < now() - make_interval(secs => $2)`
// A sweep runs this long after a read passed its deadline, then again, twice as long after each that cancelled
// nothing (at most a deadline apart), for as long as a late read has not ended; and stops when none has cancelled
// anything for this many deadlines: a late read left then waits for a pool connection it may never get (a pool that
// was closed), or for a connection that does not answer, and neither holds a statement in the database.
const SWEEP_FIRST_MILLIS = 100
const SWEEP_FRUITLESS_DEADLINES = 3

/**
 * Sweeps for late reads while there are any: reads answered at the deadline whose statement has not ended. The sweep
 * holds a connection of its own (where it can make one) only while it runs, and runs outside any host's transaction.
 */
export const make = (
  sql: SqlClient.SqlClient,
  connect: Connect.MakeClient | undefined,
  mark: string,
  millis: number
) => {
  const parameters = [mark, millis / 1000]
  let late = 0
  let sweeping = false
  const sweeps = Effect.scoped(Effect.gen(function*() {
    let own = connect === undefined
      ? undefined
      : Option.getOrUndefined(yield* Effect.option(Connect.connected(connect)))
    const throughPool = Effect.map(
      sql.unsafe<{ cancelled: number }>(CANCEL_LATE_READS, parameters),
      (rows) => rows[0]?.cancelled ?? 0
    )
    const cancel = Effect.suspend(() =>
      own === undefined ? throughPool : Effect.tryPromise(() => own!.query(CANCEL_LATE_READS, parameters)).pipe(
        Effect.map((result) => Number(result.rows[0]?.cancelled ?? 0)),
        // The store's connection died: the pool will do.
        Effect.catchAll(() => Effect.suspend(() => (own = undefined, throughPool)))
      )
    )
    let pause = SWEEP_FIRST_MILLIS
    let fruitfulAt = yield* Clock.currentTimeMillis
    while (late > 0 && (yield* Clock.currentTimeMillis) - fruitfulAt < SWEEP_FRUITLESS_DEADLINES * millis) {
      yield* Effect.sleep(pause)
      const cancelled = yield* Effect.orElseSucceed(cancel, () => 0)
      if (cancelled > 0) fruitfulAt = yield* Clock.currentTimeMillis
      pause = cancelled > 0 ? SWEEP_FIRST_MILLIS : Math.min(millis, pause * 2)
    }
  })).pipe(
    Effect.mapInputContext((context: Context.Context<never>) => Context.omit(SqlClient.TransactionConnection)(context)),
    Effect.ensuring(Effect.sync(() => {
      sweeping = false
    }))
  )
  return {
    /** A read was answered at its deadline; its statement may still run. */
    passed: (runtime: Runtime.Runtime<never>) => {
      late++
      if (sweeping) return
      sweeping = true
      Runtime.runFork(runtime)(sweeps)
    },
    /** A late read's statement ended. */
    ended: () => {
      late--
    }
  }
}
