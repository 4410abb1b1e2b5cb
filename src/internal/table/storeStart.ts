/**
 * A process's live table over its own store (`RouteTable.layer`), and its start from its files while the store cannot
 * be built (`RouteTable.layerFrom`, docs/resilience.md): the Postgres store's layer connects and migrates when it is
 * built, so while its database is down the process routes from its last-known-good snapshot (or a bootstrap file on a
 * first start) behind a stand-in store that answers `StoreUnavailable`, and a fiber keeps building the store; once
 * built, a snapshot's table resumes through the store's change log from its revision, and otherwise (a bootstrap
 * file, a log that no longer reaches back) the store's table replaces the file's in one step.
 *
 * @internal
 */
import type { Context } from "effect"
import {
  Deferred,
  Duration,
  Effect,
  Either,
  ExecutionStrategy,
  Exit,
  Fiber,
  Layer,
  Option,
  Schedule,
  Scope
} from "effect"
import { identity } from "effect/Function"
import type * as Route from "../../Route.js"
import * as RouteRepository from "../../RouteRepository.js"
import * as Capabilities from "../store/capabilities.js"
import * as BootstrapFile from "./bootstrapFile.js"
import * as LiveTable from "./liveTable.js"
import * as ReplayRing from "./replayRing.js"
import * as RouteTree from "./routeTree.js"
import * as SnapshotFile from "./snapshotFile.js"
import * as Impl from "./table.js"
import * as Telemetry from "./telemetry.js"

type Store = Context.Tag.Service<RouteRepository.RouteRepository>

/** What the table's layer provides. */
export interface Parts {
  readonly table: Impl.TableImpl<Route.StoredRoute>
  readonly ring: ReplayRing.ReplayRing
  readonly store: Store
  /** What the store offers beside it, as the table changes it (`LiveTable.Live`'s `offered`). */
  readonly offered: Capabilities.Capabilities
  readonly status: () => LiveTable.Status
}

/** The options of `RouteTable.layerFrom` (docs/resilience.md). */
export interface StartOptions {
  /** As `RouteTable.LayerOptions`'s. */
  readonly replayCapacity?: number | undefined
  /**
   * As `RouteTable.LayerOptions`'s.
   *
   * @deprecated since 0.5.0, removed in 0.6.0: use `replayCapacity`
   */
  readonly historyCapacity?: number | undefined
  /**
   * Where the process keeps its table's last-known-good snapshot (kind `postgres`): written atomically, at most once
   * a second while the table changes, off the request path; routed from at start while the store cannot be built.
   */
  readonly snapshotFile?: string | undefined
  /** A routes file in the CLI's export format, routed from on a first start (no valid snapshot) in an outage. */
  readonly bootstrapFile?: string | undefined
  /** How long the start waits for the store before it routes from a file; default 10 seconds. */
  readonly startTimeout?: Duration.DurationInput | undefined
}

/** How long `RouteTable.layerFrom` waits for its store before it routes from its files: 10 seconds. */
export const DEFAULT_START_TIMEOUT = Duration.seconds(10)

// Between two tries to build the store: from 200 ms, doubling, at most 2 seconds (a try is one connection).
const RETRY = Schedule.union(Schedule.exponential(Duration.millis(200)), Schedule.spaced(Duration.seconds(2)))

type Start = typeof LiveTable.resume

/**
 * The live table over the store in context on `table`, loaded (`LiveTable.make`) or resumed (`LiveTable.resume`), its
 * fibers forked in the scope; `undefined` when it cannot resume.
 */
const started = (table: Impl.TableImpl<Route.StoredRoute>, ring: ReplayRing.ReplayRing, start: Start) =>
  Effect.gen(function*() {
    const live = yield* start(
      yield* RouteRepository.RouteRepository,
      yield* Capabilities.capabilities,
      table.tree,
      ring,
      yield* Telemetry.arrivals
    )
    if (live === undefined) return undefined
    if (live.follow !== undefined) yield* Effect.forkScoped(live.follow)
    if (live.record !== undefined) yield* Effect.forkScoped(live.record)
    yield* Telemetry.sampleTable(() => table.tree.byId.size, () => live.status().stalenessMillis)
    return live
  })

