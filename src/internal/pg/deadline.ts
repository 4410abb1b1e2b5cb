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
 * answer; if its connection gives none, the transaction's fate is settled on another connection by what it wrote (its
 * witness, given by the caller), never by its id alone: after a failover (or a crash) the server asked may have given
 * that id to another transaction. Waiting for a pool connection sends nothing, so a write still waiting at the
 * deadline is answered at once too. The fiber that runs the write is the store's, not the caller's: interrupting the
 * caller never leaves a statement half-sent or a connection mid-transaction in the pool, and a connection goes back to
 * the pool only once its transaction is over.
 *
 * A write that finds itself on a read-only server (a standby reached through an address that has not moved yet, a
 * primary being demoted: `read_only_sql_transaction`) wrote nothing: its connection is closed (it would find the
 * same server again) and the write runs again on another, until the deadline.
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
import { Cause, Clock, Context, Effect, Exit, Fiber, FiberId, Option, Runtime, Stream } from "effect"
import Pg from "pg"
import type * as RouteRepository from "../../RouteRepository.js"
import type * as Connect from "./connect.js"
import { isReadOnly } from "./errors.js"
import * as Sweep from "./sweep.js"

export interface Options {
  readonly sql: SqlClient.SqlClient
  readonly millis: number
  /** The failure of an operation past its deadline. */
  readonly timedOut: () => RouteRepository.StoreUnavailable
  /** The failure of an operation interrupted by anything but its caller (a pool or runtime shutting down). */
  readonly interrupted: () => RouteRepository.StoreUnavailable
  /** The failure of a write past its deadline that found only read-only servers. */
  readonly readOnly: () => RouteRepository.StoreUnavailable
  /** The store's table, named in the mark its read statements start with. */
  readonly table: string
  /** Makes a connection outside the pool, where the host's config allows one (internal/pg/connect.ts). */
  readonly connect: Connect.MakeClient | undefined
}

export interface Deadline {
  /** The failure of an operation past its deadline. */
  readonly timedOut: () => RouteRepository.StoreUnavailable
  /** The text every read statement of the store starts with (as `sql.literal`), by which a late one is found. */
  readonly mark: string
  /** Runs a read, failing with `timedOut()` if it has not finished by the deadline; the statement is then cancelled. */
  readonly read: <A, E>(effect: Effect.Effect<A, E>) => Effect.Effect<A, E | RouteRepository.StoreUnavailable>
  /**
   * Runs `work`'s statements as one transaction (or savepoint, in a host's transaction) under the deadline, settled by
   * `witness` if its `COMMIT` goes unanswered. The deadline runs from `since` (the `Clock`'s milliseconds) when given:
   * a group of changes (internal/pg/group.ts) keeps its first member's.
   */
  readonly write: <A>(
    witness: Witness<A>,
    since?: number
  ) => <B extends A, E>(
    work: Effect.Effect<B, E | SqlError>
  ) => Effect.Effect<B, E | SqlError | RouteRepository.StoreUnavailable>
}

/**
 * Whether what a transaction wrote is in the database: `true` when it is (only that transaction's commit can have put
 * it there), `false` when it is not and could not have been removed since, `undefined` when that cannot be told.
 */
export type Verdict = boolean | undefined

/**
 * What settles a write whose `COMMIT` went unanswered, given what the write would return: a read of what its
 * transaction wrote, on whichever server the store reaches then (`undefined` when it wrote nothing whose loss would
 * make its answer untrue). Read only once that server is a primary on which the transaction is not running.
 */
export type Witness<A> = (value: A) => Effect.Effect<Verdict, SqlError> | undefined

/**
 * Where a write is: waiting for a connection, running its statements, committing, or given up at the deadline before
 * its `COMMIT` (which it then never sends).
 */
