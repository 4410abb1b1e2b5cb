/**
 * Restoring a route of the Postgres store to what it was right after a change of its log.
 *
 * @internal
 */
import type { SqlError } from "@effect/sql/SqlError"
import { Effect } from "effect"
import * as Route from "../../Route.js"
import type { Precondition, Restored, WriteError } from "../../RouteRepository.js"
import {
  InvalidRestore,
  OutsidePrefixes,
  PreconditionFailed,
  RouteConflict,
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
const holder = ({ settings, sql }: Store.Store, id: string, method: string, path: Route.RoutePath) =>
  Effect.map(
    sql<{ id: string }>`SELECT id FROM ${sql(settings.qualified)}
      WHERE method = ${method} AND path_shape = ${Route.shapeOf(path)} AND id <> ${id}::uuid`,
    (rows) => rows[0]?.id
  )

/**
 * Makes the route what it was right after the change at `revision`, in one transaction holding the counter: the
 * route updated, or, when it was deleted, created again with a new id and `createdAt`.
 */
export const restore = (
  store: Store.Store,
  id: Route.RouteId,
  revision: number,
  precondition: Precondition | undefined,
  given: Log.Change
): Effect.Effect<Restored, WriteError | InvalidRestore | SqlError> => {
  const change: Log.Change = { ...given, restoredFrom: revision }
  let method = ""
  const work = Effect.gen(function*() {
    const base = yield* Log.lock(store)
    const target = Number.isSafeInteger(revision) ? yield* Log.entryAt(store, revision) : undefined
    if (target === undefined || target.routeId !== id) {
      const known = (yield* Log.holds(store, id)) || (yield* Store.readRoute(store, id)) !== undefined
      return yield* known ? new InvalidRestore({ id, revision, reason: "not_in_log" }) : new RouteNotFound({ id })
    }
    if (target.after === null) return yield* new InvalidRestore({ id, revision, reason: "deleted" })
    const fields = restoredFields(target.after)
    method = fields.method
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
    const held = yield* holder(store, id, fields.method, fields.path)
    if (held !== undefined) {
      return yield* new RouteConflict({ method: fields.method, path: fields.path, conflictingRouteId: held })
    }
    if (current !== undefined) {
      const rows = yield* Store.updateStatement(store, id, fields, undefined, base, change)
      return { route: Row.decode(rows[0]!), created: false }
    }
    const route = makeRoute(store.ids, fields.input, change.at.getTime())
    return { route: yield* Store.create(store, route, change), created: true }
  })
  return Log.write(store, work, change.dryRun, ({ route }) => Witness.route(store, change.at)(route)).pipe(
    Effect.catchIf(store.isMethodLimit, () => Effect.fail(new TooManyMethods({ method, limit: MAX_METHODS })))
  )
}
