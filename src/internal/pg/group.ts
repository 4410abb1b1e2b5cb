/**
 * Group commit: the changes a process makes at the same time share one transaction, and so one lock of the counter
 * and one flush of the log to disk (docs/performance.md, "Group commit").
 *
 * Changes made outside a host's transaction join a queue. While no group of the store's is committing, the changes
 * queued in a turn of the event loop start one (at most `MAX_GROUP_CHANGES`, half as many as the last group after
 * one fails, twice as many after one commits); those that arrive meanwhile wait for it and form the next, which starts
 * as soon as it is answered. A group is one transaction under the store's deadline
 * (`Deadline.write`, counted from its oldest member's arrival): it takes the counter first (`Log.lock`, or the first
 * statement, which takes it before it reads anything), runs its creates as one statement, then each other change in
 * arrival order, and commits once. Each change takes the revision after the one before it, writes its log entry in
 * its own statement, and is judged against the state the changes before it left: a change refused (not found, a
 * failed precondition, a conflict, the method bound) writes nothing and leaves the others. Refusals the statements
 * decide (not found, preconditions, a shape another route holds, for a create) need nothing undone; the unique index
 * and the method bound refuse with an error of the database, which aborts the transaction: the group is then run
 * again from the start in a new transaction, nothing of the first having committed, with each change they can refuse
 * under a `SAVEPOINT`, rolled back to alone. Any other failure (the deadline, a lost connection) fails the whole group,
 * of which nothing is committed. A group whose `COMMIT` goes unanswered is settled once, by the log entries of all its
 * changes (`Witness.logged`): every member is answered as the database decided, all of them alike.
 *
 * Revisions stay in commit order across processes: a group holds the counter's lock from its first statement to its
 * `COMMIT`, as a lone change did, so the groups of every process on the database commit one after the other.
 *
 * A change whose deadline passes while it waits for its group is answered `StoreUnavailable` and leaves the queue:
 * nothing of it was sent. A caller interrupted while waiting leaves it too; one interrupted once its group runs is
 * committed or not with the group, unanswered.
 *
 * @internal
 */
import type { SqlError } from "@effect/sql/SqlError"
import { Cause, Clock, Data, Duration, Effect, Exit, Runtime } from "effect"
import * as Route from "../../Route.js"
import type { Precondition, Restored, StoreUnavailable } from "../../RouteRepository.js"
import * as When from "../route/when.js"
import type { InvalidRestore, RouteConflict } from "../store/errors.js"
import { routeConflict } from "../store/errors.js"
import * as Log from "./log.js"
import * as Restore from "./restore.js"
import * as Row from "./row.js"
import * as Store from "./store.js"
import * as Witness from "./witness.js"

/**
 * The most changes one group holds: more waiting start the group after. Bounds one transaction's statements and the
 * size of its creates' one statement.
 */
export const MAX_GROUP_CHANGES = 500

/** A create, which joins the other creates of its group in one statement. */
interface Creating {
  readonly route: Route.Route
  readonly change: Log.Change
}

/** One change of a group. */
interface Member<A, E> {
  /** Its statements, run in the group's transaction after the changes before it. */
  readonly run: Effect.Effect<A, E | SqlError>
  /** Whether its first statement takes the counter before it reads anything, so that a group may open with it. */
  readonly locksFirst: boolean
  /** Whether the database may refuse it with an error (the unique index, the method bound). */
  readonly refusable: boolean
  /**
   * What it answers once the database refused it with `error` and what it did is undone: `again` runs it once more;
   * `undefined` when `error` is no refusal (the group fails with it).
   */
  readonly refused: (
    error: SqlError,
    again: () => Effect.Effect<A, E | SqlError>
  ) => Effect.Effect<A, unknown> | undefined
  /** The log entries of what it answers, which witness the group's commit. */
  readonly entries: (value: A) => ReadonlyArray<Witness.Entry>
  readonly creating?: Creating
}

type AnyMember = Member<any, any>
type Answer = Exit.Exit<unknown, unknown>

/** The database refused a change with an error, which aborted the transaction: the group runs again, carefully. */
class Refused extends Data.TaggedError("Refused") {}

const isSqlError = (error: unknown): error is SqlError => (error as { _tag?: unknown })._tag === "SqlError"

interface Waiting {
  readonly member: AnyMember
  readonly since: number
  readonly runtime: Runtime.Runtime<never>
  readonly resume: (exit: Answer) => void
  timer: ReturnType<typeof setTimeout> | undefined
}

