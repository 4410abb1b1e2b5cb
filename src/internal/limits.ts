/**
 * The HTTP core's default values, each in one place: the core, the problem descriptions and the OpenAPI document read
 * them from here. The stores' bounds live with the store contract (internal/store/rules.ts).
 *
 * @internal
 */

/**
 * The longest principal id, in UTF-16 code units as JavaScript counts a string's length: what the core accepts from an
 * authenticator, and what the change log's `actor` filter takes.
 */
export const MAX_PRINCIPAL_ID_LENGTH = 256

/** Largest accepted request body in bytes by default (64 KiB). */
export const DEFAULT_MAX_BODY_BYTES = 64 * 1024

/** Largest accepted body of a change set (`POST /v1/routing/batch`) in bytes by default (4 MiB). */
export const DEFAULT_MAX_BATCH_BODY_BYTES = 4 * 1024 * 1024

/** Longest time a body may take to arrive by default, in milliseconds. */
export const DEFAULT_BODY_TIMEOUT_MILLIS = 10_000

/** Seconds a client is told to wait when the store is unavailable, by default. */
export const DEFAULT_RETRY_AFTER_SECONDS = 1

/** How long a create's `Idempotency-Key` and its first answer are remembered by default: 24 hours. */
export const DEFAULT_IDEMPOTENCY_KEY_EXPIRY_SECONDS = 24 * 60 * 60

/**
 * The most idempotency keys one principal may hold at once, by default: keys past their expiry do not count. A create
 * with a new key past it is refused (429), so one client cannot fill the store with keys.
 */
export const DEFAULT_IDEMPOTENCY_KEYS_PER_PRINCIPAL = 10_000

/** The most bytes one principal's idempotency keys may take at once (see `IDEMPOTENCY_KEY_OVERHEAD_BYTES`): 4 MiB. */
export const DEFAULT_IDEMPOTENCY_KEY_BYTES_PER_PRINCIPAL = 4 * 1024 * 1024

/** How often an open change stream is sent a heartbeat by default, in milliseconds: well within 15 s. */
export const DEFAULT_CHANGES_HEARTBEAT_MILLIS = 10_000

/**
 * The longest interval between two heartbeats a host may set: followers take a stream silent for 15 s and a margin
 * for dead (`RouteFollower.Options.idleTimeout`, 20 s by default), and count a live one current until then.
 */
export const MAX_CHANGES_HEARTBEAT_MILLIS = 15_000

/** The most bytes a change stream's connection may hold unsent by default before it is closed (1 MiB). */
export const DEFAULT_CHANGES_BUFFER_BYTES = 1024 * 1024

/**
 * The most change streams one principal may hold open at once by default: a fleet usually follows with one token, so
 * this is a fleet's size with room to spare, while it still bounds what one leaked token can make a registry hold.
 */
export const DEFAULT_CHANGES_STREAMS_PER_PRINCIPAL = 2_000

/**
 * How long, by default, a change stream catching up (a snapshot, the changes after a cursor) or held (a cursor ahead
 * of this process) may go without its connection taking what it was sent, before it is closed, in milliseconds.
 */
export const DEFAULT_CHANGES_STALL_MILLIS = 30_000

/**
 * The most followers, relayed ones included, connected to one process at once (`FLEET_FOLLOWERS_PER_PROCESS`) and
 * through one principal's streams (`FLEET_FOLLOWERS_PER_PRINCIPAL`): a join or a report past either is refused (429
 * `too_many_followers`), so what a token reports never makes the fleet grow without bound.
 */
export const FLEET_FOLLOWERS_PER_PROCESS = 50_000
export const FLEET_FOLLOWERS_PER_PRINCIPAL = 20_000

/** Seconds a follower refused for the fleet's bounds is told to wait before it reports again. */
export const FLEET_RETRY_AFTER_SECONDS = 10

/** Routes in one page of a listing when the query gives no `limit`. */
export const DEFAULT_PAGE_SIZE = 100

/** Most routes in one page of a listing. */
export const MAX_PAGE_SIZE = 1000

/** Most characters of a listing's search text (`q`). */
export const MAX_SEARCH_LENGTH = 256

/** `bytes` for people: "64 KiB", "1 MiB", "1000 bytes". */
export const describeBytes = (bytes: number): string =>
  bytes % (1024 * 1024) === 0
    ? `${bytes / (1024 * 1024)} MiB`
    : bytes % 1024 === 0
    ? `${bytes / 1024} KiB`
    : `${bytes} bytes`

/** `millis` for people: "10 s", "1500 ms". */
export const describeMillis = (millis: number): string => millis % 1000 === 0 ? `${millis / 1000} s` : `${millis} ms`
