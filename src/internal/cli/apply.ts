/**
 * Carrying out a plan as one change set (docs/batches.md): all of it takes effect or none does, and a refusal names the
 * change refused. Updates and deletes change a route only in the version the plan was made from: a route changed
 * meanwhile is reported, never overwritten. A plan beyond one batch's limits is applied only when told to split it.
 *
 * @internal
 */
import { Console, Effect } from "effect"
import * as Route from "../../Route.js"
import { MAX_OPERATIONS } from "../http/batch.js"
import { DEFAULT_MAX_BATCH_BODY_BYTES } from "../limits.js"
import type * as Registry from "./apiClient.js"
import { PlanTooLarge, RequestFailed, SyncFailed } from "./errors.js"
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

// The change as a batch's operation; an update or delete always carries the ETag the plan saw (which also makes a
// batch safe to send again: see the client).
const operationOf = (
  registry: Registry.Registry,
  change: Plan.Change
): Effect.Effect<Registry.BatchOperation, RequestFailed> => {
  switch (change._tag) {
    case "Delete":
      return Effect.map(versionOf(registry, change.current), (etag) => ({
        op: "delete" as const,
        id: change.current.id,
        ...(etag === undefined ? {} : { ifMatch: etag })
      }))
    case "Update":
      return Effect.map(versionOf(registry, change.current), (etag) => ({
        op: "update" as const,
        id: change.current.id,
        patch: change.patch,
        ...(etag === undefined ? {} : { ifMatch: etag })
      }))
    case "Create":
      return Effect.succeed({ op: "create" as const, route: change.item.route })
  }
}

// Where in the file a change comes from; a delete's route is, by definition, not in it.
const origin = (file: string, change: Plan.Change) =>
  change._tag === "Delete"
    ? ""
    : `${file}:${change.item.line}:${change.item.column}: routes[${change.item.index}]: `

/** The bytes of the JSON body `{"operations":[…]}` around its operations. */
const ENVELOPE_BYTES = Buffer.byteLength("{\"operations\":[]}")

const bytesOf = (value: unknown) => Buffer.byteLength(JSON.stringify(value))

// Consecutive runs of the plan's changes, each within one batch's limits. Deletes come first in the plan, so the
// methods and shapes they free are free before a later batch takes them.
const chunks = (changes: ReadonlyArray<Plan.Change>, sizes: ReadonlyArray<number>, maxBytes: number) => {
  const runs: Array<Array<number>> = []
  let run: Array<number> = []
  let bytes = ENVELOPE_BYTES
  for (const [i, size] of sizes.entries()) {
    // A comma before every operation but the first.
    if (run.length > 0 && (run.length === MAX_OPERATIONS || bytes + size + 1 > maxBytes)) {
      runs.push(run)
      run = []
      bytes = ENVELOPE_BYTES
    }
    bytes += run.length === 0 ? size : size + 1
    run.push(i)
  }
  if (run.length > 0) runs.push(run)
  return runs.map((indexes) => indexes.map((i) => ({ index: i, change: changes[i]! })))
}

// A change's size in a batch, before its ETag is read: a create's whole, an update's or delete's with room for one.
const sizeOf = (change: Plan.Change) =>
  bytesOf(
    change._tag === "Create"
      ? { op: "create", route: change.item.route }
      : change._tag === "Update"
      ? { op: "update", id: change.current.id, patch: change.patch, ifMatch: `"${Number.MAX_SAFE_INTEGER}"` }
      : { op: "delete", id: change.current.id, ifMatch: `"${Number.MAX_SAFE_INTEGER}"` }
  )

// The `operations[<i>]` an issue of the batch's answer names, if any.
const placeOf = (path: string): number | undefined => {
  const found = /^operations\[(\d+)\]/.exec(path)
  return found === null ? undefined : Number(found[1])
}

// "409 route_conflict" of a problem's "409 route_conflict: <detail>".
const statusOf = (headline: string) => headline.slice(0, headline.indexOf(":"))

