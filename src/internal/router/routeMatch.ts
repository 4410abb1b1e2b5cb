/**
 * The stored route serving a request and its parameters, kept on the request (or the framework's context) for the
 * host's code: its route functions and the hooks that run after the match. One home for every router form and
 * integration, each of which exposes it through its own typed accessor (`matchOf`).
 *
 * @internal
 */
import type * as Route from "../../Route.js"
import type * as Split from "../../Split.js"

/**
 * The route that serves a request, and its parameters (percent-decoded); for a route with a split, the split's choice
 * (the handler that serves the request, the key and its bucket).
 */
export interface Match {
  readonly route: Route.StoredRoute
  readonly params: Readonly<Record<string, string>>
  readonly split?: Split.Choice
}

/** The match of a found route, with the split's choice when there is one (no new object for a route without). */
export const withChoice = (found: Match, choice: Split.Choice | undefined): Match =>
  choice === undefined ? found : { route: found.route, params: found.params, split: choice }

const MATCH = Symbol.for("route-registry/Match")

interface Holder {
  [MATCH]?: Match
}

/** Keeps `match` on `holder` (a Node request, a Fastify request, a Hono context). */
export const set = (holder: object, match: Match): void => {
  ;(holder as Holder)[MATCH] = match
}

/** The match kept on `holder`, if a stored route serves it. */
export const get = (holder: object): Match | undefined => (holder as Holder)[MATCH]
