/**
 * `GET /v1/routing/match?method=<METHOD>&path=<request target>`: which stored route serves a request, as this
 * process's table decides it (the router's own lookup), with every other route whose pattern matches the path and why
 * it does not serve (docs/http-api.md). Reads the table only, never the store.
 *
 * @internal
 */
import { Effect, Either } from "effect"
import * as HostPaths from "../../HostPaths.js"
import * as Route from "../../Route.js"
import * as RouteTable from "../../RouteTable.js"
import * as Grammar from "../route/grammar.js"
import * as Split from "../route/split.js"
import * as Answers from "./answers.js"
import { type Refusal, refuse } from "./answers.js"
import type { Request, Response } from "./exchange.js"
import { parseParameters } from "./listQuery.js"

/**
 * The question: a request's method and its target (a path, with or without a query string), and (docs/router.md) the key a
 * split would read from the request.
 */
export interface Question {
  readonly method: string
  readonly path: string
  readonly key?: string | undefined
}

const RULES = {
  method: Grammar.checkMethod,
  path: (value: string) =>
    value.charCodeAt(0) === 47 /* / */
      ? undefined
      : `must be a request target starting with "/", such as "/users/42?fields=name" (got ${JSON.stringify(value)})`,
  // Any text, as a request may carry: an empty key is no key, as the router reads it.
  key: () => undefined
}

const REQUIRED = {
  method: "is required: give the request's method, such as GET",
  path: "is required: give the request's target, such as /users/42"
}

/** The question in a raw query string, or every problem with it (as the listing's query reports them). */
export const parseQuestion = (raw: string): Either.Either<Question, ReadonlyArray<Route.FieldIssue>> =>
  Either.flatMap(
    parseParameters(raw, RULES, "the match query"),
    ({ key, method, path }) =>
      method !== undefined && path !== undefined
        ? Either.right({ method, path, key })
        : Either.left([
          ...(method === undefined ? [{ path: "method", message: REQUIRED.method }] : []),
          ...(path === undefined ? [{ path: "path", message: REQUIRED.path }] : [])
        ])
  )

const OUTCOMES = {
  Found: "route",
  MethodNotAllowed: "method_not_allowed",
  NotFound: "not_found",
  BadPath: "bad_path"
} as const

const candidateJson = ({ reason, route }: RouteTable.Candidate<Route.Route>): string =>
  `{"route":${Route.toJson(route)},"reason":${JSON.stringify(reason)}}`

// A split's choice for the key, as the router would make it for a request carrying it (no override).
const splitJson = (route: Route.Route, key: string | undefined): string => {
  if (route.split === undefined) return ""
  const { bucket, handler } = Split.choose(route.split, route.id, route.handler, key, undefined)
  return `,"split":${JSON.stringify({ key: bucket === null ? null : key, bucket, handler })}`
}

/**
 * The answer's body: `{ outcome, route, split?, params, allow, candidates }`, each route as `GET /v1/routing/{id}` has
 * it; `split` beside a route that has one, the choice for `key`.
 */
export const bodyOf = (explanation: RouteTable.Explanation<Route.Route>, key?: string): string => {
  const resolution = explanation.resolution
  const found = resolution._tag === "Found" ? resolution : undefined
  return `{"outcome":"${OUTCOMES[resolution._tag]}","route":${
    found === undefined ? "null" : Route.toJson(found.route) + splitJson(found.route, key)
  },"params":${found === undefined ? "null" : JSON.stringify(found.params)},"allow":${
    JSON.stringify(explanation.allow)
  },"candidates":[${explanation.candidates.map(candidateJson).join(",")}]}`
}

/**
 * The answer's body for a path the host serves itself (`entry` declares it): no stored route serves it, whatever its
 * method (`not_found`, the router hands it to the host), `servedByHost` names the entry, and every stored route whose
 * pattern matches the path is a candidate, for that reason.
 */
export const hostBodyOf = (explanation: RouteTable.Explanation<Route.Route>, entry: string): string => {
  const resolution = explanation.resolution
  const reason = `the host serves this path itself (it declares ${JSON.stringify(entry)}), before any stored route`
  const routes = [
    ...(resolution._tag === "Found" ? [resolution.route] : []),
    ...explanation.candidates.map((c) => c.route)
  ]
  return `{"outcome":"not_found","route":null,"params":null,"allow":[],"servedByHost":${JSON.stringify(entry)},` +
    `"candidates":[${routes.map((route) => candidateJson({ route, reason })).join(",")}]}`
}

/**
 * The answer for an authorized request: the table's decision (or, for a path the host serves itself, the host's),
 * `404 not_found` when this process keeps no table, `400 invalid_query` for a bad question.
 */
export const answer = (
  table: RouteTable.Table<Route.StoredRoute> | undefined,
  request: Request,
  hostPaths: HostPaths.Paths
): Effect.Effect<Response, Refusal> =>
  Effect.gen(function*() {
    if (table === undefined) return yield* refuse(Answers.NO_TABLE)
    const question = parseQuestion(request.query)
    if (Either.isLeft(question)) return yield* refuse(Answers.invalidMatchQuery(question.left))
    const { key, method, path } = question.right
    const explanation = RouteTable.explain(table, method, path)
    const entry = HostPaths.serving(hostPaths, path)
    return Answers.json(200, entry === undefined ? bodyOf(explanation, key) : hostBodyOf(explanation, entry))
  })