/** What `apply` may do beyond one batch. */
export interface Options {
  readonly dryRun?: boolean | undefined
  /** Apply a plan beyond one batch's limits as several, in plan order, each all or nothing. */
  readonly split?: boolean | undefined
  /** The registry's batch body limit, `maxBatchBodyBytes` (4 MiB by default). */
  readonly maxBatchBytes?: number | undefined
}

/**
 * Applies the plan's changes as one batch (or, with `split`, as consecutive batches within its limits). A refused
 * batch changes nothing: each change it names is reported with its place in the file, and the run stops. Fails with
 * `SyncFailed` unless every change applied, `PlanTooLarge` when the plan exceeds one batch unsplit; else gives the
 * revision of the last change, `undefined` on a dry run.
 *
 * With `dryRun`, each batch is sent as the server's dry run: it answers as the batch would, and changes nothing, so the
 * report shows its own refusals (conflicts, invalid routes, missing scopes, preconditions). A split plan's dry run
 * checks each batch against the routes as they are, without the batches before it.
 */
export const apply = (
  registry: Registry.Registry,
  plan: Plan.Plan,
  file: string,
  options: Options = {}
): Effect.Effect<number | undefined, SyncFailed | PlanTooLarge> =>
  Effect.gen(function*() {
    const { dryRun = false, maxBatchBytes = DEFAULT_MAX_BATCH_BODY_BYTES } = options
    const total = plan.changes.length
    const runs = chunks(plan.changes, plan.changes.map(sizeOf), maxBatchBytes)
    if (runs.length > 1 && options.split !== true) {
      const bytes = ENVELOPE_BYTES + plan.changes.reduce((sum, change) => sum + sizeOf(change) + 1, -1)
      return yield* new PlanTooLarge({ changes: total, bytes, batches: runs.length })
    }
    const notApplied = (failed: number) => new SyncFailed(dryRun ? { failed, total, dryRun } : { failed, total })
    const verdict = dryRun ? "would fail" : "failed"
    let revision: number | undefined
    let done = 0
    for (const [k, run] of runs.entries()) {
      const label = runs.length === 1 ? "" : `batch ${k + 1}/${runs.length}: `
      const sent = yield* Effect.either(
        Effect.forEach(run, ({ change }, place) =>
          operationOf(registry, change).pipe(
            // A route changed since the plan is refused before the batch is sent, named as the batch would name it.
            Effect.mapError((error) =>
              new RequestFailed({ ...error, errors: [{ path: `operations[${place}]`, message: error.message }] })
            )
          )).pipe(
            Effect.flatMap((operations) => registry.batch(operations, dryRun))
          )
      )
      if (sent._tag === "Left") {
        const error = sent.left
        const named = (error.errors ?? []).flatMap((issue) => {
          const place = placeOf(issue.path)
          const entry = place === undefined ? undefined : run[place]
          return entry === undefined ? [] : [{ issue, ...entry }]
        })
        for (const { change, index, issue } of named) {
          const detail = error.headline === undefined ? issue.message : `${statusOf(error.headline)}: ${issue.message}`
          yield* Console.error(
            `[${index + 1}/${total}] ${origin(file, change)}${Plan.title(change)}: ${verdict}: ${detail}`
          )
        }
        if (named.length === 0) yield* Console.error(`${label}${verdict}: ${error.message}`)
        const left = total - done
        yield* Console.error(
          `${label}the batch ${dryRun ? "would be" : "was"} refused whole: ` +
            `the ${left} changes left are not ${dryRun ? "tried" : "applied"}` +
            (done === 0 ? "" : ` (the ${done} changes of the batches before it are)`)
        )
        return yield* notApplied(left)
      }
      revision = sent.right ?? revision
      for (const { change, index } of run) {
        yield* Console.error(
          `[${index + 1}/${total}] ${label}${Plan.title(change)}: ${dryRun ? "would be done" : "done"}`
        )
      }
      done += run.length
    }
    return revision
  })