interface State {
  phase: "waiting" | "working" | "committing" | "abandoned"
  /** The transaction's id (32 bits, as `pg_locks` shows it), once begun: whether it still runs is asked by it. */
  xid: string | undefined
  /** What the write returns if its COMMIT succeeds, once it is sent. */
  value: unknown
  /** What settles it, once its COMMIT is sent. */
  witness: Effect.Effect<Verdict, SqlError> | undefined
  /** Its settling, once begun: the write's fiber and the backstop both wait for the one. */
  settling: Fiber.Fiber<Verdict> | undefined
  /** Whether an attempt found a read-only server. */
  readOnly: boolean
  /** Whether the last attempt's connection was lost before its transaction began: nothing of it reached the server. */
  unbegun: boolean
}

// How long past the deadline a write waits for a connection that does not answer at all before it stops waiting.
const MAX_GRACE_MILLIS = 1_000
// How often the fate of a transaction whose COMMIT went unanswered is asked.
const SETTLE_EVERY_MILLIS = 100
// The pause before a write that found a read-only server runs again, on another connection.
const READ_ONLY_RETRY_MILLIS = 100
// How many times a ROLLBACK the server refused (a statement timeout or a cancel landing on it) is sent again.
const ROLLBACK_ATTEMPTS = 3

/** A server error other than a lost or terminated connection: the server answered, and the transaction is over. */
const answeredByServer = (error: SqlError) => {
  const code = (error.cause as { code?: unknown } | undefined)?.code
  return typeof code === "string" && /^[0-9A-Z]{5}$/.test(code) && !/^(08|57)/.test(code)
}

/** The server refused a statement and the session goes on (an `ERROR`, not a `FATAL` that ends the connection). */
const sessionGoesOn = (error: SqlError) => (error.cause as { severity?: unknown } | undefined)?.severity === "ERROR"

const isStatementTimeout = (error: unknown) =>
  (error as { _tag?: unknown })._tag === "SqlError" &&
  ((error as SqlError).cause as { code?: unknown } | undefined)?.code === "57014"

// Read through a function: the phase changes while a write's fiber waits.
const abandoned = (state: State) => state.phase === "abandoned"

/**
 * Ends the transaction on `connection` before it goes back to the pool: `ROLLBACK`, sent again when the server refuses
 * it (`SET LOCAL statement_timeout`, still in force, or a cancel meant for an earlier statement, can land on it and
 * leave the transaction open and aborted, which the next user of the connection would meet as
 * `current transaction is aborted`). A connection on a read-only server is then closed by its server, so the pool
 * drops it.
 */
const release = (connection: Connection, readOnly: boolean) =>
  Effect.ignore(
    Effect.retry(connection.executeUnprepared("ROLLBACK", [], undefined), {
      times: ROLLBACK_ATTEMPTS - 1,
      while: sessionGoesOn
    })
  ).pipe(
    Effect.zipRight(
      readOnly
        ? Effect.ignore(connection.executeUnprepared("SELECT pg_terminate_backend(pg_backend_pid())", [], undefined))
        : Effect.void
    )
  )

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

