/**
 * Following a registry over HTTP: a route table kept equal to another registry's through its change stream
 * (`GET /v1/routing/changes`), with a `routes:read` token and no database, for routers that hold no credentials that
 * can write and open no database connection. A follower serves the stream onward, so others can follow it (a relay).
 *
 * @example
 * ```ts
 * import { Redacted } from "effect"
 * import * as RouteFollower from "route-registry/RouteFollower"
 *
 * // Provides RouteTable, a read-only RouteRepository, TableStatus and ReplayRing, as RouteTable.layer does.
 * const table = RouteFollower.layer({ url: "http://registry:3000", token: Redacted.make("a-read-token") })
 * ```
 *
 * @since 0.4.0
 */
import { Cause, Config, Context, Deferred, Duration, Effect, Exit, Layer, Option, Schema } from "effect"
import type { ConfigError, Redacted } from "effect"
import * as Files from "./internal/follow/files.js"
import * as Fleet from "./internal/follow/fleet.js"
import * as Follower from "./internal/follow/follower.js"
import * as Health from "./internal/follow/health.js"
import * as Report from "./internal/follow/report.js"
import * as FollowSettings from "./internal/follow/settings.js"
import * as FollowState from "./internal/follow/state.js"
import * as ReplayRing from "./internal/table/replayRing.js"
import * as TableTelemetry from "./internal/table/telemetry.js"
import * as Urls from "./internal/urls.js"
import type { InvalidOption } from "./InvalidOption.js"
import type * as Route from "./Route.js"
import * as RouteRepository from "./RouteRepository.js"
import * as RouteTable from "./RouteTable.js"

/**
 * The registry a follower (`layer`) could not follow: it refused the token (401, 403) or the URL (404, 400)
 * at start-up, or did not let the follower load its routes within `startTimeout`. `status` is the registry's answer,
 * when it gave one; `reason` says what happened, never the token.
 *
 * @since 0.4.0
 * @category errors
 */
export class FollowFailed extends Schema.TaggedError<FollowFailed>()("FollowFailed", {
  url: Schema.String,
  reason: Schema.String,
  status: Schema.optional(Schema.Number)
}) {
  override get message(): string {
    return `cannot follow the registry at ${this.url}: ${this.reason}`
  }
}

/**
 * What a follower (`layer`) follows, and how. Durations take Effect's `DurationInput` (`"30 seconds"`, millis).
 *
 * @since 0.4.0
 * @category models
 */
