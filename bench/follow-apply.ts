/**
 * What a follower table spends applying one change of its registry's stream: `upsert` events of new routes and of
 * new versions, and `delete` events, each handed to the follower's event sink as its connection parses them (the
 * table, the listing index and its own replay ring, for relays). `npm run bench:follow-apply`.
 */
import { Effect, Either, Redacted } from "effect"
import { performance } from "node:perf_hooks"
import * as Follower from "../src/internal/follow/follower.js"
import * as FollowSettings from "../src/internal/follow/settings.js"
import * as FollowState from "../src/internal/follow/state.js"
import * as ReplayRing from "../src/internal/table/replayRing.js"
import * as Route from "../src/Route.js"

const ROUTES = 1_000
const ROUNDS = 20

const id = (i: number) => `01936f1e-5f1a-7cc3-9a2b-${i.toString(16).padStart(12, "0")}`
const routeOf = (i: number, version: number) =>
  new Route.Route({
    id: id(i) as Route.RouteId,
    method: "GET" as Route.HttpMethod,
    path: `/fleet/r${i}/items/:id/v${version}` as Route.RoutePath,
    middleware: ["auth", "audit"] as Array<Route.MiddlewareName>,
    handler: `handler${i}` as Route.HandlerName,
    createdAt: new Date(1_764_000_000_000 + i)
  }, true)

const upserts = (version: number) => Array.from({ length: ROUTES }, (_, i) => Route.toJson(routeOf(i, version)))
const deletes = Array.from({ length: ROUTES }, (_, i) => `{"id":"${id(i)}"}`)

const main = Effect.gen(function*() {
  const state = yield* FollowState.makeState(
    ReplayRing.make(),
    Either.getOrThrow(FollowSettings.resolve({ url: "http://127.0.0.1:1", token: Redacted.make("t") }))
  )
  const sink = Follower.sink(state)
  sink.event({ type: "ready", data: "", id: "" })
  let seq = 0
  const apply = (type: string, texts: ReadonlyArray<string>): number => {
    const start = performance.now()
    for (const data of texts) sink.event({ type, data, id: `cursor.${(++seq).toString(36)}` })
    return (performance.now() - start) * 1000 / texts.length
  }
  const upsertTimes: Array<number> = []
  const deleteTimes: Array<number> = []
  for (let round = 0; round < ROUNDS; round++) {
    const created = upserts(round * 2)
    const updated = upserts(round * 2 + 1)
    upsertTimes.push((apply("upsert", created) + apply("upsert", updated)) / 2)
    deleteTimes.push(apply("delete", deletes))
  }
  // The first half of the rounds warms the JIT up.
  const median = (timings: Array<number>) => {
    const measured = timings.slice(ROUNDS / 2).sort((a, b) => a - b)
    return measured[Math.floor(measured.length / 2)]!.toFixed(2)
  }
  console.log(
    `follower apply, µs per event (median of ${ROUNDS / 2} rounds of ${ROUTES} routes created, updated, deleted): ` +
      `upsert ${median(upsertTimes)}, delete ${median(deleteTimes)}`
  )
})

Effect.runPromise(main)
