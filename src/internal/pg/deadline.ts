/**
 * The Postgres store's deadline (`queryTimeout`), kept so that an answer never says what is not so: an operation
 * answered `StoreUnavailable` wrote nothing, and a change the database committed is never answered so.
 *
 * A write runs in a transaction of its own: `BEGIN` with `SET LOCAL statement_timeout` (the server cancels a statement
 * still running at the deadline, whatever it waits for: a lock, a full disk) and `SET LOCAL
 * idle_in_transaction_session_timeout` (the server rolls back a transaction whose client went silent), the write's
 * statements, then `COMMIT`, which is sent only before the deadline. At the deadline, a write that has not sent its
 * `COMMIT` is answered `StoreUnavailable` at once and is never committed: its fiber rolls the transaction back as soon
 * as the connection answers (or the server does, if it never does). A write that has sent it waits for the database's
 * answer; if its connection gives none, the transaction's fate is asked on another connection (`pg_xact_status`).
 * Waiting for a pool connection sends nothing, so a write still waiting at the deadline is answered at once too.
 * The fiber that runs the write is the store's, not the caller's: interrupting the caller never leaves a statement
 * half-sent or a connection mid-transaction in the pool.
 *
 * Inside a host's transaction (`SqlClient.TransactionConnection` in context) the statements run on the host's
 * connection, under a savepoint with the same `statement_timeout`, and the host decides the commit: past the deadline
 * the savepoint is rolled back before the answer, so the host's transaction holds nothing of a write answered
 * `StoreUnavailable`.
 *
 * A read is answered `StoreUnavailable` at the deadline (a read that completes late changes nothing), and is then
 * cancelled in the database: every read statement of the store starts with a mark naming its table, and a sweep
 * cancels those that have run past the deadline (`pg_cancel_backend`), from a connection of the store's own where the
 * host's config allows one, else from the pool. So a read stuck on a lock frees its pool connection, even when every
 * pool connection is stuck (@effect/sql-pg's own cancel waits for a free one).
 *
 * @internal
 */
import * as SqlClient from "@effect/sql/SqlClient"
import type { Connection } from "@effect/sql/SqlConnection"
import { SqlError } from "@effect/sql/SqlError"
import { Cause, Clock, Context, Effect, Exit, FiberId, Option, Runtime, Stream } from "effect"
import Pg from "pg"
import type * as RouteRepository from "../../RouteRepository.js"
import * as Connect from "./connect.js"

export interface Options {
  readonly sql: SqlClient.SqlClient
  readonly millis: number
  /** The failure of an operation past its deadline. */
  readonly timedOut: () => RouteRepository.StoreUnavailable
  /** The failure of an operation interrupted by anything but its caller (a pool or runtime shutting down). */
  readonly interrupted: () => RouteRepository.StoreUnavailable
  /** The store's table, named in the mark its read statements start with. */
  readonly table: string
  /** Makes a connection outside the pool, where the host's config allows one (internal/pg/connect.ts). */
  readonly connect: Connect.MakeClient | undefined
}

export interface Deadline {
  /** The text every read statement of the store starts with (as `sql.literal`), by which a late one is found. */
  readonly mark: string
  /** Runs a read, failing with `timedOut()` if it has not finished by the deadline; the statement is then cancelled. */
  readonly read: <A, E>(effect: Effect.Effect<A, E>) => Effect.Effect<A, E | RouteRepository.StoreUnavailable>
  /** Runs `work`'s statements as one transaction (or savepoint, in a host's transaction) under the deadline. */
  readonly write: <A, E>(
    work: Effect.Effect<A, E | SqlError>
  ) => Effect.Effect<A, E | SqlError | RouteRepository.StoreUnavailable>
}

/**
 * Where a write is: waiting for a connection, running its statements, committing, or given up at the deadline before
 * its `COMMIT` (which it then never sends).
 */