// The creates of a group in one statement (creates made alone take `Store.insert`). It locks the counter first of all
// (`Log.locked`), so it may open the group. A route of a method and shape stored, or given earlier in the group, is
// left out of the insert and takes `Store.insert`, which names the holder; the others take the revisions after the
// counter's in their order, and their log entries, in the same statement. A shape another writer committed while the
// statement waited for the lock is not in its snapshot: the unique index, which sees it, leaves that row out (`ON
// CONFLICT DO NOTHING`), its revision is skipped, and the counter takes the largest written. A row refused by the
// method bound fails the whole statement. Rows of methods not stored yet go first, so the statement waits for the
// bound's lock before it holds rows another writer could wait for (each waiting for the other would deadlock). Both
// checks on stored rows are scalar subqueries, an index probe per row: as `[NOT] EXISTS` the planner may hash the whole
// table instead, which took 3 ms of a 50-row statement's 10 at 13,000 routes and grows with the table
// (docs/performance.md).
const insertMany = (store: Store.Store, creating: ReadonlyArray<Creating>) => {
  const { columns, settings, sql } = store
  const table = sql(settings.qualified)
  const base = sql`(SELECT revision FROM locked)`
  const rows = creating.map(({ change, route }, ord) => ({ ...Row.encodeInsert(route, ord), actor: change.actor }))
  return Effect.map(
    sql<Row.RouteRow>`
      WITH ${Log.locked(store)},
      input AS (
        SELECT * FROM json_to_recordset(${JSON.stringify(rows)}::json) AS x(
          ord int, id uuid, method text, path text, path_shape text, middleware text[], handler text,
          created_at timestamptz, actor text, enabled boolean, split jsonb, middleware_config jsonb,
          description text, tags text[], when_key text
        )
      ),
      fresh AS (
        SELECT DISTINCT ON (method, path_shape, when_key) * FROM input
        WHERE (
          SELECT true FROM ${table} AS stored
          WHERE stored.method = input.method AND stored.path_shape = input.path_shape
            AND stored.when_key = input.when_key LIMIT 1
        ) IS NULL
        ORDER BY method, path_shape, when_key, ord
      ),
      numbered AS (SELECT *, ${base}::bigint + row_number() OVER (ORDER BY ord) AS revision FROM fresh),
      changed AS (
        INSERT INTO ${table} (id, method, path, path_shape, middleware, handler, created_at, revision, enabled, split,
          middleware_config, description, tags, when_key)
        SELECT id, method, path, path_shape, middleware, handler, created_at, revision, enabled, split,
          middleware_config, description, tags, when_key FROM numbered
        ORDER BY (SELECT true FROM ${table} AS stored WHERE stored.method = numbered.method LIMIT 1) IS NOT NULL, ord
        ON CONFLICT (method, path_shape, when_key) DO NOTHING
        RETURNING ${columns}
      ),
      logged AS (
        INSERT INTO ${sql(settings.history)} (revision, at, actor, action, route_id, before, after)
        SELECT changed.revision, changed.created_at, numbered.actor, 'create', changed.id, NULL,
          ${Log.routeJson(sql, "changed")}
        FROM changed JOIN numbered ON numbered.id = changed.id
      ),
      ${Log.advance(store, base, false, true)}
      SELECT ${columns} FROM changed`,
    (inserted) => new Map(inserted.map((row) => [row.id, Row.decode(row)]))
  )
}

const shapeKey = (method: string, pathShape: string, whenKey: string) => `${method}\n${pathShape}\n${whenKey}`

// The routes holding the shapes of creates the group's insert left out, in one statement: each of those creates is
// answered its conflict with the holder, as `Store.insert` names it, instead of a statement (and a round trip) of its
// own; a create of many racing for few shapes is mostly such. After the insert, under the counter's lock, every
// shape's holder is committed and seen; a create whose holder is not found takes `Store.insert`.
const holdersOf = (store: Store.Store, creating: ReadonlyArray<Creating>) => {
  const { settings, sql } = store
  const keys = creating.map(({ route }) => ({
    method: route.method,
    path_shape: Route.shapeOf(route.path),
    when_key: When.keyOf(route.when)
  }))
  return Effect.map(
    sql<{ id: string; method: string; path_shape: string; when_key: string }>`
      SELECT stored.id, stored.method, stored.path_shape, stored.when_key FROM ${sql(settings.qualified)} AS stored
      JOIN json_to_recordset(${JSON.stringify(keys)}::json) AS x(method text, path_shape text, when_key text)
        ON stored.method = x.method AND stored.path_shape = x.path_shape AND stored.when_key = x.when_key`,
    (rows) => new Map(rows.map((row) => [shapeKey(row.method, row.path_shape, row.when_key), row.id]))
  )
}

