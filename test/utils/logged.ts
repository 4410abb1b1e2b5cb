/**
 * What both stores of the library offer beside the store, as the contracts read it: the change log, restores and
 * change sets, each from the service its layer provides.
 */
import { Effect } from "effect"
import * as RouteRepository from "route-registry/RouteRepository"

/** What every store under the contracts provides: the store, and what both stores of the library offer beside it. */
export type Stored =
  | RouteRepository.RouteRepository
  | RouteRepository.Idempotent
  | RouteRepository.ChangeLog
  | RouteRepository.Restorable
  | RouteRepository.Batches

export const history = (query: RouteRepository.HistoryQuery) =>
  Effect.flatMap(RouteRepository.ChangeLog, (log) => log.history(query))

export const logAfter = (revision: number, limit: number) =>
  Effect.flatMap(RouteRepository.ChangeLog, (log) => log.logAfter(revision, limit))

export const restore = (
  id: string,
  revision: number,
  precondition?: RouteRepository.Precondition,
  options?: RouteRepository.WriteOptions
) => Effect.flatMap(RouteRepository.Restorable, (restorable) => restorable.restore(id, revision, precondition, options))

export const applyBatch = (
  operations: ReadonlyArray<RouteRepository.BatchOperation>,
  options?: RouteRepository.BatchOptions
) => Effect.flatMap(RouteRepository.Batches, (batches) => batches.applyBatch(operations, options))
