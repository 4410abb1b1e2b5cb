/**
 * What a follower holds and knows: its settings, its table, memory index and replay ring, where its stream stands, how
 * current its table was last confirmed, and what it logs. The stream's sink (`follower.ts`), the events it applies
 * (`apply.ts`), the table's health (`health.ts`) and its files (`files.ts`) all work on it.
 *
 * @internal
 */
import type { Clock } from "effect"
import { Deferred, Effect, Queue } from "effect"
import type * as Route from "../../Route.js"
import * as Memory from "../store/memoryIndex.js"
import type { Source } from "../table/liveTable.js"
import type * as ReplayRing from "../table/replayRing.js"
import * as RouteTree from "../table/routeTree.js"
import type * as Client from "./client.js"
import type * as Decode from "./decode.js"

/** The follower's settings, checked. */
export interface Settings {
  readonly target: Client.Target
  /** The first wait before reconnecting, and the longest: each failure in a row doubles it up to the longest. */
  readonly retryInitialMillis: number
  readonly retryMaxMillis: number
  /** The most routes a snapshot may hold, its most bytes, and the longest it may take, before the stream is dropped. */
  readonly maxSnapshotRoutes: number
  readonly maxSnapshotBytes: number
  readonly snapshotTimeoutMillis: number
}

/** When the table was last confirmed current, and why the last connection ended. */
interface Confirmed {
  at: number
  error: string | undefined
}

/** An outage, as logged: its first warning, then a count of the same loss repeated, and its end. */
export interface Outage {
  readonly since: number
  reason: string
  /** Losses for `reason` since it was logged. */
  repeats: number
  /** A `ready` since the last warning was logged. */
  back: boolean
}

/** A route of an event, with the revision its cursor gives it. */
export interface Revised {
  readonly route: Decode.Decoded
  readonly revision: number
}

/**
 * A snapshot being read, and when it began. While the table routes, its routes are held beside it until `ready`
 * (`held`); before the first `ready` nothing reads the table, so they go into it at once and only their ids are kept
 * (`kept`): a follower never holds its first snapshot twice.
 */
export type Snapshot =
  & ({ readonly held: Map<string, Revised>; readonly kept?: undefined } | {
    readonly held?: undefined
    readonly kept: Set<string>
  })
  & { readonly since: number; /** The bytes of the routes' JSON received so far. */ bytes: number }

export interface State {
  readonly settings: Settings
  readonly tree: RouteTree.Tree<Route.StoredRoute>
  readonly memory: Memory.Memory
  readonly ring: ReplayRing.ReplayRing
  /** The id of the last event applied, to resume from. */
  cursor: string | undefined
  /** The id the registry gave the open stream (`Follower-Stream`), which the follower's reports name. */
  stream: string | undefined
  /** The registry refused the name (taken, or its fleet full): the next connection opens without it, unlisted. */
  unlisted: boolean
  /** Why this follower was unlisted, each logged once: a warning per cause, not per connection. */
  readonly warned: Set<string>
  /** Told of each event applied while live (`ready` included): the fleet report's cue (`report.ts`). */
  applied: () => void
  /** Told of each event applied once the table routes: the snapshot file's cue (`SnapshotFile.writer`). */
  persist: () => void
  /** Told of each route placed, with its event's text when canonical: `SnapshotFile.keepLine` with a snapshot file. */
  keepLine: (route: Route.StoredRoute, json: string | undefined) => void
  /** Where the table's routes came from: the registry, or, until its first `ready`, a snapshot or bootstrap file. */
  source: Source
  /** While a snapshot is being read. */
  snapshot: Snapshot | undefined
  /** The first `ready` arrived: the table routes, and its changes are recorded for its own followers. */
  routing: boolean
  /** `ready` arrived on this connection: every byte since confirms the table current. */
  live: boolean
  /** When `ready` arrived on this connection, while it is live. */
  liveSince: number | undefined
  /** When the last byte arrived: a live stream past `idleMillis` without one is not current. */
  lastByteAt: number
  /** When the process followed was last current, as its last heartbeat said; `undefined`: it is current. */
  upstreamConfirmedAt: number | undefined
  /** A stream broke the protocol, and none has stayed healthy since: `ready` confirms nothing meanwhile. */
  broken: boolean
  readonly confirmed: Confirmed
  /** The outage being logged, until a stream stays healthy. */
  outage: Outage | undefined
  /** What to log, logged by a fiber of its own: the sink runs outside any fiber. */
  readonly log: Queue.Queue<Effect.Effect<void>>
  /** Told of the first `ready`. */
  readonly started: Deferred.Deferred<void, Client.Lost>
  /** The clock of the fiber that made the state, read by the sink, which runs outside any fiber. */
  readonly clock: Clock.Clock
}

export const makeState = (ring: ReplayRing.ReplayRing, settings: Settings): Effect.Effect<State> =>
  Effect.map(
    Effect.all([Queue.unbounded<Effect.Effect<void>>(), Deferred.make<void, Client.Lost>(), Effect.clock]),
    ([log, started, clock]) => ({
      settings,
      tree: new RouteTree.Tree(),
      memory: Memory.emptyMemory(),
      ring,
      cursor: undefined,
      stream: undefined,
      unlisted: false,
      warned: new Set(),
      applied: () => {},
      persist: () => {},
      keepLine: () => {},
      source: "registry",
      snapshot: undefined,
      routing: false,
      live: false,
      liveSince: undefined,
      lastByteAt: clock.unsafeCurrentTimeMillis(),
      upstreamConfirmedAt: undefined,
      broken: false,
      confirmed: { at: clock.unsafeCurrentTimeMillis(), error: undefined },
      outage: undefined,
      log,
      started,
      clock
    })
  )

/** Logs `log` by the follower's logging fiber: the sink runs outside any fiber. */
export const unsafeLog = (state: State, log: Effect.Effect<void>): void => {
  Queue.unsafeOffer(state.log, log)
}

/** The time on the clock of the fiber that made the state. */
export const now = (state: State): number => state.clock.unsafeCurrentTimeMillis()

/** Writes what the follower logs. */
export const logger = (state: State): Effect.Effect<never> => Effect.forever(Effect.flatten(Queue.take(state.log)))