// A left-out create's answer: its conflict with the holder of its shape, or its own insert when none holds it.
const leftOut = (holders: ReadonlyMap<string, string>, { route }: Creating): Answer | undefined => {
  const whenKey = When.keyOf(route.when)
  const holder = holders.get(shapeKey(route.method, Route.shapeOf(route.path), whenKey))
  return holder === undefined
    ? undefined
    : Exit.fail(routeConflict(route.method, route.path, holder, Row.whenOfKey(whenKey)))
}

/** The group of `members` as one transaction's work: an answer per member, in order. */
const work = (store: Store.Store, members: ReadonlyArray<AnyMember>, careful: boolean) => {
  const { sql } = store
  // One change: its answer, under a savepoint when the run is careful and the database may refuse it. The work fails
  // only when the whole group does.
  const step = (member: AnyMember): Effect.Effect<Answer, unknown> => {
    const guarded = careful && member.refusable
    return Effect.gen(function*() {
      if (guarded) yield* sql`SAVEPOINT route_change`
      const exit = yield* Effect.exit(member.run)
      const failure = Exit.isFailure(exit) ? Cause.failureOption(exit.cause) : undefined
      if (failure?._tag === "None") return yield* exit // a defect or an interruption: the group fails
      if (failure === undefined || !isSqlError(failure.value)) {
        if (guarded) yield* sql`RELEASE SAVEPOINT route_change`
        return exit
      }
      const answer = member.refused(failure.value, () => Effect.flatten(step(member)))
      if (answer === undefined) return yield* exit
      if (!guarded) return yield* new Refused()
      yield* sql`ROLLBACK TO SAVEPOINT route_change; RELEASE SAVEPOINT route_change`
      const refused = yield* Effect.exit(answer)
      // A failure of the database's while answering (reading the holder) fails the group.
      if (Exit.isFailure(refused)) {
        const reason = Cause.failureOption(refused.cause)
        if (reason._tag === "None" || isSqlError(reason.value)) return yield* refused
      }
      return refused
    })
  }
  return Effect.gen(function*() {
    const answers: Array<Answer> = new Array(members.length)
    const creates = careful ? [] : members.flatMap((member, i) => member.creating === undefined ? [] : [i])
    const batched = creates.length > 1 ? new Set(creates) : new Set<number>()
    const others = members.flatMap((_, i) => batched.has(i) ? [] : [i])
    if (batched.size > 0) {
      const inserted = yield* Effect.catchIf(
        insertMany(store, creates.map((i) => members[i]!.creating!)),
        (error) => store.isMethodLimit(error),
        () => new Refused()
      )
      const left = creates.filter((i) => !inserted.has(members[i]!.creating!.route.id))
      const holders = left.length > 0 ? yield* holdersOf(store, left.map((i) => members[i]!.creating!)) : new Map()
      for (const i of creates) {
        const created = inserted.get(members[i]!.creating!.route.id)
        answers[i] = created !== undefined
          ? Exit.succeed(created)
          : leftOut(holders, members[i]!.creating!) ?? (yield* step(members[i]!))
      }
    } else if (careful || !members[others[0]!]!.locksFirst) {
      yield* Log.lock(store)
    }
    for (const i of others) answers[i] = yield* step(members[i]!)
    return answers
  })
}

/** The changes of a group in one transaction under the deadline from `since`, run again carefully when refused. */
const commit = (store: Store.Store, members: ReadonlyArray<AnyMember>, since: number) => {
  const witness = (answers: ReadonlyArray<Answer>) =>
    Witness.logged(
      store,
      answers.flatMap((answer, i) => Exit.isSuccess(answer) ? members[i]!.entries(answer.value) : [])
    )
  const attempt = (careful: boolean) =>
    store.deadline.write(witness, since)(
      work(store, members, careful) as Effect.Effect<Array<Answer>, SqlError | Refused>
    )
  return Effect.catchTag(attempt(false), "Refused", () => attempt(true))
}

