/**
 * The witnesses of the Postgres store's writes (`Deadline.Witness`): what settles a write whose `COMMIT` went
 * unanswered, read on whichever server the store reaches then. Every change the store makes writes its log entry in
 * its transaction, at its revision, for its route, at its time; no other transaction writes that entry (a revision is
 * never given twice on one server, and a change made after a failover at a revision the lost transaction had taken is
 * of another time or route), so the entries a transaction wrote are there exactly when it committed. A transaction
 * that writes many changes (a batch) is witnessed by any of its entries: it committed all of them or none.
 *
 * @internal
 */
import type { SqlError } from "@effect/sql/SqlError"
import { Effect, Exit } from "effect"
import type * as Route from "../../Route.js"
import type * as Deadline from "./deadline.js"
import type { Store } from "./store.js"

/** A change a transaction wrote, as its log entry records it. */
export interface Entry {
  readonly revision: number
  readonly routeId: string
  readonly at: Date
}

interface Found {
  readonly found: number
  readonly newest: string | number
  readonly oldest: string | number | null
}

/**
 * Whether the transaction that wrote `entries` committed, by the log: `true` when it holds one of them; `false` when it
 * holds none though it would still hold them had the transaction committed (the counter never reached the newest, or
 * the log keeps an entry as old as the oldest: it is pruned oldest first); `undefined` when the log has been pruned
 * past them (a `historyCapacity` smaller than the changes made since). No witness for no entries: the transaction
 * wrote no change. An entry of a change that changed nothing (an update to what the route already was answers the
 * route as it was) is not the transaction's: it only lowers the oldest revision looked at.
 */
export const logged = (
  { readMark, settings, sql }: Pick<Store, "readMark" | "settings" | "sql">,
  entries: ReadonlyArray<Entry>
): Effect.Effect<Deadline.Verdict, SqlError> | undefined => {
  if (entries.length === 0) return undefined
  const revisions = entries.map(({ revision }) => revision)
  const lowest = Math.min(...revisions)
  const highest = Math.max(...revisions)
  const rows = JSON.stringify(entries.map(({ at, revision, routeId }) => ({ revision, route_id: routeId, at })))
  const history = sql(settings.history)
  return Effect.map(
    sql<Found>`${readMark}
      SELECT (SELECT count(*)::int FROM ${history} AS entry
          JOIN json_to_recordset(${rows}::json) AS w(revision bigint, route_id uuid, at timestamptz)
          ON entry.revision = w.revision AND entry.route_id = w.route_id AND entry.at = w.at) AS found,
        (SELECT revision FROM ${sql(settings.counter)}) AS newest,
        (SELECT min(revision) FROM ${history}) AS oldest`,
    ([row]) => {
      if (row!.found > 0) return true
      const kept = row!.oldest !== null && Number(row!.oldest) <= lowest
      return Number(row!.newest) < highest || kept ? false : undefined
    }
  )
}

/** The witness of a write that changed one route at `at`, given the route it answers. */
export const route = (store: Pick<Store, "readMark" | "settings" | "sql">, at: Date) => (changed: Route.StoredRoute) =>
  logged(store, [{ revision: changed.revision, routeId: changed.id, at }])

/**
 * The witness of a transaction of many changes, given what each answers (`at` the time of the i-th): the changes that
 * succeeded, each with its route.
 */
export const routes =
  (store: Pick<Store, "readMark" | "settings" | "sql">, at: (i: number) => Date) =>
  (answers: ReadonlyArray<Exit.Exit<Route.StoredRoute, unknown>>) =>
    logged(
      store,
      answers.flatMap((answer, i) =>
        Exit.isSuccess(answer) ? [{ revision: answer.value.revision, routeId: answer.value.id, at: at(i) }] : []
      )
    )
