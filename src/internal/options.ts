/**
 * The core's options, checked once when it is made.
 *
 * @internal
 */
import { Either } from "effect"
import { InvalidOption } from "../InvalidOption.js"
import type { Options } from "../RoutingHandler.js"
import * as Limits from "./limits.js"

/** The options with their defaults applied, every one checked. */
export interface Config {
  readonly maxBodyBytes: number
  readonly bodyTimeoutMillis: number
  readonly retryAfterSeconds: number
  readonly idempotencyKeyExpirySeconds: number
}

// A positive safe integer, or the error naming the option and its allowed range.
const positiveInteger = (option: keyof Config, value: unknown, unit: string): InvalidOption | undefined =>
  typeof value === "number" && Number.isSafeInteger(value) && value > 0
    ? undefined
    : new InvalidOption({
      option,
      message: `${option} must be a whole number of ${unit} from 1 to ${Number.MAX_SAFE_INTEGER} (got ${
        typeof value === "number" ? value : typeof value
      })`
    })

export const resolve = (options: Options): Either.Either<Config, InvalidOption> => {
  const config: Config = {
    maxBodyBytes: options.maxBodyBytes ?? Limits.DEFAULT_MAX_BODY_BYTES,
    bodyTimeoutMillis: options.bodyTimeoutMillis ?? Limits.DEFAULT_BODY_TIMEOUT_MILLIS,
    retryAfterSeconds: options.retryAfterSeconds ?? Limits.DEFAULT_RETRY_AFTER_SECONDS,
    idempotencyKeyExpirySeconds: options.idempotencyKeyExpirySeconds ?? Limits.DEFAULT_IDEMPOTENCY_KEY_EXPIRY_SECONDS
  }
  const invalid = positiveInteger("maxBodyBytes", config.maxBodyBytes, "bytes") ??
    positiveInteger("bodyTimeoutMillis", config.bodyTimeoutMillis, "milliseconds") ??
    positiveInteger("retryAfterSeconds", config.retryAfterSeconds, "seconds") ??
    positiveInteger("idempotencyKeyExpirySeconds", config.idempotencyKeyExpirySeconds, "seconds")
  return invalid === undefined ? Either.right(config) : Either.left(invalid)
}