export interface Options {
  /**
   * The registry's base URL: the origin its routing API is mounted under, with the mount's prefix if it has one, and
   * without `/v1/routing` (`http://registry:3000`, `https://example.com/admin`). The follower reads
   * `<url>/v1/routing/changes`.
   */
  readonly url: string
  /** A bearer token the registry accepts with the `routes:read` scope (writing is never needed). */
  readonly token: Redacted.Redacted
  /**
   * The name the registry lists this follower under (`GET /v1/routing/followers`): 1 to 128 letters, digits and
   * `. _ : @ -`, starting with a letter or digit. The follower reports the revision it applied under it within a
   * second of applying it, and every 10 s while nothing changes (docs/scaling-out.md, "The fleet"). Default the host
   * name and the process id.
   *
   * @since 0.4.0
   */
  readonly name?: string | undefined
  /**
   * How long building the layer may wait for the registry's routes (the first `ready`). Until then, a registry that
   * cannot be reached or answers 5xx, 408 or 429 is tried again; one that refuses the token or the URL (any other 4xx)
   * fails the build at once. Default 30 seconds.
   */
  readonly startTimeout?: Duration.DurationInput | undefined
  /**
   * The wait before reconnecting after a lost stream: each failure in a row doubles it, from `retryInitial` up to
   * `retryMax`, and the follower waits a random time between zero and that bound ("full jitter"), so that followers
   * cut off together do not come back together. Once the registry accepts connections again a follower is back within
   * `retryMax` and one connection. The waits start again from `retryInitial` only after a stream stayed live (past
   * `ready`) for 10 s, so a registry that breaks every stream right after `ready` is not hammered. Defaults 100
   * milliseconds and 4 seconds.
   */
  readonly retryInitial?: Duration.DurationInput | undefined
  readonly retryMax?: Duration.DurationInput | undefined
  /**
   * A stream from which no byte arrives for this long (the registry sends a heartbeat at least every 15 s) is taken
   * for dead and replaced; until then a live stream counts as current. Default 20 seconds.
   */
  readonly idleTimeout?: Duration.DurationInput | undefined
  /** An event larger than this is a protocol error: the stream is dropped and resumed. Default 1 MiB. */
  readonly maxEventBytes?: number | undefined
  /**
   * The most routes one snapshot (every route, sent after a `reset` or to a stream opened without a cursor) may hold,
   * and the longest it may take to arrive: past either, the stream is a protocol error, dropped, logged and tried
   * again, so a stream never makes a follower hold routes without bound. Raise `maxSnapshotRoutes` for a registry that
   * holds more. Defaults 250,000 routes and 5 minutes.
   */
  readonly maxSnapshotRoutes?: number | undefined
  /**
   * The most bytes of routes (their JSON, as the registry sends them) one snapshot may hold: past it, the stream is a
   * protocol error as past `maxSnapshotRoutes`, so a registry sending the largest routes cannot make a follower hold
   * gigabytes. Decoded, routes take about four times their JSON in heap, held beside the table while a snapshot is read
   * (docs/scaling-out.md, "A follower's memory"). Default 64 MiB.
   *
   * @since 0.5.0
   */
  readonly maxSnapshotBytes?: number | undefined
  readonly snapshotTimeout?: Duration.DurationInput | undefined
  /**
   * How many of its last changes the follower keeps in its replay ring for its own followers to resume from (a
   * relay), as `RouteTable.LayerOptions.replayCapacity`. A relay keeps no log: one of its followers that was away
   * longer is caught up from the registry's log, through a catch-up stream from the process the relay follows, and
   * sent every route again (a `reset`) only when that log no longer holds its changes either. Its cursors are the
   * registry's, so its followers may also resume at the registry. Default `RouteTable.DEFAULT_REPLAY_CAPACITY`.
   *
   * @since 0.5.0
   */
  readonly replayCapacity?: number | undefined
  /**
   * `replayCapacity` under its name before 0.5.0. Given with `replayCapacity`, the two must be equal, else the layer
   * fails with `InvalidOption`.
   *
   * @deprecated since 0.5.0, removed in 0.6.0: use `replayCapacity`
   */
  readonly historyCapacity?: number | undefined
  /**
   * The last-known-good snapshot (docs/resilience.md): the follower writes its whole table there after it applies
   * changes (at most once per second, off the request path, atomically) and at shutdown, and at start routes from a
   * valid one at once, before the registry answers, then resumes from its revision. A missing, truncated, corrupt or
   * foreign file is named in a warning and never routed from.
   *
   * @since 0.5.0
   */
  readonly snapshotFile?: string | undefined
  /**
   * A routes file in the CLI's export format, routed from when the registry does not answer within `startTimeout` and
   * no valid snapshot was found, until the registry's table replaces it in one step.
   *
   * @since 0.5.0
   */
  readonly bootstrapFile?: string | undefined
}

/**
 * The defaults of `Options`.
 *
 * @since 0.4.0
 * @category constants
 */
export const DEFAULTS: typeof FollowSettings.DEFAULTS = FollowSettings.DEFAULTS

// The loop survives every loss and defect of a connection; should it ever end otherwise, the log says so.
const logStopped = (exit: Exit.Exit<void>): Effect.Effect<void> =>
  Exit.isFailure(exit) && !Cause.isInterruptedOnly(exit.cause)
    ? Effect.logError(
      "route table: the follower stopped following the registry; the table no longer changes",
      exit.cause
    )
    : Effect.void

/**
 * What a follower's layers provide: its route table, status and replay ring, and a read-only store over the table
 * with its reads from memory and its change log.
 *
 * @since 0.5.0
 * @category models
 */
export type Provided =
  | RouteTable.RouteTable
  | RouteRepository.RouteRepository
  | RouteRepository.ReadOnly
  | RouteRepository.MemoryRead
  | RouteRepository.ChangeLog
  | RouteTable.TableStatus
  | RouteTable.ReplayRing

