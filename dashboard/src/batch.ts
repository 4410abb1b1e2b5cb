/**
 * Change sets (`POST /v1/routing/batch`, docs/http-api.md): the page's actions on several routes at once are one batch,
 * so they take effect together or not at all.
 */
import { type Answer, call, describe, type Problem, type Route, routeName, type Session } from "./api.js"

/** The most operations one batch takes (docs/http-api.md). */
export const MAX_OPERATIONS = 5_000

export interface Update {
  readonly op: "update"
  readonly id: string
  readonly patch: Record<string, unknown>
}

export interface Done {
  readonly batch: string | null
  readonly revision: number | null
  readonly results: ReadonlyArray<{ readonly status: number; readonly route: Route | null }>
}

/** The same patch on each of `routes`, as one batch. */
export const patchAll = (
  session: Session,
  routes: ReadonlyArray<Route>,
  patch: Record<string, unknown>
): Promise<Answer<Done>> =>
  call<Done>(session, "/batch", {
    method: "POST",
    body: { operations: routes.map((route): Update => ({ op: "update", id: route.id, patch })) }
  })

/**
 * A refused batch in sentences: the problem, then each of its `errors[]` with the route its operation touched
 * (`operations[2].patch.tags[0]` is "GET /users: patch.tags[0]: …").
 */
export const explain = (problem: Problem, routes: ReadonlyArray<Route>): Array<string> => [
  describe(problem),
  ...(problem.errors ?? []).map((issue) => {
    const at = /^operations\[(\d+)\]\.?(.*)$/.exec(issue.path)
    const route = at === null ? undefined : routes[Number(at[1])]
    return route === undefined
      ? `${issue.path}: ${issue.message}`
      : `${routeName(route)}: ${at![2] === "" ? "" : `${at![2]}: `}${issue.message}`
  })
]
