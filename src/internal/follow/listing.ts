/**
 * Whether the process a follower follows lists it in its fleet (docs/scaling-out.md, "Who may report"), and what the
 * follower says when it does not, or when its token expired: each cause logged once, never per connection. A name the
 * registry refuses (taken, or its fleet full) makes the next connection open without it, unlisted, at once; the one
 * after tries the name again.
 *
 * @internal
 */
import { Effect } from "effect"
import type * as Client from "./client.js"
import { type State, unsafeLog } from "./state.js"

// Logs `message` the first time `cause` happens.
const warnOnce = (state: State, cause: string, message: string): void => {
  if (state.warned.has(cause)) return
  state.warned.add(cause)
  unsafeLog(state, Effect.logWarning(message))
}

/** Where the next connection goes: with the follower's name, unless the registry just refused it. */
export const target = (state: State): Client.Target =>
  state.unlisted ? { ...state.settings.target, name: undefined } : state.settings.target

/** A stream opened: named, and given no `Follower-Stream`, it is unlisted (its token lacks `fleet:report`). */
export const opened = (state: State, stream: string | undefined): void => {
  const name = state.settings.target.name
  if (name === undefined || state.unlisted || stream !== undefined) return
  warnOnce(
    state,
    "unlisted",
    `route table: the registry took the stream but not the name ${JSON.stringify(name)}: its token lacks the scope ` +
      "fleet:report, so this follower follows unlisted (GET /v1/routing/followers does not show it); give the " +
      "token fleet:report to list it (docs/authentication.md)"
  )
}

// Refusals of the follower's name alone: the stream is served without it.
const NAME_REFUSALS = new Set(["follower_name_taken", "too_many_followers"])

/**
 * A refusal of the name (taken, or the fleet full): the follower opens its next stream unlisted at once, and logs
 * why once. `false` for any other loss.
 */
export const unlist = (state: State, lost: Client.Lost): boolean => {
  if (state.unlisted || state.settings.target.name === undefined || !NAME_REFUSALS.has(lost.code ?? "")) return false
  state.unlisted = true
  warnOnce(
    state,
    lost.code!,
    `route table: the registry did not list this follower (${lost.reason}); following unlisted, and trying the name ` +
      "again at the next connection"
  )
  return true
}

/** The registry's `expired` event: it ends the stream next, and refuses the token until it is renewed. */
export const expired = (state: State): void =>
  unsafeLog(
    state,
    Effect.logWarning(
      "route table: the registry ended the change stream because the follower's token expired; routing on with the " +
        "last table, reconnecting (give the follower a token that has not expired)"
    )
  )