interface State {
  phase: "waiting" | "working" | "committing" | "abandoned"
  /** The transaction's id, once begun: what `pg_xact_status` is asked about. */
  txid: string | undefined
  /** What the write returns if its COMMIT succeeds, once it is sent. */
  value: unknown
}

// How long past the deadline a write waits for a connection that does not answer at all before it stops waiting.
const MAX_GRACE_MILLIS = 1_000
// How often the fate of a transaction whose COMMIT went unanswered is asked.
const SETTLE_EVERY_MILLIS = 100

/** A server error other than a lost or terminated connection: the server answered, and the transaction is over. */
const answeredByServer = (error: SqlError) => {
  const code = (error.cause as { code?: unknown } | undefined)?.code
  return typeof code === "string" && /^[0-9A-Z]{5}$/.test(code) && !/^(08|57)/.test(code)
}

const isStatementTimeout = (error: unknown) =>
  (error as { _tag?: unknown })._tag === "SqlError" &&
  ((error as SqlError).cause as { code?: unknown } | undefined)?.code === "57014"

// Read through a function: the phase changes while a write's fiber waits.
const abandoned = (state: State) => state.phase === "abandoned"

const pastDeadline = () => new SqlError({ message: "the operation passed its deadline" })

/** The transaction's connection, refusing every statement once the write was given up. */
const refusing = (connection: Connection, state: State): Connection => {
  const unless = <A>(effect: () => Effect.Effect<A, SqlError>) =>
    Effect.suspend(() => abandoned(state) ? Effect.fail(pastDeadline()) : effect())
  return {
    execute: (sql, params, transformRows) => unless(() => connection.execute(sql, params, transformRows)),
    executeRaw: (sql, params) => unless(() => connection.executeRaw(sql, params)),
    executeValues: (sql, params) => unless(() => connection.executeValues(sql, params)),
    executeUnprepared: (sql, params, transformRows) =>
      unless(() => connection.executeUnprepared(sql, params, transformRows)),
    executeStream: (sql, params, transformRows) =>
      Stream.unwrap(unless(() => Effect.succeed(connection.executeStream(sql, params, transformRows))))
  }
}

