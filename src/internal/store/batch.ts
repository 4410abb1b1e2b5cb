/**
 * Change sets (`RouteRepository.applyBatch`, docs/batches.md): what a batch of operations is, and how every store
 * decides it. A store reads what the batch touches (the routes it names, the routes holding the method and shape its
 * routes end with, the methods stored) and `plan` decides the whole batch at once: each operation is checked as it
 * would be alone (not found, the path prefixes before and after, `ifMatch`), conflicts and the method bound are judged
 * on the state after the whole batch (so two routes may swap paths), and the first refused operation refuses the
 * batch. A batch that passes gives each real change the next revision, in the order of its operations.
 *
 * @internal
 */
import type { Context } from "effect"
import { Either } from "effect"
import * as Route from "../../Route.js"
import type { Idempotency, RouteIdGenerator, WriteOptions } from "../../RouteRepository.js"
import {
  BatchRefused,
  OutsidePrefixes,
  PreconditionFailed,
  routeConflict,
  RouteNotFound,
  TooManyMethods
} from "./errors.js"
import * as Rules from "./rules.js"

/**
 * One operation of a batch: a create, an update (the fields of `patch` replaced) or a delete; `ifMatch`, the
 * revisions the caller accepts, as `Precondition.ifMatch`.
 *
 * @since 0.5.0
 */
export type BatchOperation =
  | { readonly op: "create"; readonly route: Route.CreateRoute }
  | {
    readonly op: "update"
    readonly id: string
    readonly patch: Route.RoutePatch
    readonly ifMatch?: ReadonlyArray<number> | undefined
  }
  | { readonly op: "delete"; readonly id: string; readonly ifMatch?: ReadonlyArray<number> | undefined }

/**
 * How a batch is made: `WriteOptions`, and the path prefixes every route it touches must lie under, before and after
 * (a writer owning only some prefixes); absent, any path will do.
 *
 * @since 0.5.0
 */
export interface BatchOptions extends WriteOptions {
  readonly pathPrefixes?: ReadonlyArray<string> | undefined
  /** What the batch is for, at most 1,024 characters: each of its log entries carries it. */
  readonly description?: string | undefined
  /**
   * Applies the batch at most once per key and principal, as `createIdempotent` creates: the same operations and
   * description with the key give the first answer again (`replayed`), others fail with `IdempotencyKeyReused`. An
   * applied batch is remembered, and so is a refusal decided on the stored routes alone (`BatchKeys.keepsRefusal`), failed
   * again as `BatchRefused` with `replayed`; a dry run ignores the key.
   */
  readonly idempotency?: Idempotency | undefined
}

/**
 * What one operation did: `201` created `route`, `200` updated it (an update that changes nothing keeps its
 * revision), `204` deleted a route (`route` is `null`); `revision` is its change's.
 *
 * @since 0.5.0
 */
export interface BatchOutcome {
  readonly status: 201 | 200 | 204
  readonly route: Route.StoredRoute | null
  readonly revision: number
}

/**
 * What a batch did: its id (the log's entries carry it), its last revision, and one outcome per operation, in order.
 * A dry run answers what the batch would do.
 *
 * @since 0.5.0
 */
export interface BatchApplied {
  readonly batch: string
  readonly revision: number
  readonly results: ReadonlyArray<BatchOutcome>
  /** `true` when this is the first answer to the options' idempotency key given again: nothing was written. */
  readonly replayed?: boolean | undefined
}

/** The most operations one batch holds. */
export const MAX_BATCH_OPERATIONS = 5_000

/** The longest `description` a batch may carry. */
export const MAX_BATCH_DESCRIPTION_LENGTH = 1_024

/** What a store read of its state for a batch. */
export interface Known {
  /** The stored route with that id. */
  readonly route: (id: string) => Route.StoredRoute | undefined
  /** The id of the stored route holding a conflict key (`Rules.conflictKey`). */
  readonly holder: (key: string) => string | undefined
  /** How many stored routes have a method, and how many distinct methods are stored; absent, the store bounds them. */
  readonly methods?: { readonly count: (method: string) => number; readonly distinct: number } | undefined
}

/** One real change of a batch, at its revision. */
export interface Step {
  readonly index: number
  readonly action: "create" | "update" | "delete"
  readonly before: Route.StoredRoute | null
  readonly after: Route.StoredRoute | null
  readonly revision: number
}

/** A batch decided: its changes in order, and what each operation answers. */
export interface Plan extends BatchApplied {
  readonly steps: ReadonlyArray<Step>
}

type Reason = BatchRefused["reason"]

// Each operation's route after the batch, or its refusal as it would be alone (not found, prefixes, ifMatch).
interface Decided {
  readonly before: Route.StoredRoute | null
  readonly after: Route.StoredRoute | null
  /** Leaves the method and shape it held (a delete, or an update changing them), or takes one (a create). */
  readonly moving: boolean
  readonly refused: Reason | undefined
}