export const make = ({ connect, interrupted, millis, readOnly, sql, table, timedOut }: Options): Deadline => {
  const grace = Math.min(MAX_GRACE_MILLIS, millis)
  const mark = `/* route-registry read ${table} */ `
  const late = Sweep.make(sql, connect, mark, millis)
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

  // Whether the transaction committed (`true`), did not (`false`) or cannot be told (`undefined`), asked on other
  // connections until it can be: once the server they reach is a primary on which the transaction is not running (its
  // id holds no lock there), what it wrote says. Its id alone never does: a promoted standby gives the ids after the
  // last it received to new transactions, as a server restarted after a crash may, so `pg_xact_status` could answer
  // for another transaction.
  const settle = (xid: string, witness: Effect.Effect<Verdict, SqlError>): Effect.Effect<Verdict> =>
    Effect.gen(function*() {
      const until = (yield* Clock.currentTimeMillis) + settling
      const ask = Effect.flatMap(
        sql<{ recovering: boolean; running: boolean }>`${sql.literal(mark)}
          SELECT pg_is_in_recovery() AS recovering, EXISTS (
            SELECT FROM pg_locks WHERE locktype = 'transactionid' AND transactionid = ${xid}::xid) AS running`,
        ([server]) => server!.recovering || server!.running ? Effect.succeed(undefined) : witness
      )
      for (;;) {
        const verdict = Option.getOrUndefined(yield* Effect.option(read(ask)))
        if (verdict !== undefined) return verdict
        if ((yield* Clock.currentTimeMillis) > until) return undefined
        yield* Effect.sleep(SETTLE_EVERY_MILLIS)
      }
    })

  // What a write answers once its COMMIT went unanswered: its value if it committed, else `failure`.
  const settled = <A, F>(state: State, value: A, failure: F): Effect.Effect<A, F> => {
    const witness = state.witness
    // It wrote nothing whose loss would make its answer untrue.
    if (witness === undefined) return Effect.succeed(value)
    const settling = Effect.suspend(() =>
      state.settling === undefined
        ? Effect.tap(Effect.forkDaemon(settle(state.xid!, witness)), (fiber) => state.settling = fiber)
        : Effect.succeed(state.settling)
    )
    return Effect.flatMap(Effect.flatMap(settling, Fiber.join), (committed) =>
      committed === undefined
        ? Effect.die(unknownOutcome())
        : committed
        ? Effect.succeed(value)
        : Effect.fail(failure))
  }

  // One attempt of the write in a transaction of its own, on a connection reserved from the pool. The connection goes
  // back to the pool with no transaction open (`release`), unless its COMMIT was answered.
  const attempt = <A, E>(
    work: Effect.Effect<A, E | SqlError>,
    witness: Witness<A>,
    state: State,
    remaining: () => number
  ) =>
    Effect.scoped(Effect.gen(function*() {
      state.unbegun = false
      const connection = yield* sql.reserve
      if (abandoned(state)) return yield* Effect.fail(pastDeadline()) // nothing was sent
      state.phase = "working"
      let ended = false
      let readOnly = false
      yield* Effect.addFinalizer(() => ended ? Effect.void : release(connection, readOnly))
      const value = yield* Effect.gen(function*() {
        const begun = yield* connection.executeUnprepared(
          `BEGIN; SET LOCAL statement_timeout = ${remaining()}; SET LOCAL idle_in_transaction_session_timeout = ${millis}; ` +
            "SELECT pg_current_xact_id()::xid::text AS xid",
          [],
          undefined
        ).pipe(Effect.tapError((error) => Effect.sync(() => state.unbegun = !sessionGoesOn(error))))
        state.xid = String(lastRows(begun)[0]?.xid)
        return yield* Effect.provideService(work, SqlClient.TransactionConnection, [refusing(connection, state), 0])
      }).pipe(Effect.tapError((error) => Effect.sync(() => readOnly = state.readOnly = isReadOnly(error))))
      if (abandoned(state)) return yield* Effect.fail(pastDeadline())
      state.value = value
      state.witness = witness(value)
      state.phase = "committing" // from here on, only the database's answer answers
      const commit = yield* Effect.either(connection.executeRaw("COMMIT", []))
      if (commit._tag === "Right") {
        ended = true
        // A transaction a failed statement had aborted ends with ROLLBACK, whatever was sent.
        if ((commit.right as { command?: unknown }).command === "COMMIT") return value
        return yield* Effect.die(new Error("the transaction was rolled back by an error its work did not report"))
      }
      if (answeredByServer(commit.left)) return yield* Effect.fail(commit.left)
      return yield* settled(state, value, commit.left)
    }))

  // The write in a transaction of its own: on a read-only server, whose connection `release` closes, again on another
  // after a pause, until the deadline gives it up; on a pooled connection found lost at BEGIN (its server ended it
  // after the pool took it back: a failover, a restart, a read-only server's), again at once on another.
  const own = <A, E>(
    work: Effect.Effect<A, E | SqlError>,
    witness: Witness<A>,
    state: State,
    remaining: () => number
  ): Effect.Effect<A, E | SqlError> =>
    Effect.catchIf(
      attempt(work, witness, state, remaining),
      (error) => (isReadOnly(error) || state.unbegun) && !abandoned(state),
      (error) =>
        Effect.zipRight(
          isReadOnly(error) ? Effect.sleep(READ_ONLY_RETRY_MILLIS) : Effect.void,
          own(work, witness, state, remaining)
        )
    )

  // The write inside the host's transaction, under a savepoint: undone before the answer when it fails, or when the
  // savepoint cannot be released.
  const inHost = <A, E>(
    connection: Connection,
    work: Effect.Effect<A, E | SqlError>,
    state: State,
    remaining: () => number
  ): Effect.Effect<A, E | SqlError> =>
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
      const kept: Exit.Exit<unknown, E | SqlError> = Exit.isFailure(exit) ? exit : yield* Effect.exit(
        // The host's own statement_timeout applies again to what it runs next.
        connection.executeUnprepared(
          `RELEASE SAVEPOINT ${name}; SET LOCAL statement_timeout = ${Pg.escapeLiteral(previous)}`,
          [],
          undefined
        )
      )
      if (Exit.isSuccess(kept)) return yield* exit
      // The rollback the server refuses (the savepoint's statement timeout, landing on it) is sent again.
      yield* Effect.retry(
        connection.executeUnprepared(`ROLLBACK TO SAVEPOINT ${name}; RELEASE SAVEPOINT ${name}`, [], undefined),
        { times: ROLLBACK_ATTEMPTS - 1, while: sessionGoesOn }
      )
      return yield* Effect.failCause(kept.cause)
    })

  // The deadline and its backstop are Node timers, as `read`'s is; the time left for the statements is read from the
  // `Clock`.
  const write = <A>(witness: Witness<A>, since?: number) => <B extends A, E>(work: Effect.Effect<B, E | SqlError>) =>
    Effect.flatMap(
      Effect.zip(Effect.runtime<never>(), Effect.clock),
      ([runtime, clock]) =>
        Effect.async<B, E | SqlError | RouteRepository.StoreUnavailable>((resume) => {
          const startedAt = since ?? clock.unsafeCurrentTimeMillis()
          const left = millis - (clock.unsafeCurrentTimeMillis() - startedAt)
          const remaining = () => Math.max(1, Math.ceil(millis - (clock.unsafeCurrentTimeMillis() - startedAt)))
          const host = Context.getOption(runtime.context, SqlClient.TransactionConnection)
          const state: State = {
            phase: "waiting",
            xid: undefined,
            value: undefined,
            witness: undefined,
            settling: undefined,
            readOnly: false,
            unbegun: false
          }
          const run = Runtime.runFork(runtime)
          let answered = false
          const answer = (exit: Exit.Exit<B, E | SqlError | RouteRepository.StoreUnavailable>) => {
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
              answer(Exit.fail(state.readOnly ? readOnly() : timedOut()))
            }
          }, left)
          const backstop = setTimeout(() => {
            // The connection has not answered at all since the deadline.
            if (state.phase === "committing") {
              run(settled(state, state.value as B, timedOut())).addObserver(answer)
            } else if (host._tag === "Some") {
              answer(Exit.die(
                new Error(
                  `the host's transaction connection did not answer within ${millis + grace} ms: ` +
                    "whether the change is in that transaction is unknown"
                )
              ))
            }
          }, left + grace)
          const fiber = run(
            host._tag === "Some" ? inHost(host.value[0], work, state, remaining) : own(work, witness, state, remaining)
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

  return { mark, read, timedOut, write }
}