// The rows of the last statement of a multi-statement query (node-postgres gives one row list per statement).
const lastRows = (results: ReadonlyArray<any>): ReadonlyArray<Record<string, unknown>> =>
  Array.isArray(results[results.length - 1]) ? results[results.length - 1] : results

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
const sweeper = (sql: SqlClient.SqlClient, connect: Connect.MakeClient | undefined, mark: string, millis: number) => {
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

export const make = ({ connect, interrupted, millis, sql, table, timedOut }: Options): Deadline => {
  const grace = Math.min(MAX_GRACE_MILLIS, millis)
  const mark = `/* route-registry read ${table} */ `
  const late = sweeper(sql, connect, mark, millis)
  let savepoints = 0

  // Runs `effect` against a timer in a fiber forked with the caller's fiber refs (so a host's transaction and span
  // still apply): `Effect.timeoutFail` races two forked fibers and a `Clock` sleep per call, which cost a third of a
  // store's throughput (bench/). Past the deadline the caller is answered and the statement left to the sweep: an
  // interruption would make @effect/sql-pg cancel through the pool, which may have no free connection, and may hand
  // the cancel to whatever that backend runs by then.
  const read = <A, E>(effect: Effect.Effect<A, E>) =>
    Effect.flatMap(
      Effect.runtime<never>(),
      (runtime) =>
        Effect.async<A, E | RouteRepository.StoreUnavailable>((resume) => {
          let passed = false
          const fiber = Runtime.runFork(runtime)(effect)
          const timer = setTimeout(() => {
            passed = true
            late.passed(runtime)
            resume(Effect.fail(timedOut()))
          }, millis)
          fiber.addObserver((exit) => {
            clearTimeout(timer)
            if (passed) return late.ended()
            // Interrupted by anything but this caller (a pool or runtime shutting down): the store could not answer.
            resume(Exit.isFailure(exit) && Cause.isInterruptedOnly(exit.cause) ? Effect.fail(interrupted()) : exit)
          })
          return Effect.sync(() => {
            clearTimeout(timer)
            fiber.unsafeInterruptAsFork(FiberId.none)
          })
        })
    )

  // How long the fate of a transaction whose COMMIT went unanswered is asked for: long enough for a server that
  // restarts, and for one that left the transaction idle to roll it back (idle_in_transaction_session_timeout).
  const settling = 2 * millis + grace

  const unknownOutcome = () =>
    new Error(
      `the database did not confirm a COMMIT, and whether it committed could not be learnt within ${settling} ms: ` +
        "the change may or may not be stored"
    )

  // Whether the transaction committed (`true`), was rolled back (`false`) or cannot be told (`undefined`), asked on
  // another connection until the server has decided.
  const settle = (txid: string): Effect.Effect<boolean | undefined> =>
    Effect.gen(function*() {
      const until = (yield* Clock.currentTimeMillis) + settling
      for (;;) {
        const rows = yield* Effect.option(read(sql<{ status: string | null }>`${sql.literal(mark)}
          SELECT pg_xact_status(${txid}::xid8)::text AS status`))
        const status = rows._tag === "Some" ? rows.value[0]?.status : undefined
        if (status === "committed" || status === "aborted") return status === "committed"
        if ((yield* Clock.currentTimeMillis) > until) return undefined
        yield* Effect.sleep(SETTLE_EVERY_MILLIS)
      }
    })

  // The write in a transaction of its own, on a connection reserved from the pool.
  const own = <A, E>(work: Effect.Effect<A, E | SqlError>, state: State, remaining: () => number) =>
    Effect.scoped(Effect.gen(function*() {
      const connection = yield* sql.reserve
      if (abandoned(state)) return yield* Effect.fail(pastDeadline()) // nothing was sent
      state.phase = "working"
      yield* Effect.addFinalizer(() =>
        state.phase === "committing"
          ? Effect.void
          : Effect.ignore(connection.executeUnprepared("ROLLBACK", [], undefined))
      )
      const begun = yield* connection.executeUnprepared(
        `BEGIN; SET LOCAL statement_timeout = ${remaining()}; SET LOCAL idle_in_transaction_session_timeout = ${millis}; ` +
          "SELECT pg_current_xact_id()::text AS txid",
        [],
        undefined
      )
      const txid = String(lastRows(begun)[0]?.txid)
      state.txid = txid
      const value = yield* Effect.provideService(work, SqlClient.TransactionConnection, [
        refusing(connection, state),
        0
      ])
      if (abandoned(state)) return yield* Effect.fail(pastDeadline())
      state.value = value
      state.phase = "committing" // from here on, only the database's answer answers
      const commit = yield* Effect.either(connection.executeRaw("COMMIT", []))
      if (commit._tag === "Right") {
        // A transaction a failed statement had aborted ends with ROLLBACK, whatever was sent.
        if ((commit.right as { command?: unknown }).command === "COMMIT") return value
        return yield* Effect.die(new Error("the transaction was rolled back by an error its work did not report"))
      }
      if (answeredByServer(commit.left)) return yield* Effect.fail(commit.left)
      const committed = yield* settle(txid)
      if (committed === undefined) return yield* Effect.die(unknownOutcome())
      return committed ? value : yield* Effect.fail(commit.left)
    }))

  // The write inside the host's transaction, under a savepoint: undone before the answer when it fails.
  const inHost = <A, E>(
    connection: Connection,
    work: Effect.Effect<A, E | SqlError>,
    state: State,
    remaining: () => number
  ) =>
    Effect.gen(function*() {
      state.phase = "working"
      const name = `route_registry_${++savepoints}`
      const begun = yield* connection.executeUnprepared(
        `SAVEPOINT ${name}; SELECT current_setting('statement_timeout') AS previous; ` +
          `SET LOCAL statement_timeout = ${remaining()}`,
        [],
        undefined
      )
      const previous = String((begun[1] as ReadonlyArray<{ previous: string }>)[0]!.previous)
      const exit = yield* Effect.exit(work)
      yield* connection.executeUnprepared(
        Exit.isSuccess(exit)
          // The host's own statement_timeout applies again to what it runs next.
          ? `RELEASE SAVEPOINT ${name}; SET LOCAL statement_timeout = ${Pg.escapeLiteral(previous)}`
          : `ROLLBACK TO SAVEPOINT ${name}; RELEASE SAVEPOINT ${name}`,
        [],
        undefined
      )
      return yield* exit
    })

  // The deadline and its backstop are Node timers, as `read`'s is; the time left for the statements is read from the
  // `Clock`.
  const write = <A, E>(work: Effect.Effect<A, E | SqlError>) =>
    Effect.flatMap(
      Effect.zip(Effect.runtime<never>(), Effect.clock),
      ([runtime, clock]) =>
        Effect.async<A, E | SqlError | RouteRepository.StoreUnavailable>((resume) => {
          const startedAt = clock.unsafeCurrentTimeMillis()
          const remaining = () => Math.max(1, Math.ceil(millis - (clock.unsafeCurrentTimeMillis() - startedAt)))
          const host = Context.getOption(runtime.context, SqlClient.TransactionConnection)
          const state: State = { phase: "waiting", txid: undefined, value: undefined }
          const run = Runtime.runFork(runtime)
          let answered = false
          const answer = (exit: Exit.Exit<A, E | SqlError | RouteRepository.StoreUnavailable>) => {
            if (answered) return
            answered = true
            clearTimeout(deadline)
            clearTimeout(backstop)
            resume(exit)
          }
          const deadline = setTimeout(() => {
            // Nothing sent yet, or no COMMIT: the transaction will never commit. In a host's transaction the answer waits
            // for the savepoint's rollback, which the server's statement_timeout brings at the deadline.
            if (host._tag === "None" && state.phase !== "committing") {
              state.phase = "abandoned"
              answer(Exit.fail(timedOut()))
            }
          }, millis)
          const backstop = setTimeout(() => {
            // The connection has not answered at all since the deadline.
            if (state.phase === "committing" && state.txid !== undefined) {
              run(settle(state.txid)).addObserver((settled) => {
                const committed = Exit.isSuccess(settled) ? settled.value : undefined
                if (committed === undefined) answer(Exit.die(unknownOutcome()))
                else answer(committed ? Exit.succeed(state.value as A) : Exit.fail(timedOut()))
              })
            } else if (host._tag === "Some") {
              answer(Exit.die(
                new Error(
                  `the host's transaction connection did not answer within ${millis + grace} ms: ` +
                    "whether the change is in that transaction is unknown"
                )
              ))
            }
          }, millis + grace)
          const fiber = run(
            host._tag === "Some" ? inHost(host.value[0], work, state, remaining) : own(work, state, remaining)
          )
          fiber.addObserver((exit) => {
            if (Exit.isSuccess(exit)) return answer(exit)
            if (Cause.isInterruptedOnly(exit.cause)) {
              return answer(state.phase === "committing" ? Exit.die(unknownOutcome()) : Exit.fail(interrupted()))
            }
            const failure = Cause.failureOption(exit.cause)
            answer(failure._tag === "Some" && isStatementTimeout(failure.value) ? Exit.fail(timedOut()) : exit)
          })
          // An interrupted caller gives the write up as the deadline does: rolled back unless its COMMIT was sent.
          return Effect.sync(() => {
            answered = true
            clearTimeout(deadline)
            clearTimeout(backstop)
            if (host._tag === "None" && state.phase !== "committing") state.phase = "abandoned"
          })
        })
    )

  return { mark, read, write }
}
