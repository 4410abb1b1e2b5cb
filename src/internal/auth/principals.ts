/**
 * What the HTTP core makes of every authenticator it is given (the static tokens, the JWT authenticator and a host's
 * own alike): a principal id it can store, log and compare, checked once here; and a warning for each refusal, bounded
 * per reason and minute, so that an operator sees why a token is refused without a client filling the log.
 *
 * @internal
 */
import type { Context } from "effect"
import { Clock, Effect, Exit, Redacted } from "effect"
import type { Authenticator, Principal } from "../../Authenticator.js"
import * as Limits from "../limits.js"
import { InvalidToken } from "./errors.js"

type Service = Context.Tag.Service<Authenticator>

// Characters a principal id may not hold, because a log line, a terminal or a column of the change log would show
// something else than the id: control characters (NUL, which Postgres cannot store, among them), line and paragraph
// separators, the bidirectional overrides and isolates (text shown in another order than it is), and unpaired
// surrogates (no UTF-8 for them: a log shows U+FFFD, and two ids can read the same).
const UNPRINTABLE = /[\p{Cc}\p{Cs}\p{Zl}\p{Zp}\u202A-\u202E\u2066-\u2069]/u

/** Whether `text` holds only printable characters (see `UNPRINTABLE`): for ids and for the text that makes them. */
export const isPrintable = (text: string): boolean => !UNPRINTABLE.test(text)

/**
 * Why `id` cannot name a principal, or `undefined`: 1 to `MAX_PRINCIPAL_ID_LENGTH` printable characters. The id is
 * never quoted: it may hold what a log must not show.
 */
export const checkId = (id: unknown): string | undefined => {
  if (typeof id !== "string") return `the principal id is not a string (got a ${id === null ? "null" : typeof id})`
  if (id.length === 0 || id.length > Limits.MAX_PRINCIPAL_ID_LENGTH) {
    return `the principal id has ${id.length} characters: it must have 1 to ${Limits.MAX_PRINCIPAL_ID_LENGTH}`
  }
  return isPrintable(id)
    ? undefined
    : "the principal id holds a control character, a line separator, a bidirectional override or an unpaired " +
      "surrogate: it must be printable text"
}

/** A token at least this long found in a text is the token written into it, not a coincidence of a few characters. */
export const TOKEN_IN_TEXT = 8

// ---------------------------------------------------------------------------------------------------------------
// The refusals' log
// ---------------------------------------------------------------------------------------------------------------

/** Each reason is logged at most once per this interval. */
const REFUSAL_LOG_INTERVAL_MILLIS = 60_000

/** The most reasons logged per interval; refusals for further reasons are counted, not logged. */
const REFUSAL_LOG_REASONS = 32

/** The refusals of one interval: when it started, the reasons logged in it, and the refusals not logged. */
export interface RefusalLog {
  start: number
  readonly logged: Set<string>
  unlogged: number
}

export const refusalLog = (): RefusalLog => ({ start: Number.NEGATIVE_INFINITY, logged: new Set(), unlogged: 0 })

// Whether the refusal for `reason` is logged now; with the refusals the last interval left unlogged, once.
const admit = (log: RefusalLog, now: number, reason: string): { readonly logged: boolean; readonly before: number } => {
  let before = 0
  if (now - log.start >= REFUSAL_LOG_INTERVAL_MILLIS) {
    before = log.unlogged
    log.start = now
    log.logged.clear()
    log.unlogged = 0
  }
  if (log.logged.has(reason) || log.logged.size >= REFUSAL_LOG_REASONS) {
    log.unlogged++
    return { logged: false, before }
  }
  log.logged.add(reason)
  return { logged: true, before }
}

/** The longest reason logged; a longer one (an authenticator of the host's may quote the request) is cut. */
const MAX_LOGGED_REASON = 256

// The reason as logged: an authenticator of the host's that wrote the token into it is not believed.
const shown = (reason: string, token: Redacted.Redacted<string>): string => {
  const value = Redacted.value(token)
  if (value.length >= TOKEN_IN_TEXT && reason.includes(value)) {
    return "(the authenticator's reason is withheld: it contains the token)"
  }
  return reason.length > MAX_LOGGED_REASON ? `${reason.slice(0, MAX_LOGGED_REASON)}…` : reason
}

const logged = (log: RefusalLog, token: Redacted.Redacted<string>, error: unknown): Effect.Effect<void> => {
  const { _tag, reason } = error as { readonly _tag?: unknown; readonly reason?: unknown }
  if ((_tag !== "InvalidToken" && _tag !== "AuthenticatorUnavailable") || typeof reason !== "string") return Effect.void
  return Clock.clockWith((clock) => {
    const text = `${_tag === "InvalidToken" ? "token refused" : "authenticator unavailable"}: ${shown(reason, token)}`
    const { before, logged } = admit(log, clock.unsafeCurrentTimeMillis(), text)
    if (!logged) return Effect.void
    const earlier = before === 0 ? "" : ` (${before} more refusals in the interval before were not logged)`
    return Effect.logWarning(`route-registry: ${text}${earlier}`)
  })
}

const checked = (principal: Principal): Effect.Effect<Principal, InvalidToken> => {
  const problem = checkId(principal.id)
  return problem === undefined
    ? Exit.succeed(principal)
    : Exit.fail(new InvalidToken({ reason: `the authenticator's principal: ${problem}` }))
}

/**
 * `authenticator` as the core uses it: a principal whose id `checkId` refuses is refused as an invalid token, and every
 * refusal (`InvalidToken`, `AuthenticatorUnavailable`) is logged as a warning, each reason at most once per
 * a minute (`REFUSAL_LOG_INTERVAL_MILLIS`). A principal decided at once (an `Exit`) stays decided at once.
 */
export const guarded = (authenticator: Service, log: RefusalLog): Service => ({
  authenticate: (token) => {
    const result = authenticator.authenticate(token)
    // The common case, a usable principal decided at once, is returned as it is: no fiber, no allocation.
    const decided = Exit.isExit(result) ? result as Exit.Exit<Principal, unknown> : undefined
    if (decided !== undefined && Exit.isSuccess(decided) && checkId(decided.value.id) === undefined) return result
    return Effect.tapError(Effect.flatMap(result, checked), (error) => logged(log, token, error))
  }
})