/** The live table over the store in context on `table`, loaded. */
const liveOn = (table: Impl.TableImpl<Route.StoredRoute>, ring: ReplayRing.ReplayRing) =>
  Effect.map(started(table, ring, LiveTable.make), (live) => live!)

/** The live table over the store in context, loaded. */
export const plain = (capacity: number) =>
  Effect.gen(function*() {
    const table = new Impl.TableImpl<Route.StoredRoute>()
    const ring = ReplayRing.make(capacity)
    const live = yield* liveOn(table, ring)
    return { table, ring, store: live.store, offered: live.offered, status: live.status } satisfies Parts
  })

const reasonOf = (error: unknown): string => error instanceof Error ? error.message : String(error)

const unavailable = (reason: string) => new RouteRepository.StoreUnavailable({ reason })

// The store while the real one cannot be built: every call answers as a store that cannot be reached.
const standIn = (reason: () => string): Store => {
  const fail = () => Effect.fail(unavailable(reason()))
  return RouteRepository.RouteRepository.of({
    create: fail,
    findById: fail,
    list: fail,
    update: fail,
    remove: fail
  })
}

// A store that forwards each call to `current()`, so the routing API built over it reaches the real store once there.
const forwarding = (current: () => Store): Store =>
  RouteRepository.RouteRepository.of({
    create: (...args) => current().create(...args),
    findById: (id) => current().findById(id),
    list: (query) => current().list(query),
    update: (...args) => current().update(...args),
    remove: (...args) => current().remove(...args)
  })

// What a store may offer beside it, forwarded to what `current()` offers once there is a store (the table's start
// cannot know before it is built): failing as `reason()` says until then, and as absent when it does not offer it.
const forwardingOffered = (
  current: () => Capabilities.Capabilities | undefined,
  reason: () => string
): Capabilities.Capabilities => {
  const absent = (name: string) =>
    Effect.fail(unavailable(current() === undefined ? reason() : `the store does not offer ${name}`))
  return {
    ...Capabilities.NONE,
    idempotent: {
      createIdempotent: (...args) => current()?.idempotent?.createIdempotent(...args) ?? absent("createIdempotent")
    },
    changeLog: {
      history: (query) => current()?.changeLog?.history(query) ?? absent("history"),
      logAfter: (revision, limit) => current()?.changeLog?.logAfter(revision, limit) ?? absent("logAfter")
    },
    restorable: { restore: (...args) => current()?.restorable?.restore(...args) ?? absent("restore") },
    batches: { applyBatch: (...args) => current()?.batches?.applyBatch(...args) ?? absent("applyBatch") }
  }
}

/** What the table routes from until its store is built: a snapshot, a bootstrap file, or neither (the start waits). */
type Fallback =
  | { readonly source: "snapshot"; readonly snapshot: SnapshotFile.Snapshot }
  | { readonly source: "bootstrap"; readonly routes: ReadonlyArray<Route.StoredRoute> }

const fallbackOf = (options: StartOptions, now: number): Effect.Effect<Fallback | undefined, string> =>
  Effect.gen(function*() {
    if (options.snapshotFile !== undefined) {
      const read = yield* SnapshotFile.read(options.snapshotFile, "postgres")
      if (Either.isRight(read)) return { source: "snapshot" as const, snapshot: read.right }
      yield* SnapshotFile.refused(options.snapshotFile, read.left)
    }
    if (options.bootstrapFile === undefined) return undefined
    const read = yield* BootstrapFile.read(options.bootstrapFile, now)
    if (Either.isLeft(read)) return yield* Effect.fail(`the bootstrap file ${options.bootstrapFile}: ${read.left}`)
    return { source: "bootstrap" as const, routes: read.right }
  })

// The table's routes from a fallback, into a tree nobody routes with yet.
const placed = (fallback: Fallback, ring: ReplayRing.ReplayRing): RouteTree.Tree<Route.StoredRoute> => {
  const tree = new RouteTree.Tree<Route.StoredRoute>()
  if (fallback.source === "bootstrap") {
    for (const route of fallback.routes) RouteTree.insert(tree, route)
    return tree
  }
  const { entries, header } = fallback.snapshot
  for (const entry of entries) RouteTree.insertParsed(tree, entry.route, entry.parsed)
  ring.begin(header.store, header.revision, entries.map((entry) => entry.route))
  return tree
}

