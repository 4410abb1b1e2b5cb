/**
 * A follower's files (docs/resilience.md): the last-known-good snapshot it starts from and keeps writing, and the bootstrap
 * file it routes from on a first start while its registry cannot be reached.
 *
 * @internal
 */
import type { Scope } from "effect"
import { Deferred, Effect, Either } from "effect"
import * as BootstrapFile from "../table/bootstrapFile.js"
import * as SnapshotFile from "../table/snapshotFile.js"
import * as Follower from "./follower.js"

/** Routes from the snapshot at `file` when it is valid; otherwise names it in a warning and starts without it. */
export const startFromSnapshot = (state: Follower.State, file: string): Effect.Effect<void> =>
  Effect.flatMap(SnapshotFile.read(file, "follower"), (read) => {
    if (Either.isLeft(read)) return SnapshotFile.refused(file, read.left)
    const { header } = read.right
    Follower.fromSnapshot(state, read.right)
    return Effect.logInfo(
      `route table: routing from the snapshot ${file} (${header.routes} routes, revision ${header.revision}, ` +
        `confirmed current at ${header.confirmedAt}) until the registry answers`
    )
  })

/** Writes the table to `file` at most once per `SnapshotFile.INTERVAL_MILLIS` while it changes, and at the end. */
export const keepSnapshot = (state: Follower.State, file: string): Effect.Effect<void, never, Scope.Scope> =>
  Effect.gen(function*() {
    const writer = yield* SnapshotFile.writer(file, () => Follower.capture(state))
    state.persist = writer.changed
    // What the follower applied before the writer was there: its first table (a snapshot it started from is on disk).
    if (state.source !== "snapshot") writer.changed()
    yield* Effect.addFinalizer(() => writer.final)
    yield* Effect.forkScoped(writer.run)
  })

/**
 * Routes from the bootstrap file at `file`, or says why it cannot; when the registry's first routes began to arrive
 * meanwhile, waits for them instead.
 */
export const startFromBootstrap = (state: Follower.State, file: string): Effect.Effect<void, string> =>
  Effect.flatMap(BootstrapFile.read(file, state.clock.unsafeCurrentTimeMillis()), (read) => {
    if (Either.isLeft(read)) return Effect.fail(`the bootstrap file ${file}: ${read.left}`)
    if (!Follower.fromBootstrap(state, read.right)) {
      return Effect.mapError(Deferred.await(state.started), (lost) => lost.reason)
    }
    return Effect.logWarning(
      `route table: the registry did not answer in time; routing from the bootstrap file ${file} ` +
        `(${read.right.length} routes) until it does`
    )
  })
