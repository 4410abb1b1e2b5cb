/**
 * `sync --wait`: waiting for the fleet to apply the sync's last change (docs/cli.md), through `GET
 * /v1/routing/followers?revision=R&wait=S`, asked again while the wait asked for is longer than one request may wait.
 *
 * @internal
 */
import { Clock, Console, Effect } from "effect"
import { MAX_WAIT_SECONDS } from "../http/followers.js"
import type * as Registry from "./apiClient.js"
import { FleetBehind, type RequestFailed } from "./errors.js"

type Fleet = Effect.Effect.Success<ReturnType<Registry.Registry["followers"]>>

const behindOf = (fleet: Fleet, revision: number) =>
  fleet.items.filter((item) => item.connected && (item.appliedRevision === null || item.appliedRevision < revision))

/** What the wait ended with, in lines a person reads: every follower current, or which are behind and where. */
export const render = (fleet: Fleet, revision: number): string => {
  const connected = fleet.items.filter((item) => item.connected).length
  const behind = behindOf(fleet, revision)
  if (behind.length === 0) {
    return `Every connected follower (${connected}) has applied revision ${revision}.\n`
  }
  return [
    `${behind.length} of ${connected} connected followers have not applied revision ${revision}:`,
    ...behind.map((item) =>
      `  ${item.name}${item.via === null ? "" : ` (via ${item.via})`} at ${item.address}: ${
        item.appliedRevision === null ? "has not reported" : `applied ${item.appliedRevision}`
      }`
    )
  ].join("\n") + "\n"
}

/**
 * Waits up to `seconds` for every connected follower of the registry to apply `revision`, prints where the fleet
 * stands, and fails with `FleetBehind` when some are still behind.
 */
export const wait = (
  registry: Registry.Registry,
  revision: number,
  seconds: number
): Effect.Effect<void, RequestFailed | FleetBehind> =>
  Effect.gen(function*() {
    const deadline = (yield* Clock.currentTimeMillis) + seconds * 1000
    let fleet: Fleet
    while (true) {
      const left = Math.max(0, Math.ceil((deadline - (yield* Clock.currentTimeMillis)) / 1000))
      fleet = yield* registry.followers(revision, Math.min(left, MAX_WAIT_SECONDS))
      if (fleet.complete === true || left <= MAX_WAIT_SECONDS) break
    }
    yield* Console.log(render(fleet, revision).trimEnd())
    const behind = behindOf(fleet, revision).length
    if (behind > 0) return yield* new FleetBehind({ revision, behind })
  })
