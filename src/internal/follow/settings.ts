/**
 * A follower's options, checked once and with their defaults applied: the change stream's URL, the timers, the
 * bounds.
 *
 * @internal
 */
import { Duration, Either } from "effect"
import { InvalidOption } from "../../InvalidOption.js"
import type { Options as FollowOptions } from "../../RouteFollower.js"
import { MAX_TIMER_MILLIS, positiveInteger } from "../optionChecks.js"
import * as ReplayRing from "../table/replayRing.js"
import * as Fleet from "./fleet.js"
import type * as Log from "./log.js"
import * as Report from "./report.js"
import type * as FollowState from "./state.js"

/** The defaults of `RouteFollower.Options`. */
export const DEFAULTS = {
  startTimeout: Duration.seconds(30),
  retryInitial: Duration.millis(100),
  // A follower is back within 5 s of its registry accepting connections again: at most this wait, then a connection.
  retryMax: Duration.seconds(4),
  // The registry's heartbeats come at least every 15 s; 5 s more is the margin for a busy network or event loop.
  idleTimeout: Duration.seconds(20),
  maxEventBytes: 1024 * 1024,
  maxSnapshotRoutes: 250_000,
  maxSnapshotBytes: 64 * 1024 * 1024,
  snapshotTimeout: Duration.minutes(5)
} as const

export interface Settings extends FollowState.Settings {
  readonly startTimeout: Duration.Duration
  readonly replayCapacity: number
  /** Where the registry's change log is read. */
  readonly log: Log.Target
  /** Where the follower reports the revision it applied (docs/scaling-out.md, "The fleet"). */
  readonly report: Report.Target
}

// The paths of the change stream and the change log under the registry's base URL.
const CHANGES_PATH = "/v1/routing/changes"
const HISTORY_PATH = "/v1/routing/history"
const FOLLOWERS_PATH = "/v1/routing/followers"

const nameOf = (name: string | undefined): Either.Either<string, InvalidOption> => {
  if (name === undefined) return Either.right(Report.defaultName())
  const problem = Fleet.checkName(name)
  return problem === undefined
    ? Either.right(name)
    : Either.left(new InvalidOption({ option: "name", message: `name ${problem}` }))
}

const millis = (
  option: string,
  input: Duration.DurationInput,
  least: number
): Either.Either<number, InvalidOption> => {
  const decoded = Duration.decodeUnknown(input)
  const value = decoded._tag === "Some" ? Math.round(Duration.toMillis(decoded.value)) : NaN
  const invalid = positiveInteger(option, value, "milliseconds", { least, most: MAX_TIMER_MILLIS })
  return invalid === undefined ? Either.right(value) : Either.left(invalid)
}

const changesUrl = (url: string): Either.Either<URL, InvalidOption> => {
  const parsed = URL.canParse(url) ? new URL(url) : undefined
  if (parsed === undefined || (parsed.protocol !== "http:" && parsed.protocol !== "https:")) {
    return Either.left(new InvalidOption({ option: "url", message: "url must be an http:// or https:// URL" }))
  }
  if (parsed.search !== "" || parsed.hash !== "" || parsed.pathname.endsWith("/v1/routing")) {
    return Either.left(
      new InvalidOption({
        option: "url",
        message: "url is the registry's base URL (http://host:port, or with its mount prefix), without /v1/routing, " +
          "a query or a fragment"
      })
    )
  }
  parsed.pathname = parsed.pathname.replace(/\/+$/, "") + CHANGES_PATH
  return Either.right(parsed)
}

export const resolve = (options: FollowOptions): Either.Either<Settings, InvalidOption> =>
  Either.gen(function*() {
    const url = yield* changesUrl(options.url)
    const startTimeout = yield* millis("startTimeout", options.startTimeout ?? DEFAULTS.startTimeout, 1)
    const retryInitialMillis = yield* millis("retryInitial", options.retryInitial ?? DEFAULTS.retryInitial, 1)
    const retryMaxMillis = yield* millis("retryMax", options.retryMax ?? DEFAULTS.retryMax, retryInitialMillis)
    const idleMillis = yield* millis("idleTimeout", options.idleTimeout ?? DEFAULTS.idleTimeout, 1)
    const maxEventBytes = options.maxEventBytes ?? DEFAULTS.maxEventBytes
    const invalid = positiveInteger("maxEventBytes", maxEventBytes, "bytes")
    if (invalid !== undefined) return yield* Either.left(invalid)
    const maxSnapshotRoutes = options.maxSnapshotRoutes ?? DEFAULTS.maxSnapshotRoutes
    const invalidRoutes = positiveInteger("maxSnapshotRoutes", maxSnapshotRoutes, "routes")
    if (invalidRoutes !== undefined) return yield* Either.left(invalidRoutes)
    const maxSnapshotBytes = options.maxSnapshotBytes ?? DEFAULTS.maxSnapshotBytes
    const invalidBytes = positiveInteger("maxSnapshotBytes", maxSnapshotBytes, "bytes")
    if (invalidBytes !== undefined) return yield* Either.left(invalidBytes)
    const snapshotTimeoutMillis = yield* millis(
      "snapshotTimeout",
      options.snapshotTimeout ?? DEFAULTS.snapshotTimeout,
      1
    )
    const capacity = yield* ReplayRing.capacityOf(options)
    const name = yield* nameOf(options.name)
    const base = url.href.slice(0, -CHANGES_PATH.length)
    return {
      target: { url, token: options.token, idleMillis, maxEventBytes, name },
      retryInitialMillis,
      retryMaxMillis,
      maxSnapshotRoutes,
      maxSnapshotBytes,
      snapshotTimeoutMillis,
      startTimeout: Duration.millis(startTimeout),
      replayCapacity: capacity,
      log: { url: new URL(base + HISTORY_PATH), token: options.token },
      report: { url: new URL(base + FOLLOWERS_PATH), token: options.token }
    }
  })