/**
 * A table that follows another registry over HTTP, with no database: the layer reads the registry's change stream
 * (`GET <url>/v1/routing/changes`) with a `routes:read` token, and provides
 * - `RouteTable`, which routes only once building the layer has received every route (the first `ready`), and then
 *   takes each change as it arrives, in order;
 * - `RouteRepository`, a read-only store over the same routes: `findById` and `list` answer from memory as the memory
 *   store does (`MemoryRead` beside it), and every write fails with `ReadOnlyStore` (`ReadOnly` beside it: the
 *   routing API answers it `405 method_not_allowed`);
 * - `ChangeLog`, the registry's: `history` reads a page of it (`GET <url>/v1/routing/history`, with `token`;
 *   `StoreUnavailable` when it cannot be had within 10 s), `logAfter` the changes after a revision through a catch-up
 *   stream (`GET <url>/v1/routing/changes` from that revision: what its own change stream sends a follower whose
 *   cursor is older than its replay ring);
 * - `TableStatus` (`following: "stream"`): current (staleness 0) while the stream is live and the registry says it is
 *   current itself, its staleness growing while the registry cannot be reached (or, for a relay, cannot reach its own);
 * - `ReplayRing`, the changes it applied, so that its own routing API serves `/v1/routing/changes` onward and other
 *   processes can follow it (a relay).
 *
 * It names itself on the stream (`name`) and reports the revision it applied to the registry (`POST
 * <url>/v1/routing/followers`), with its own followers' entries when it is a relay, so the registry's
 * `GET /v1/routing/followers` lists the whole fleet (docs/scaling-out.md, "The fleet").
 *
 * While the stream is lost (the registry restarts, the network fails, the stream falls silent for `idleTimeout`) the
 * table keeps routing as it is, and the follower reconnects by itself with backoff and jitter, resuming after the
 * last event it applied; when the registry cannot resume from there (its log no longer holds the changes, or it is
 * another store) it sends every route again, and the table ends equal to it, having routed with its old routes
 * meanwhile. Building the
 * layer fails with `FollowFailed` when the registry refuses the token or the URL, or the routes do not arrive within
 * `startTimeout`, and with `InvalidOption` naming an option out of its range. With `Telemetry.layer` in context, it
 * keeps the table's gauges as `layer` does.
 *
 * @since 0.4.0
 * @category layers
 */
export const layer = (
  options: Options
): Layer.Layer<Provided, FollowFailed | InvalidOption> =>
  Layer.scopedContext(Effect.gen(function*() {
    const settings = yield* FollowSettings.resolve(options)
    const cleartext = Urls.cleartextWarning(options.url, "route table: the followed registry's URL")
    if (cleartext !== undefined) yield* Effect.logWarning(cleartext)
    const ring = ReplayRing.make(settings.replayCapacity)
    const state = yield* FollowState.makeState(ring, settings)
    const { bootstrapFile, snapshotFile } = options
    if (snapshotFile !== undefined) {
      Files.keepLines(state)
      yield* Files.startFromSnapshot(state, snapshotFile)
    }
    yield* Effect.forkScoped(FollowState.logger(state))
    yield* Effect.forkScoped(Follower.follow(state).pipe(Effect.onExit(logStopped)))
    const failed = (reason: string) => new FollowFailed({ url: Urls.redacted(options.url), reason })
    const started = yield* Deferred.await(state.started).pipe(
      Effect.mapError((lost) =>
        new FollowFailed({ url: Urls.redacted(options.url), reason: lost.reason, status: lost.status })
      ),
      Effect.timeoutOption(settings.startTimeout)
    )
    if (Option.isNone(started)) {
      const late = `no routes within ${Duration.format(settings.startTimeout)}${
        state.confirmed.error === undefined ? "" : ` (last error: ${state.confirmed.error})`
      }`
      if (bootstrapFile === undefined) return yield* failed(late)
      yield* Effect.mapError(Files.startFromBootstrap(state, bootstrapFile), (reason) => failed(`${late}; ${reason}`))
    }
    if (snapshotFile !== undefined) yield* Files.keepSnapshot(state, snapshotFile)
    // Reports start with the table: before the first `ready` there is nothing applied to report.
    yield* Effect.forkScoped(Report.run(state, Fleet.of(ring, yield* Effect.clock), settings.report))
    const table = RouteTable.fromTree<Route.StoredRoute>(state.tree)
    yield* TableTelemetry.sampleTable(() => RouteTable.size(table), () => Health.status(state).stalenessMillis)
    const status = () => Health.status(state)
    return Context.make(RouteTable.RouteTable, table).pipe(
      Context.add(RouteRepository.RouteRepository, Follower.store(state)),
      Context.add(RouteRepository.ChangeLog, Follower.changeLog(state, settings.log)),
      Context.add(RouteRepository.ReadOnly, true),
      Context.add(RouteRepository.MemoryRead, Follower.memoryRead(state)),
      Context.add(RouteTable.TableStatus, { get: Effect.sync(status), unsafeGet: status }),
      Context.add(RouteTable.ReplayRing, ring)
    )
  }))

/**
 * `layer` with its options read from `Config`, such as
 * `{ url: Config.string("FOLLOW_URL"), token: Config.redacted("FOLLOW_TOKEN") }`.
 *
 * @since 0.4.0
 * @category layers
 */
export const layerConfig = (
  config: Config.Config.Wrap<Options>
): Layer.Layer<Provided, FollowFailed | InvalidOption | ConfigError.ConfigError> =>
  Layer.unwrapEffect(Effect.map(Config.unwrap(config), layer))