/** The status of a table routing from its fallback: not reachable, confirmed at the snapshot's `confirmedAt`. */
const fallbackStatus = (fallback: Fallback, now: number, error: string): LiveTable.Status => {
  const at = fallback.source === "snapshot" ? Date.parse(fallback.snapshot.header.confirmedAt) : undefined
  return {
    following: "notifications",
    source: fallback.source,
    reachable: false,
    confirmedAt: at === undefined ? null : new Date(at),
    stalenessMillis: at === undefined ? Infinity : Math.max(0, now - at),
    error
  }
}

// Writes the table's snapshot (kind `postgres`) whenever its ring moves, while its source is the database.
const keepSnapshot = (file: string, parts: Parts) =>
  Effect.gen(function*() {
    const { ring, status } = parts
    const writer = yield* SnapshotFile.writer(file, () => {
      const store = ring.store()
      const now = status()
      if (store === undefined || now.source !== "database") return undefined
      const routes = Array.from(ring.routes().values())
      return {
        kind: "postgres",
        store,
        revision: ring.revision(),
        confirmedAt: now.confirmedAt ?? new Date(),
        routes
      }
    })
    // A ring that begins again drops its listeners: listen again.
    const listen = (): void => {
      ring.subscribe((change) => {
        writer.changed()
        if (change === undefined) listen()
      })
    }
    listen()
    writer.changed()
    yield* Effect.addFinalizer(() => writer.final)
    yield* Effect.forkScoped(writer.run)
    return writer
  })

/**
 * The live table over the store `storeLayer` builds, started from `options`' files when the store is not built
 * within `startTimeout`: see the module's comment. Without a usable file the start waits for the store as `plain`.
 */
