/**
 * `GET /v1/routing/match?method=<METHOD>&path=<request target>[&host=…][&header=name:value…]`: which stored route
 * serves a request, as this
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
 * The question: a request's method and its target (a path, with or without a query string, which conditions read),
 * and (docs/router.md) the key a split would read from the request, its host and its headers.
 */
export interface Question {
  readonly method: string
  readonly path: string
  readonly key?: string | undefined
  /** The request's headers by lowercase name (`host` among them when given), for routes with conditions. */
  readonly headers?: Readonly<Record<string, string>> | undefined
}

/** The most `header` parameters of one question: a request's conditions name at most 8 headers. */
export const MAX_HEADERS = 32

// RFC 9110 §5.6.2 `token`: a header's name.
const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/
const CONTROL = /[\u0000-\u0008\u000a-\u001f\u007f]/

// The `header` parameters (`name:value`, repeatable) and `host` as the request's headers, or their problems.
const headersOf = (
  given: ReadonlyArray<string>,
  host: string | undefined
): Either.Either<Record<string, string> | undefined, ReadonlyArray<Route.FieldIssue>> => {
  if (given.length === 0 && host === undefined) return Either.right(undefined)
  const issues: Array<Route.FieldIssue> = []
  if (given.length > MAX_HEADERS) {
    issues.push({ path: "header", message: `is given ${given.length} times: give at most ${MAX_HEADERS} headers` })
  }
  const headers: Record<string, string> = Object.create(null)
  for (const [i, text] of given.slice(0, MAX_HEADERS).entries()) {
    const colon = text.indexOf(":")
    const name = colon < 0 ? text : text.slice(0, colon)
    if (colon < 0 || !TOKEN.test(name) || CONTROL.test(text)) {
      issues.push({
        path: `header[${i}]`,
        message: `must be a header as name:value, such as "x-version:2" (got ${JSON.stringify(text)})`
      })
      continue
    }
    const lower = name.toLowerCase()
    // Several fields of one name read as one value joined with ", ", as Node and the Fetch API join them.
    const value = text.slice(colon + 1).trim()
    headers[lower] = headers[lower] === undefined ? value : `${headers[lower]}, ${value}`
  }
  if (host !== undefined) headers.host = host
  return issues.length > 0 ? Either.left(issues) : Either.right(headers)
}

const RULES = {
  method: Grammar.checkMethod,
  path: (value: string) =>
    value.charCodeAt(0) === 47 /* / */
      ? undefined
      : `must be a request target starting with "/", such as "/users/42?fields=name" (got ${JSON.stringify(value)})`,
  // Any text, as a request may carry: an empty key is no key, as the router reads it.
  key: () => undefined,
  host: (value: string) =>
    value.length >= 1 && value.length <= 261 && !/[\s\u0000-\u001f\u007f/]/.test(value)
      ? undefined
      : `must be the request's Host, such as "api.example.com" or "api.example.com:8080" (got ${JSON.stringify(value)})`
}

const REQUIRED = {
  method: "is required: give the request's method, such as GET",
  path: "is required: give the request's target, such as /users/42"
}

/** The question in a raw query string, or every problem with it (as the listing's query reports them). */
export const parseQuestion = (raw: string): Either.Either<Question, ReadonlyArray<Route.FieldIssue>> => {
  // `header` may repeat, unlike every other parameter: it is read apart.
  const params = new URLSearchParams(raw)
  const given = params.getAll("header")
  params.delete("header")
  return Either.flatMap(
    parseParameters(params.toString(), { ...RULES, header: () => undefined }, "the match query"),
    ({ host, key, method, path }) =>
      Either.flatMap(headersOf(given, host), (headers) =>
        method !== undefined && path !== undefined
          ? Either.right({ method, path, key, headers })
          : Either.left([
            ...(method === undefined ? [{ path: "method", message: REQUIRED.method }] : []),
            ...(path === undefined ? [{ path: "path", message: REQUIRED.path }] : [])
          ]))
  )
}

const OUTCOMES = {
  Found: "route",
  MethodNotAllowed: "method_not_allowed",
  NotFound: "not_found",
  BadPath: "bad_path"
} as const

const candidateJson = ({ condition, reason, route }: RouteTable.Candidate<Route.Route>): string =>
  `{"route":${Route.toJson(route)},"reason":${JSON.stringify(reason)}${
    condition === undefined ? "" : `,"condition":${JSON.stringify(condition)}`
  }}`

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
    const { headers, key, method, path } = question.right
    const explanation = RouteTable.explain(table, method, path, headers)
    const entry = HostPaths.serving(hostPaths, path)
    return Answers.json(200, entry === undefined ? bodyOf(explanation, key) : hostBodyOf(explanation, entry))
  })
