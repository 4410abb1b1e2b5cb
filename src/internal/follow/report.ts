/**
 * A follower's reports to the process it follows (docs/scaling-out.md, "The report protocol"): the revision it has
 * applied, with its own followers' entries when it is a relay, sent on `POST <registry>/v1/routing/followers` naming
 * the open stream. A report goes out within `GAP_MILLIS` of a change applied (or of a change in its own fleet), and at
 * least every `EVERY_MILLIS` while nothing changes; never more often than the registry takes them.
 *
 * @internal
 */
import { Duration, Effect, Queue, Redacted } from "effect"
import * as Http from "node:http"
import * as Https from "node:https"
import * as Os from "node:os"
import * as Client from "./client.js"
import * as Fleet from "./fleet.js"
import type * as FollowState from "./state.js"

/** Where reports go. */
export interface Target {
  /** `<registry>/v1/routing/followers`. */
  readonly url: URL
  readonly token: Redacted.Redacted
}

/**
 * A follower's name when its host gives none: the host name and the process id (`web-7f9c-4121`), with every character
 * a name may not hold replaced by `-`, and cut to the longest name.
 */
export const defaultName = (): string =>
  `${Os.hostname()}-${process.pid}`.replace(/[^A-Za-z0-9._:@-]/g, "-").replace(/^[^A-Za-z0-9]+/, "")
    .slice(-Fleet.MAX_NAME_LENGTH) || `follower-${process.pid}`

/** The least time between two reports: changes applied meanwhile go in the next one. */
export const GAP_MILLIS = 100

/** The longest time between two reports while nothing changes (the protocol's bound is 15 s). */
export const EVERY_MILLIS = 10_000

// How long a report may take before it is given up (the next one says the same, newer).
const TIMEOUT_MILLIS = 10_000

/** How a report ended: taken, refused for a while (`retryAfterMillis`), or failed with a reason to log. */
type Outcome =
  | { readonly _tag: "Taken" }
  | { readonly _tag: "Later"; readonly retryAfterMillis: number }
  | { readonly _tag: "Failed"; readonly reason: string; readonly status?: number | undefined }

/** Sends one report's body; never fails. */
export const send = (target: Target, body: string): Effect.Effect<Outcome> =>
  Effect.async<Outcome>((resume) => {
    let ended = false
    const end = (outcome: Outcome) => {
      if (ended) return
      ended = true
      resume(Effect.succeed(outcome))
    }
    const client = target.url.protocol === "https:" ? Https : Http
    const request = client.request(target.url, {
      method: "POST",
      headers: {
        authorization: `Bearer ${Redacted.value(target.token)}`,
        "content-type": "application/json",
        "content-length": Buffer.byteLength(body)
      },
      timeout: TIMEOUT_MILLIS
    })
    request.on("timeout", () => {
      request.destroy()
      end({ _tag: "Failed", reason: `no answer within ${TIMEOUT_MILLIS} ms` })
    })
    request.on("error", (error) => end({ _tag: "Failed", reason: error.message }))
    request.on("response", (response) => {
      if (response.statusCode === 204) {
        response.resume()
        return end({ _tag: "Taken" })
      }
      if (response.statusCode === 429) {
        response.resume()
        const seconds = Number(response.headers["retry-after"])
        return end({ _tag: "Later", retryAfterMillis: Number.isFinite(seconds) ? seconds * 1000 : 1000 })
      }
      Client.refused(response, (lost) => end({ _tag: "Failed", reason: lost.reason, status: lost.status }))
    })
    request.end(body)
    return Effect.sync(() => {
      ended = true
      request.destroy()
    })
  })

/** The report of `state` now, `undefined` while it has nothing applied on an open stream to report. */
export const bodyOf = (state: FollowState.State, fleet: Fleet.Fleet): string | undefined => {
  const revision = state.cursor === undefined ? undefined : Fleet.revisionOf(state.cursor)
  if (!state.live || state.stream === undefined || revision === undefined) return undefined
  return `{"stream":${
    JSON.stringify(state.stream)
  },"appliedRevision":${revision},"source":"${state.source}","followers":[${
    upward(Fleet.entries(fleet)).map(Fleet.entryJson).join(",")
  }]}`
}

// What a relay passes on: at most the entries a report carries, its connected followers first.
const upward = (entries: Array<Fleet.Entry>): Array<Fleet.Entry> =>
  entries.length <= Fleet.MAX_ENTRIES
    ? entries
    : [...entries.filter((entry) => entry.connected), ...entries.filter((entry) => !entry.connected)]
      .slice(0, Fleet.MAX_ENTRIES)

/**
 * Reports until interrupted: cued by each event applied and each change of the follower's own fleet, and every
 * `EVERY_MILLIS` regardless. A report on a stream already closed (404) is dropped: the next stream's `ready` cues
 * another. A report lost on the way is sent again, backing off; a refusal waits for the next cue. Failures while the
 * stream is live (a registry that serves no fleet, say) are logged once until a report is taken again; while the
 * stream is lost, its own warning says it all.
 */
export const run = (state: FollowState.State, fleet: Fleet.Fleet, target: Target): Effect.Effect<never> =>
  Effect.gen(function*() {
    const cue = yield* Queue.sliding<void>(1)
    const cued = () => void Queue.unsafeOffer(cue, undefined)
    state.applied = cued
    cued() // what was applied before the reports started
    const unsubscribe = Fleet.subscribe(fleet, cued)
    yield* Effect.addFinalizer(() => Effect.sync(unsubscribe))
    // Connections lost in a row, and whether that (or a refusal) was logged since the last report taken.
    let lost = 0
    let warned = false
    while (true) {
      yield* Effect.ignore(Effect.timeout(Queue.take(cue), Duration.millis(EVERY_MILLIS)))
      const body = bodyOf(state, fleet)
      if (body === undefined) continue
      const outcome = yield* send(target, body)
      let pause = GAP_MILLIS
      if (outcome._tag === "Taken") {
        lost = 0
        warned = false
      } else if (outcome._tag === "Later") {
        pause = Math.max(GAP_MILLIS, outcome.retryAfterMillis)
        cued()
      } else if (outcome.status === undefined) {
        // Lost on the way (a kept-alive connection the registry closed as it was reused, a registry overloaded):
        // sent again soon, backing off; logged once it happens three times in a row.
        lost++
        pause = Math.min(EVERY_MILLIS, GAP_MILLIS * 2 ** lost)
        cued()
      }
      const refused = outcome._tag === "Failed" && outcome.status !== undefined && outcome.status !== 404
      if (outcome._tag === "Failed" && (refused || lost >= 3) && state.live && !warned) {
        warned = true
        yield* Effect.logWarning(`route table: the fleet report was not taken (${outcome.reason}); trying again`)
      }
      yield* Effect.sleep(Duration.millis(pause))
    }
  }).pipe(Effect.scoped)
