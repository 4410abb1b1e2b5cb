/**
 * The core's options, checked once when it is made.
 *
 * @internal
 */
import { Either } from "effect"
import { InvalidOption } from "../InvalidOption.js"
import type { Options } from "../RoutingHandler.js"
import * as Dashboard from "./http/dashboard.js"
import * as Idempotency from "./http/idempotency.js"
import * as Limits from "./limits.js"
import { MAX_TIMER_MILLIS, positiveInteger } from "./optionChecks.js"
import { IDEMPOTENCY_KEY_OVERHEAD_BYTES } from "./store/rules.js"

/** The options with their defaults applied, every one checked. */
export interface Config {
  readonly maxBodyBytes: number
  readonly maxBatchBodyBytes: number
  readonly bodyTimeoutMillis: number
  readonly retryAfterSeconds: number
  readonly idempotencyKeyExpirySeconds: number
  readonly idempotencyKeysPerPrincipal: number
  readonly idempotencyKeyBytesPerPrincipal: number
  readonly changesHeartbeatMillis: number
  readonly changesBufferBytes: number
  readonly changesStreamsPerPrincipal: number
  readonly changesStallMillis: number
  /** The dashboard's page and assets, when it is on. */
  readonly dashboard: Dashboard.Assets | undefined
}

// The byte budget holds at least one key of the longest kind, so a client holding no key is never refused.
const LEAST_KEY_BYTES = Idempotency.MAX_KEY_LENGTH + IDEMPOTENCY_KEY_OVERHEAD_BYTES

// Off unless asked for; on, its built page must be there, or the host learns at start-up rather than from a 404.
const dashboardOf = (value: unknown): Either.Either<Dashboard.Assets | undefined, InvalidOption> =>
  value === undefined || value === false
    ? Either.right(undefined)
    : value === true
    ? Dashboard.load()
    : Either.left(
      new InvalidOption({ option: "dashboard", message: `dashboard must be true or false (got ${typeof value})` })
    )

export const resolve = (options: Options): Either.Either<Config, InvalidOption> => {
  const dashboard = dashboardOf(options.dashboard)
  if (Either.isLeft(dashboard)) return Either.left(dashboard.left)
  const config: Config = {
    maxBodyBytes: options.maxBodyBytes ?? Limits.DEFAULT_MAX_BODY_BYTES,
    maxBatchBodyBytes: options.maxBatchBodyBytes ?? Limits.DEFAULT_MAX_BATCH_BODY_BYTES,
    bodyTimeoutMillis: options.bodyTimeoutMillis ?? Limits.DEFAULT_BODY_TIMEOUT_MILLIS,
    retryAfterSeconds: options.retryAfterSeconds ?? Limits.DEFAULT_RETRY_AFTER_SECONDS,
    idempotencyKeyExpirySeconds: options.idempotencyKeyExpirySeconds ?? Limits.DEFAULT_IDEMPOTENCY_KEY_EXPIRY_SECONDS,
    idempotencyKeysPerPrincipal: options.idempotencyKeysPerPrincipal ?? Limits.DEFAULT_IDEMPOTENCY_KEYS_PER_PRINCIPAL,
    idempotencyKeyBytesPerPrincipal: options.idempotencyKeyBytesPerPrincipal ??
      Limits.DEFAULT_IDEMPOTENCY_KEY_BYTES_PER_PRINCIPAL,
    changesHeartbeatMillis: options.changesHeartbeatMillis ?? Limits.DEFAULT_CHANGES_HEARTBEAT_MILLIS,
    changesBufferBytes: options.changesBufferBytes ?? Limits.DEFAULT_CHANGES_BUFFER_BYTES,
    changesStreamsPerPrincipal: options.changesStreamsPerPrincipal ?? Limits.DEFAULT_CHANGES_STREAMS_PER_PRINCIPAL,
    changesStallMillis: options.changesStallMillis ?? Limits.DEFAULT_CHANGES_STALL_MILLIS,
    dashboard: dashboard.right
  }
  const invalid = positiveInteger("maxBodyBytes", config.maxBodyBytes, "bytes") ??
    positiveInteger("maxBatchBodyBytes", config.maxBatchBodyBytes, "bytes") ??
    positiveInteger("bodyTimeoutMillis", config.bodyTimeoutMillis, "milliseconds", { most: MAX_TIMER_MILLIS }) ??
    positiveInteger("retryAfterSeconds", config.retryAfterSeconds, "seconds") ??
    positiveInteger("idempotencyKeyExpirySeconds", config.idempotencyKeyExpirySeconds, "seconds") ??
    positiveInteger("idempotencyKeysPerPrincipal", config.idempotencyKeysPerPrincipal, "keys") ??
    positiveInteger("idempotencyKeyBytesPerPrincipal", config.idempotencyKeyBytesPerPrincipal, "bytes", {
      least: LEAST_KEY_BYTES
    }) ??
    positiveInteger("changesHeartbeatMillis", config.changesHeartbeatMillis, "milliseconds", {
      most: Limits.MAX_CHANGES_HEARTBEAT_MILLIS
    }) ??
    positiveInteger("changesBufferBytes", config.changesBufferBytes, "bytes") ??
    positiveInteger("changesStreamsPerPrincipal", config.changesStreamsPerPrincipal, "streams") ??
    positiveInteger("changesStallMillis", config.changesStallMillis, "milliseconds", { most: MAX_TIMER_MILLIS })
  return invalid === undefined ? Either.right(config) : Either.left(invalid)
}