/** The store's group commit: each function makes one change as a member of a group. */
export const make = (store: Store.Store) => {
  const millis = Duration.toMillis(store.settings.queryTimeout)
  const queue: Array<Waiting> = []
  let running = false
  let scheduled = false
  // How many changes the next group takes: halved when a group fails (its deadline passed, its connection was lost),
  // doubled back after each one that commits. A group too large to commit within the deadline on a slow machine would
  // otherwise fail whole every time its members are sent again.
  let limit = MAX_GROUP_CHANGES

  const leave = (waiting: Waiting) => {
    clearTimeout(waiting.timer)
    const at = queue.indexOf(waiting)
    if (at === -1) return false
    queue.splice(at, 1)
    return true
  }

  const next = () => {
    if (running || queue.length === 0) return
    running = true
    const group = queue.splice(0, limit)
    for (const waiting of group) clearTimeout(waiting.timer)
    const since = group.reduce((oldest, waiting) => Math.min(oldest, waiting.since), Infinity)
    const members = group.map((waiting) => waiting.member)
    Runtime.runFork(group[0]!.runtime)(commit(store, members, since)).addObserver((exit) => {
      running = false
      limit = Exit.isSuccess(exit)
        ? Math.min(MAX_GROUP_CHANGES, limit * 2)
        : Math.max(1, Math.floor(group.length / 2))
      if (Exit.isSuccess(exit)) group.forEach((waiting, i) => waiting.resume(exit.value[i]!))
      else for (const waiting of group) waiting.resume(Exit.failCause(exit.cause))
      next()
    })
  }

  const join = <A, E>(member: Member<A, E>): Effect.Effect<A, E | SqlError | StoreUnavailable> =>
    Effect.flatMap(
      Effect.zip(Effect.runtime<never>(), Clock.currentTimeMillis),
      ([runtime, since]) =>
        Effect.async<A, E | SqlError | StoreUnavailable>((resume) => {
          const waiting: Waiting = {
            member,
            since,
            runtime,
            resume: (exit) => resume(exit as Exit.Exit<A, E>),
            timer: undefined
          }
          // Still waiting at its deadline: nothing of it was sent. A Node timer, not alarms.ts: a member's deadline on
          // its caller's Clock left a group's members waiting when that clock was a test's (docs/performance.md).
          waiting.timer = setTimeout(() => {
            if (leave(waiting)) resume(Exit.fail(store.deadline.timedOut()))
          }, millis)
          queue.push(waiting)
          if (!running && !scheduled) {
            scheduled = true
            setImmediate(() => {
              scheduled = false
              next()
            })
          }
          return Effect.sync(() => void leave(waiting))
        })
    )

  const entry = (at: Date) => (route: Route.StoredRoute) => [{ revision: route.revision, routeId: route.id, at }]
  const inTransaction = <B, F>(effect: Effect.Effect<B, F | SqlError>) => effect

  return {
    create: (route: Route.Route, change: Log.Change) =>
      join<Route.StoredRoute, RouteConflict | Store.CreateError>({
        run: Store.insert(store, route, change),
        locksFirst: true,
        refusable: true,
        refused: (error) => store.isMethodLimit(error) ? Store.tooManyMethods(route.method) : undefined,
        entries: entry(change.at),
        creating: { route, change }
      }),
    update: (one: Store.Updating) =>
      join<Route.StoredRoute, Store.UpdateError | Store.CreateError>({
        run: Store.updateStep(store, one),
        locksFirst: false,
        refusable: one.patch.method !== undefined || one.patch.path !== undefined || one.patch.when !== undefined,
        refused: (error, again) => Store.refusedUpdate(store, one, error, inTransaction, again),
        entries: entry(one.change.at)
      }),
    remove: (id: Route.RouteId, precondition: Precondition | undefined, change: Log.Change) =>
      join<number, Store.UpdateError>({
        run: Store.removeStep(store, id, precondition, change),
        locksFirst: true,
        refusable: false,
        refused: () => undefined,
        entries: Store.removed(id, change)
      }),
    restore: (restoring: Restore.Restoring) =>
      join<Restored, Store.UpdateError | InvalidRestore | Store.CreateError>({
        run: Restore.restoreStep(store, restoring),
        locksFirst: false,
        refusable: true,
        refused: (error) => Restore.tooManyMethods(store, restoring, error),
        entries: Restore.restored(restoring)
      })
  }
}