export const fromFiles = <E, R>(
  storeLayer: Layer.Layer<RouteRepository.RouteRepository, E, R>,
  capacity: number,
  options: StartOptions
): Effect.Effect<Parts, E | RouteRepository.StoreUnavailable, R | Scope.Scope> =>
  Effect.gen(function*() {
    const startTimeout = Duration.decode(options.startTimeout ?? DEFAULT_START_TIMEOUT)
    const scope = yield* Effect.scope
    // Nothing to route from: the store as `plain` builds it, with no wait.
    if (options.snapshotFile === undefined && options.bootstrapFile === undefined) {
      return yield* Effect.provide(plain(capacity), yield* Layer.buildWithScope(storeLayer, scope))
    }
    let lastError = "the store is not built yet"
    const failedOnce = yield* Deferred.make<void>()
    // Each new reason a try fails for is logged once (the tries repeat every few seconds).
    const failed = (reason: string) =>
      Effect.suspend(() => {
        const fresh = reason !== lastError
        lastError = reason
        Deferred.unsafeDone(failedOnce, Exit.void)
        return fresh ? Effect.logWarning(`route table: cannot build the store (${reason}); trying again`) : Effect.void
      })
    const attempt = Effect.gen(function*() {
      const child = yield* Scope.fork(scope, ExecutionStrategy.sequential)
      return yield* Effect.onError(Layer.buildWithScope(storeLayer, child), (cause) =>
        Scope.close(child, Exit.failCause(cause)))
    })
    const building = yield* Effect.forkIn(
      attempt.pipe(
        Effect.tapError((error) =>
          failed(reasonOf(error))
        ),
        Effect.retry(RETRY)
      ),
      scope
    )
    // The store, unless its first try fails (the database refuses: route from the files at once) or it takes too long.
    const built = yield* Effect.raceFirst(
      Effect.map(Fiber.join(building), Option.some),
      Effect.as(Deferred.await(failedOnce), Option.none())
    ).pipe(Effect.timeoutTo({ duration: startTimeout, onSuccess: identity, onTimeout: Option.none }))
    const clock = yield* Effect.clock
    const fallback = Option.isSome(built)
      ? undefined
      : yield* Effect.mapError(fallbackOf(options, clock.unsafeCurrentTimeMillis()), unavailable)
    // Cues a write of the snapshot, once its writer runs.
    let cue = (): void => {}
    const withSnapshot = (parts: Parts) =>
      options.snapshotFile === undefined ? Effect.succeed(parts) : Effect.map(
        keepSnapshot(options.snapshotFile, parts),
        (writer) => {
          cue = writer.changed
          return parts
        }
      )
    if (fallback === undefined) {
      // As `plain`: the store's layer as built (its error, when it fails, is the start's).
      const context = Option.isSome(built)
        ? built.value
        : yield* Effect.zipRight(Fiber.interrupt(building), Layer.buildWithScope(storeLayer, scope))
      const parts = yield* Effect.provide(plain(capacity), context)
      return yield* withSnapshot(parts)
    }
    const ring = ReplayRing.make(capacity)
    const table = new Impl.TableImpl<Route.StoredRoute>(placed(fallback, ring))
    let store = standIn(() => lastError)
    let offered: Capabilities.Capabilities | undefined = undefined
    let status = () => fallbackStatus(fallback, clock.unsafeCurrentTimeMillis(), lastError)
    const parts: Parts = {
      table,
      ring,
      store: forwarding(() => store),
      offered: forwardingOffered(() => offered, () => lastError),
      status: () => status()
    }
    yield* Effect.logWarning(
      `route table: the store cannot be built (${lastError}); ` +
        (fallback.source === "snapshot"
          ? `routing from the snapshot ${options.snapshotFile} (${fallback.snapshot.header.routes} routes, revision ` +
            `${fallback.snapshot.header.revision}, confirmed current at ${fallback.snapshot.header.confirmedAt})`
          : `routing from the bootstrap file ${options.bootstrapFile} (${fallback.routes.length} routes)`) +
        "; writes are refused until it is"
    )
    yield* withSnapshot(parts)
    // Each try in the store's context, its failures logged, until one succeeds.
    const tried = <A>(
      context: Context.Context<RouteRepository.RouteRepository>,
      effect: Effect.Effect<A, RouteRepository.StoreUnavailable, RouteRepository.RouteRepository | Scope.Scope>
    ) =>
      effect.pipe(
        Effect.provide(context),
        Scope.extend(scope),
        Effect.tapError((error) => failed(error.reason)),
        Effect.retry(RETRY)
      )
    // A snapshot's table resumes from its revision through the store's log, applying the changes since, which its
    // streams hear as changes (docs/resilience.md). Else, and when the log does not reach back that far, the store's
    // table is loaded into a tree of its own (a new one per try: a failed load leaves a part) and replaces the
    // fallback's in one step, and the ring begins again (its streams' clients are sent a reset).
    const catchUp = Effect.gen(function*() {
      const context = yield* Fiber.join(building)
      const from = fallback.source === "snapshot" ? fallback.snapshot.header : undefined
      const resumed = from === undefined
        ? undefined
        : yield* tried(context, started(table, ring, LiveTable.resume))
      if (resumed !== undefined) {
        yield* Effect.logInfo(
          `route table: the store answers; the snapshot's table caught up through its change log from revision ` +
            `${from!.revision} to ${ring.revision()} (${table.tree.byId.size} routes)`
        )
      }
      const live = resumed ?? (yield* Effect.gen(function*() {
        const [loaded, live] = yield* tried(
          context,
          Effect.suspend(() => {
            const loaded = new Impl.TableImpl<Route.StoredRoute>()
            return Effect.map(liveOn(loaded, ring), (live) => [loaded, live] as const)
          })
        )
        Impl.replaceTree(table, loaded.tree)
        if (from !== undefined) {
          yield* Effect.logWarning(
            from.store === ring.store()
              ? `route table: the store's change log does not hold every change since the snapshot's revision ` +
                `${from.revision} (pruned past it, or the database is older than the snapshot); its table replaces ` +
                "the snapshot's whole"
              : `route table: the snapshot ${options.snapshotFile} was of another store (${from.store}); replaced by ` +
                "this one's table"
          )
        }
        yield* Effect.logInfo(
          `route table: the store answers; its table (${loaded.tree.byId.size} routes) replaces the ${fallback.source}'s`
        )
        return live
      }))
      store = live.store
      offered = live.offered
      status = live.status
      cue()
    })
    yield* Effect.forkIn(catchUp, scope)
    return parts
  })
