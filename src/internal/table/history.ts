/**
 * A process's change history: the last changes its table took, numbered in the order they were applied, for the
 * change stream (`GET /v1/routing/changes`) to replay from a cursor and to push as they happen.
 *
 * A cursor is `<epoch>.<seq>`: `epoch` is drawn at random when the history is made, so a cursor from another process,
 * or from this process before a restart, is told apart from one of its own (and answered with a reset); `seq` is the
 * number of the last change it covers, in base 36. The history keeps the last `capacity` changes; a cursor older than
 * that is also answered with a reset.
 *
 * The routes of a snapshot (a stream opened without a cursor, or reset) carry `<epoch>.<seq>.<n>`: the snapshot taken
 * at change `seq`, up to its `n`th route. Holding part of a snapshot is not holding the routes as of any change, so
 * resuming from such a cursor is answered with a reset: a client never ends with half a snapshot.
 *
 * @internal
 */
import { Either } from "effect"
import type { InvalidOption } from "../../InvalidOption.js"
import * as Route from "../../Route.js"
import { positiveInteger } from "../optionChecks.js"

/** One change the table took. `text` is its JSON, made once however many streams send it. */
export type Change =
  | { readonly _tag: "Upsert"; readonly seq: number; readonly route: Route.StoredRoute; readonly text: string }
  | { readonly _tag: "Delete"; readonly seq: number; readonly id: string; readonly text: string }

/** What a cursor given by a client resumes from. */
export type Resume =
  /** The changes after the cursor, oldest first (empty when it is current). */
  | { readonly _tag: "Changes"; readonly changes: ReadonlyArray<Change> }
  /** A cursor of this API this process cannot resume from (another process, a restart, pruned): start again. */
  | { readonly _tag: "Reset" }
  /** Not a cursor this API issued. */
  | { readonly _tag: "Invalid"; readonly reason: string }

/** The default number of changes a history keeps. */
export const DEFAULT_CAPACITY = 10_000

/** The capacity a host asked for (`historyCapacity`), with the default, or the error naming the option. */
export const capacityOf = (capacity: number | undefined = DEFAULT_CAPACITY): Either.Either<number, InvalidOption> => {
  const invalid = positiveInteger("historyCapacity", capacity, "changes")
  return invalid === undefined ? Either.right(capacity) : Either.left(invalid)
}

export interface History {
  readonly epoch: string
  readonly capacity: number
  /** The cursor covering every change recorded so far. */
  readonly cursor: () => string
  /** What a client's cursor resumes from. */
  readonly since: (cursor: string) => Resume
  /** Calls `listener` with each change recorded from now on, synchronously, until the returned function is called. */
  readonly subscribe: (listener: (change: Change) => void) => () => void
  /**
   * Records a route the table now holds (new, or a new version). `text`, when given, is `Route.toJson(route)` already
   * made (a follower's event data): it must be exactly that, since the stream serves it as the route's JSON.
   */
  readonly upserted: (route: Route.StoredRoute, text?: string) => void
  /** Records a route the table no longer holds. */
  readonly deleted: (id: string) => void
}

const EPOCH_PATTERN = /^[0-9a-z]{12}$/
const SEQ_PATTERN = /^(?:0|[1-9a-z][0-9a-z]{0,10})$/

const newEpoch = (): string => {
  let epoch = ""
  while (epoch.length < 12) epoch += Math.floor(Math.random() * 36).toString(36)
  return epoch
}

/** The cursor of change `seq` in the history `epoch`. */
export const cursorOf = (epoch: string, seq: number): string => `${epoch}.${seq.toString(36)}`

/** The cursor of the `n`th route (from 1) of the snapshot taken at `cursor`. */
export const snapshotCursorOf = (cursor: string, n: number): string => `${cursor}.${n.toString(36)}`

const INVALID: Resume = {
  _tag: "Invalid",
  reason: "is not a cursor this API issued: resume from the id of the last event received"
}

/** A history keeping the last `capacity` changes (at least 1). */
export const make = (capacity: number = DEFAULT_CAPACITY): History => {
  const epoch = newEpoch()
  // A ring of the last `capacity` changes: change `seq` is at `seq % capacity` while `seq > head - capacity`.
  const ring: Array<Change | undefined> = new Array(Math.min(capacity, 1024))
  const listeners = new Set<(change: Change) => void>()
  let head = 0

  const record = (change: Change): void => {
    const slot = change.seq % capacity
    if (slot >= ring.length) ring.length = Math.min(capacity, Math.max(slot + 1, ring.length * 2))
    ring[slot] = change
    for (const listener of listeners) listener(change)
  }

  const since = (cursor: string): Resume => {
    const parts = cursor.split(".")
    if (parts.length < 2 || parts.length > 3 || !EPOCH_PATTERN.test(parts[0]!)) return INVALID
    if (!parts.slice(1).every((part) => SEQ_PATTERN.test(part))) return INVALID
    if (parts[0] !== epoch) return { _tag: "Reset" }
    const seq = parseInt(parts[1]!, 36)
    // Issued here, a cursor is never ahead of the history.
    if (seq > head) return INVALID
    if (parts.length === 3 || seq < head - capacity) return { _tag: "Reset" }
    const changes: Array<Change> = []
    for (let s = seq + 1; s <= head; s++) changes.push(ring[s % capacity]!)
    return { _tag: "Changes", changes }
  }

  return {
    epoch,
    capacity,
    cursor: () => cursorOf(epoch, head),
    since,
    subscribe: (listener) => {
      listeners.add(listener)
      return () => listeners.delete(listener)
    },
    upserted: (route, text) => {
      head++
      record({ _tag: "Upsert", seq: head, route, text: text ?? Route.toJson(route) })
    },
    deleted: (id) => {
      head++
      record({ _tag: "Delete", seq: head, id, text: `{"id":${JSON.stringify(id)}}` })
    }
  }
}
