/**
 * Concurrent updates of one process in one transaction, as concurrent creates share one statement: the updates made
 * in one turn of the event loop outside a host's transaction lock the counter once, run one after the other in the
 * order they were made, and commit once. Each takes the revision after the one before it, writes its log entry in its
 * own statement, and is answered only once the transaction has committed.
 *
 * One change's refusal leaves the others: not found, a failed precondition and a path outside the caller's prefixes
 * are decided by the change's statement, which then writes nothing (no row, no entry, no revision); a conflict on the
 * unique index and the method bound are errors of the database, which would end the transaction, so a change that can
 * meet them (one that sets the method or the path) runs under a `SAVEPOINT` and is rolled back to it alone. Any other
 * failure (the deadline, a lost connection) fails the whole batch, of which nothing is committed.
 *
 * @internal
 */
import type { SqlError } from "@effect/sql/SqlError"
import { Effect, Exit } from "effect"
import type * as Route from "../../Route.js"
import type { Precondition, WriteError } from "../../RouteRepository.js"
import type { RouteConflict } from "../store/errors.js"
import * as Batch from "./batch.js"
import * as Log from "./log.js"
import * as Store from "./store.js"
import * as Witness from "./witness.js"

/** An update waiting for its batch. */
export interface Updating {
  readonly id: Route.RouteId
  readonly patch: Route.RoutePatch
  readonly precondition: Precondition | undefined
  readonly change: Log.Change
}

/** What one change of a batch answers, and the counter's revision after it. */
type Step = readonly [Exit.Exit<Route.StoredRoute, WriteError | SqlError>, number]

/**
 * The batched update: a batch of one takes `Store.update`'s path (its own transaction); dry runs and updates inside a
 * host's transaction never come here.
 */
export const make = (store: Store.Store) => {
  const { deadline, isMethodLimit, isShapeConflict, sql } = store
  const alone = ({ change, id, patch, precondition }: Updating) => Store.update(store, id, patch, precondition, change)

  // One change at the revision after `base`: its answer, and the counter after it (`base` when it wrote nothing).
  const step = (base: number, one: Updating): Effect.Effect<Step, SqlError> => {
    const { change, id, patch, precondition } = one
    const guarded = patch.method !== undefined || patch.path !== undefined
    const done = (exit: Exit.Exit<Route.StoredRoute, WriteError | SqlError>): Effect.Effect<Step, SqlError> => {
      const after: Step = [exit, Exit.isSuccess(exit) ? Math.max(base, exit.value.revision) : base]
      return guarded ? Effect.as(sql`RELEASE SAVEPOINT route_change`, after) : Effect.succeed(after)
    }
    const refused = (error: WriteError) => done(Exit.fail(error))
    const undone = sql`ROLLBACK TO SAVEPOINT route_change`
    return Effect.zipRight(
      guarded ? sql`SAVEPOINT route_change` : Effect.void,
      Store.updateStep(store, id, patch, precondition, base, change).pipe(
        Effect.matchEffect({
          onSuccess: (route) => done(Exit.succeed(route)),
          onFailure: (error): Effect.Effect<Step, SqlError> => {
            if (error._tag === "RouteNotFound" || error._tag === "OutsidePrefixes") return refused(error)
            if (error._tag === "PreconditionFailed") return refused(error)
            if (guarded && isMethodLimit(error)) {
              return Effect.zipRight(undone, Effect.catchAll(Store.tooManyMethods(patch.method!), refused))
            }
            if (!guarded || !isShapeConflict(error)) return Effect.fail(error)
            // The holder is read in the transaction, which holds the counter: no writer of the store moves it meanwhile.
            return Effect.zipRight(
              undone,
              Effect.flatMap(Store.holderOf(store, id, patch), (holders) => {
                const again = () => Effect.zipRight(sql`RELEASE SAVEPOINT route_change`, step(base, one))
                const conflict: Effect.Effect<Step, SqlError | RouteConflict> = Store.conflictOr(holders, again)
                return Effect.catchTag(conflict, "RouteConflict", refused)
              })
            )
          }
        })
      )
    )
  }

  return Batch.make((updating: ReadonlyArray<Updating>) =>
    updating.length === 1 ?
      Effect.map(Effect.exit(alone(updating[0]!)), (exit) => [exit]) :
      deadline.write(Witness.routes(store, (i) => updating[i]!.change.at))(Effect.gen(function*() {
        let base = yield* Log.lock(store)
        const answers: Array<Step[0]> = []
        for (const one of updating) {
          const [answer, after] = yield* step(base, one)
          answers.push(answer)
          base = after
        }
        return answers
      }))
  )
}
