/**
 * Restoring a route of the Postgres store to what it was right after a change of its log.
 *
 * @internal
 */
import type { SqlError } from "@effect/sql/SqlError"
import { Effect } from "effect"
import * as Route from "../../Route.js"
import type { Precondition, Restored, WriteError } from "../../RouteRepository.js"
import * as When from "../route/when.js"
import {
  InvalidRestore,
  OutsidePrefixes,
  PreconditionFailed,
  type RouteConflict,
  routeConflict,
  RouteNotFound,
  TooManyMethods
} from "../store/errors.js"
import { barredBy, makeRoute, MAX_METHODS, patchChanges, restoredFields, withinPrefixes } from "../store/rules.js"
import * as Log from "./log.js"
import * as Row from "./row.js"
import * as Store from "./store.js"
import * as Witness from "./witness.js"

// The route other than `id` that holds the method and shape, read while the counter is held: no writer of the store
// can store or free one until the restore commits, so the unique index never has to refuse it.
const holder = (
  { settings, sql }: Store.Store,
  id: string,
  { method, path, when }: { readonly method: string; readonly path: Route.RoutePath; readonly when: When.When | null }
) =>
  Effect.map(
    sql<{ id: string }>`SELECT id FROM ${sql(settings.qualified)}
      WHERE method = ${method} AND path_shape = ${Route.shapeOf(path)} AND when_key = ${When.keyOf(when ?? undefined)}
        AND id <> ${id}::uuid`,
    (rows) => rows[0]?.id
  )

/** A restore: the route, the change of its log whose outcome it takes again, its precondition, and who makes it. */
export interface Restoring {
  readonly id: Route.RouteId
  readonly revision: number
  readonly precondition: Precondition | undefined
  readonly change: Log.Change
}

/** The change as the restore's log entry records it. */
const changeOf = ({ change, revision }: Restoring): Log.Change => ({ ...change, restoredFrom: revision })

/**
 * Makes the route what it was right after the change at `revision`, in the caller's transaction, which it makes hold
 * the counter: the route updated, or, when it was deleted, created again with a new id and `createdAt`. The method
 * bound's refusal is the database's error, which ends the transaction (or savepoint): `tooManyMethods` answers it.
 */
export const restoreStep = (
  store: Store.Store,
  restoring: Restoring
): Effect.Effect<Restored, Store.UpdateError | InvalidRestore | RouteConflict | SqlError> => {
  const { id, precondition, revision } = restoring
  const change = changeOf(restoring)
  return Effect.gen(function*() {
    yield* Log.lock(store)
    const target = Number.isSafeInteger(revision) ? yield* Log.entryAt(store, revision) : undefined
    if (target === undefined || target.routeId !== id) {
      const known = (yield* Log.holds(store, id)) || (yield* Store.readRoute(store, id)) !== undefined
      return yield* known ? new InvalidRestore({ id, revision, reason: "not_in_log" }) : new RouteNotFound({ id })
    }
    if (target.after === null) return yield* new InvalidRestore({ id, revision, reason: "deleted" })
    const fields = restoredFields(target.after)
    const row = yield* Store.readRoute(store, id)
    const current = row === undefined ? undefined : Row.decode(row)
    const barred = current === undefined ? undefined : barredBy(precondition, current)
    if (barred !== undefined) return yield* barred
    // A prefix owner restores only what lies under its prefixes, then and now.
    if (!withinPrefixes(precondition, fields.path)) return yield* new OutsidePrefixes({ id, path: fields.path })
    // A route deleted has no current revision for If-Match to name.
    if (current === undefined && precondition?.ifMatch !== undefined) {
      return yield* new PreconditionFailed({ id, revision: 0 })
    }
    if (current !== undefined && !patchChanges(current, fields)) return { route: current, created: false }
    const held = yield* holder(store, id, fields)
    if (held !== undefined) {
      return yield* routeConflict(fields.method, fields.path, held, fields.when)
    }
    if (current !== undefined) {
      const rows = yield* Store.updateStatement(store, { id, patch: fields, precondition: undefined, change })
      return { route: Row.decode(rows[0]!), created: false }
    }
    const route = makeRoute(store.ids, fields.input, change.at.getTime())
    return { route: yield* Store.insert(store, route, change), created: true }
  })
}

/** The witness entry of a restore that answered `route`. */
export const restored = (restoring: Restoring) => ({ route }: Restored) => [
  { revision: route.revision, routeId: route.id, at: restoring.change.at }
]

/**
 * What a restore the method bound refused answers once its transaction (or savepoint) is undone: the method is the one
 * the log's entry holds. `undefined` for any other error.
 */
export const tooManyMethods = (store: Store.Store, { revision }: Restoring, error: unknown) =>
  store.isMethodLimit(error)
    ? Effect.flatMap(
      Log.entryAt(store, revision),
      (entry) => Effect.fail(new TooManyMethods({ method: entry?.after?.method ?? "", limit: MAX_METHODS }))
    )
    : undefined

/** `restoreStep` in a transaction of its own (or a savepoint of the host's). */
export const restore = (
  store: Store.Store,
  restoring: Restoring
): Effect.Effect<Restored, WriteError | InvalidRestore | SqlError> =>
  Effect.catchIf(
    Log.write(
      store,
      restoreStep(store, restoring),
      restoring.change.dryRun,
      (answer) => Witness.logged(store, restored(restoring)(answer))
    ),
    store.isMethodLimit,
    (error) => store.deadline.read(tooManyMethods(store, restoring, error)!)
  )
