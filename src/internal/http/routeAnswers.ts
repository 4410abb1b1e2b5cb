/**
 * The answers that carry stored routes: one route with its ETag (a 200 kept per revision when the store keeps its
 * routes in memory, as a hand-written server keeps them), and a page of the list.
 *
 * @internal
 */
import { Effect } from "effect"
import * as Route from "../../Route.js"
import type * as RouteRepository from "../../RouteRepository.js"
import * as Answers from "./answers.js"
import * as Conditional from "./conditional.js"
import { COLLECTION, type Response } from "./exchange.js"
import * as ListQuery from "./listQuery.js"

// How many routes' 200s are kept. Keeping every route's made a store of 200,000 routes answer at 0.63x of one of
// 1,000 (bench/, the scale scenario), and evicting the oldest at 0.40x: under reads spread over many routes, building
// and dropping answers costs more than it saves. So the first ids answered are kept, and no more.
export const KEPT_ANSWERS = 10_000

export interface KeptAnswer {
  readonly route: Route.StoredRoute
  readonly answer: Answers.Reused
}

/** Routes' kept 200s by id. */
export type Kept = Map<string, KeptAnswer>

/**
 * A route's answer with its ETag. The Location and ETag headers are built from the id and revision alone: a route of
 * any other form (a faulty store) is a defect, never a header. A 200 is kept per revision in `answers` (when the store
 * keeps its routes in memory); another answer reuses a kept 200's body.
 */
export const answer = (
  answers: Kept | undefined,
  status: number,
  route: Route.StoredRoute,
  headers?: Record<string, string>
): Effect.Effect<Response> => {
  const entry = answers?.get(route.id)
  const kept = entry?.route === route ? entry.answer : undefined
  if (kept !== undefined) {
    return Effect.succeed(
      status === 200 && headers === undefined ? kept : Answers.json(status, kept.body, { ...kept.headers, ...headers })
    )
  }
  if (!(Route.isRouteId(route.id) && Number.isSafeInteger(route.revision))) {
    return Effect.dieMessage(
      `the store returned a malformed route: id ${JSON.stringify(route.id)}, revision ${String(route.revision)}`
    )
  }
  const body = Route.toJson(route)
  const etag = Conditional.etagOf(route.revision)
  // A new revision replaces its route's entry; past KEPT_ANSWERS ids, other routes are answered without keeping.
  if (
    status !== 200 || headers !== undefined || answers === undefined ||
    (entry === undefined && answers.size >= KEPT_ANSWERS)
  ) {
    return Effect.succeed(Answers.json(status, body, { etag, ...headers }))
  }
  const reused = new Answers.Reused(200, { "content-type": Answers.JSON_TYPE, etag }, body)
  answers.set(route.id, { route, answer: reused })
  return Effect.succeed(reused)
}

/** A page of the list, with its `Link` to the next one. */
export const page = (query: RouteRepository.ListQuery, result: RouteRepository.Page, base: string): Response => {
  const last = result.items[result.items.length - 1]
  const next = result.hasMore && last !== undefined ? last.id : undefined
  const items = result.items.map(Route.toJson).join(",")
  return Answers.json(
    200,
    `{"items":[${items}],"nextCursor":${next === undefined ? "null" : `"${ListQuery.encodeCursor(next)}"`}}`,
    next === undefined ? undefined : { link: ListQuery.nextLink(base + COLLECTION, query, next) }
  )
}
