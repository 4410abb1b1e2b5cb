/**
 * Carrying out a plan, change by change, with a progress line for each on stderr. Updates and deletes change a
 * route only in the version the plan was made from: a route changed meanwhile is reported, never overwritten.
 *
 * @internal
 */
import { Console, Effect, Either } from "effect"
import * as Route from "../../Route.js"
import type * as Registry from "./apiClient.js"
import { RequestFailed, SyncFailed } from "./errors.js"
import * as Plan from "./plan.js"

// Every field, those of docs/router.md included: the route's JSON is the same exactly when it is.
const same = (a: Route.Route, b: Route.Route) => Route.toJson(a) === Route.toJson(b)

// The route's current ETag, if it is still as the plan saw it.
const versionOf = (registry: Registry.Registry, planned: Route.Route) =>
  registry.get(planned.id).pipe(
    Effect.filterOrFail(({ route }) => same(route, planned), () =>
      new RequestFailed({
        message: "changed by someone else since the plan was made: nothing done (run diff again)",
        code: "precondition_failed"
      })),
    Effect.map(({ etag }) => etag)
  )

const run = (
  registry: Registry.Registry,
  change: Plan.Change,
  dryRun: boolean
): Effect.Effect<number | undefined, RequestFailed> => {
  switch (change._tag) {
    case "Delete":
      return versionOf(registry, change.current).pipe(
        Effect.flatMap((etag) => registry.remove(change.current.id, etag, dryRun))
      )
    case "Update":
      return versionOf(registry, change.current).pipe(
        Effect.flatMap((etag) => registry.update(change.current.id, etag, change.patch, dryRun))
      )
    case "Create":
      return registry.create(change.item.route, dryRun)
  }
}

// Where in the file a change comes from; a delete's route is, by definition, not in it.
const origin = (file: string, change: Plan.Change) =>
  change._tag === "Delete"
    ? ""
    : `${file}:${change.item.line}:${change.item.column}: routes[${change.item.index}]: `

const notApplied = (failed: number, total: number, dryRun: boolean) =>
  new SyncFailed(dryRun ? { failed, total, dryRun } : { failed, total })

/**
 * Applies the plan's changes in order. A change that fails is reported with its place in the file and the others
 * go on; a failure to reach the registry at all stops the run. Fails with `SyncFailed` unless every change applied;
 * else gives the revision of the last change (its `Registry-Revision`), `undefined` on a dry run.
 *
 * With `dryRun`, each change is sent as the server's dry run: the server answers it as it would the change, and
 * changes nothing, so the report shows its own refusals (conflicts, invalid routes, missing scopes, preconditions).
 */
export const apply = (
  registry: Registry.Registry,
  plan: Plan.Plan,
  file: string,
  dryRun = false
): Effect.Effect<number | undefined, SyncFailed> =>
  Effect.gen(function*() {
    const total = plan.changes.length
    let failed = 0
    let revision: number | undefined
    for (const [i, change] of plan.changes.entries()) {
      const step = `[${i + 1}/${total}]`
      const result = yield* Effect.either(run(registry, change, dryRun))
      if (Either.isRight(result)) {
        revision = result.right ?? revision
        yield* Console.error(`${step} ${Plan.title(change)}: ${dryRun ? "would be done" : "done"}`)
        continue
      }
      failed++
      const verdict = dryRun ? "would fail" : "failed"
      yield* Console.error(`${step} ${origin(file, change)}${Plan.title(change)}: ${verdict}: ${result.left.message}`)
      if (result.left.code === undefined) {
        yield* Console.error(`stopped: the ${total - i - 1} changes left are not ${dryRun ? "tried" : "applied"}`)
        return yield* notApplied(total - i, total, dryRun)
      }
    }
    if (failed > 0) return yield* notApplied(failed, total, dryRun)
    return revision
  })