const decide = (
  ids: Context.Tag.Service<typeof RouteIdGenerator>,
  operation: BatchOperation,
  known: Known,
  prefixes: ReadonlyArray<string> | undefined,
  millis: number
): Decided => {
  const outside = (id: string, path: string) =>
    prefixes !== undefined && !Rules.underPrefixes(prefixes, path) ? new OutsidePrefixes({ id, path }, true) : undefined
  if (operation.op === "create") {
    const after = Rules.makeStoredRoute(ids, operation.route, millis, 0)
    return { before: null, after, moving: true, refused: outside(after.id, after.path) }
  }
  const before = known.route(operation.id)
  if (before === undefined) {
    return { before: null, after: null, moving: false, refused: new RouteNotFound({ id: operation.id }, true) }
  }
  const barred = outside(before.id, before.path) ??
    (Rules.meetsPrecondition({ ifMatch: operation.ifMatch }, before.revision)
      ? undefined
      : new PreconditionFailed({ id: before.id, revision: before.revision }, true))
  if (operation.op === "delete") return { before, after: null, moving: true, refused: barred }
  if (!Rules.patchChanges(before, operation.patch)) return { before, after: before, moving: false, refused: barred }
  const after = Rules.patchedRoute(before, operation.patch, 0)
  return {
    before,
    after,
    moving: Rules.conflictKey(after.method, after.path, after.when) !==
      Rules.conflictKey(before.method, before.path, before.when),
    refused: barred ?? outside(after.id, after.path)
  }
}

// The conflicts on the state after the batch: a route that takes a method and shape held after the batch (by a stored
// route the batch leaves in place, or by a route of an earlier operation) is refused, naming the holder.
const conflicts = (decided: ReadonlyArray<Decided>, known: Known): Map<number, Reason> => {
  const leaving = new Set<string>(decided.flatMap((d) => d.moving && d.before !== null ? [d.before.id] : []))
  const claimed = new Map<string, string>()
  for (const d of decided) {
    if (!d.moving && d.after !== null) {
      claimed.set(Rules.conflictKey(d.after.method, d.after.path, d.after.when), d.after.id)
    }
  }
  const refused = new Map<number, Reason>()
  decided.forEach((d, index) => {
    if (!d.moving || d.after === null) return
    const key = Rules.conflictKey(d.after.method, d.after.path, d.after.when)
    const stored = known.holder(key)
    const holder = claimed.get(key) ?? (stored !== undefined && !leaving.has(stored) ? stored : undefined)
    if (holder !== undefined && holder !== d.after.id) {
      refused.set(
        index,
        routeConflict(d.after.method, d.after.path, holder, d.after.when)
      )
    } else {
      claimed.set(key, d.after.id)
    }
  })
  return refused
}

// The first operation adding a method once the batch leaves more than MAX_METHODS distinct ones stored.
const methodBound = (decided: ReadonlyArray<Decided>, known: Known): [number, Reason] | undefined => {
  const methods = known.methods
  if (methods === undefined) return undefined
  const delta = new Map<string, number>()
  const add = (method: string, by: number) => delta.set(method, (delta.get(method) ?? 0) + by)
  for (const d of decided) {
    if (!d.moving) continue
    if (d.before !== null) add(d.before.method, -1)
    if (d.after !== null) add(d.after.method, 1)
  }
  let distinct = methods.distinct
  for (const [method, by] of delta) {
    const count = methods.count(method)
    if (count === 0 && by > 0) distinct++
    else if (count > 0 && count + by === 0) distinct--
  }
  if (distinct <= Rules.MAX_METHODS) return undefined
  const index = decided.findIndex((d) => d.after !== null && d.moving && methods.count(d.after.method) === 0)
  return [index, new TooManyMethods({ method: decided[index]!.after!.method, limit: Rules.MAX_METHODS }, true)]
}

const OUTCOME_STATUS = { create: 201, update: 200, delete: 204 } as const

/**
 * Decides a batch on `known`, its changes numbered from the revision after `base`, its routes created at `millis`:
 * its plan, or the refusal of its first refused operation.
 */
export const plan = (
  ids: Context.Tag.Service<typeof RouteIdGenerator>,
  operations: ReadonlyArray<BatchOperation>,
  known: Known,
  options: BatchOptions,
  millis: number,
  base: number
): Either.Either<Plan, BatchRefused> => {
  const decided = operations.map((operation) => decide(ids, operation, known, options.pathPrefixes, millis))
  const refusals = conflicts(decided, known)
  decided.forEach((d, index) => {
    if (d.refused !== undefined) refusals.set(index, d.refused)
  })
  const bound = refusals.size === 0 ? methodBound(decided, known) : undefined
  if (bound !== undefined) refusals.set(bound[0], bound[1])
  if (refusals.size > 0) {
    const found = [...refusals].sort(([a], [b]) => a - b).map(([index, reason]) => ({ index, reason }))
    return Either.left(new BatchRefused({ ...found[0]!, refusals: found }, true))
  }
  const steps: Array<Step> = []
  const results = decided.map((d, index): BatchOutcome => {
    const action = operations[index]!.op
    const status = OUTCOME_STATUS[action]
    if (d.after !== null && d.before !== null && d.after === d.before) {
      return { status, route: d.before, revision: d.before.revision } // an update that changes nothing
    }
    const revision = base + steps.length + 1
    const after = d.after === null ? null : Rules.patchedRoute(d.after, {}, revision)
    steps.push({ index, action, before: d.before, after, revision })
    return { status, route: after, revision }
  })
  return Either.right({
    batch: Route.makeRouteId(millis),
    revision: steps.length === 0 ? base : base + steps.length,
    results,
    steps
  })
}
