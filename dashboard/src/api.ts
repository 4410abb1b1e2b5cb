/**
 * The routing API as the page calls it. The token lives in a `Session` object in memory, for the tab's life: it is
 * sent in the Authorization header and never put in a URL, a cookie, storage or the console.
 */
import type * as ProblemModule from "../../src/Problem.js"
import type * as RouteModule from "../../src/Route.js"
import type * as RouteRepositoryModule from "../../src/RouteRepository.js"

/** A middleware entry: a name, or a name with its configuration (docs/dashboard.md, the route's fields). */
export type MiddlewareEntry = string | { readonly name: string; readonly config?: unknown }

/** A header or query condition: its name, and the exact value required (presence is enough without one). */
export interface Condition {
  readonly name: string
  readonly value?: string
}

/** The conditions a route carries beside its method and path: each list and the host only when given. */
export interface When {
  readonly host?: string
  readonly headers?: ReadonlyArray<Condition>
  readonly query?: ReadonlyArray<Condition>
}

/** A share of a route's traffic sent to other handlers by a key read from each request. */
export interface Split {
  readonly by: string
  readonly group?: string
  readonly targets: ReadonlyArray<{ readonly handler: string; readonly weight: number }>
  readonly override?: string
}

/**
 * A route as the API answers it (the page imports the library's types, never its code), with the fields a route
 * carries only when they are not at their defaults, in their wire forms (docs/http-api.md).
 */
export type Route = Omit<typeof RouteModule.Route.Encoded, "middleware" | "enabled" | "split"> & {
  readonly middleware: ReadonlyArray<MiddlewareEntry>
  readonly enabled?: boolean
  readonly description?: string
  readonly tags?: ReadonlyArray<string>
  readonly when?: When
  readonly split?: Split
}

export type RouteFields = Omit<Route, "id" | "createdAt">

/** An entry of the change log as the API answers it (docs/history.md): its routes and time in their JSON forms. */
export type Entry = Omit<RouteRepositoryModule.HistoryEntry, "at" | "before" | "after"> & {
  readonly at: string
  readonly before: Route | null
  readonly after: Route | null
}

/** A page of the log, newest first. */
export interface EntryPage {
  readonly items: ReadonlyArray<Entry>
  readonly nextCursor: string | null
}

/** An RFC 9457 problem document, as the API answers errors; a network failure is one with status 0. */
export type Problem = Omit<ProblemModule.Problem, "type" | "code"> & { readonly code?: string }

export interface Answer<A> {
  readonly status: number
  readonly headers: Headers
  /** The body when the answer succeeded. */
  readonly value: A | undefined
  /** The problem when it did not. */
  readonly problem: Problem | undefined
}

/** The API's address: the page lives at `<base>/ui/`, under whatever prefix the host mounted the API. */
export const BASE: string = new URL("..", location.href).pathname.replace(/\/$/, "")

/** A signed-in tab: the token, and whether it may write (decided by asking the API). */
export class Session {
  writable = false
  readonly #token: string
  constructor(token: string) {
    this.#token = token
  }
  headers(extra: Record<string, string> = {}): Record<string, string> {
    return { authorization: `Bearer ${this.#token}`, ...extra }
  }
}

const problemOf = async (response: Response): Promise<Problem> => {
  const text = await response.text()
  try {
    const parsed = JSON.parse(text) as Partial<Problem>
    if (typeof parsed === "object" && parsed !== null && typeof parsed.detail === "string") {
      return { ...parsed, status: response.status } as Problem
    }
  } catch {
    // Not a problem document (a proxy's page): its status says enough.
  }
  return {
    status: response.status,
    title: response.statusText || "Error",
    detail: `The API answered ${response.status}.`
  }
}

export interface Call {
  readonly method?: string
  readonly query?: Query
  readonly body?: unknown
  readonly headers?: Record<string, string>
  readonly signal?: AbortSignal
}

/** A query: a parameter given several times (the tester's `header`) has a list. */
export type Query = Record<string, string | ReadonlyArray<string> | undefined>

/** The path below the API with its query; empty values are left out. */
export const url = (path: string, query: Query = {}): string => {
  const params = new URLSearchParams()
  for (const name in query) {
    for (const value of [query[name] ?? []].flat()) if (value !== "") params.append(name, value)
  }
  const search = params.toString()
  return BASE + path + (search === "" ? "" : `?${search}`)
}

/** Calls the API; a network failure is answered as a problem with status 0. */
export const call = async <A>(session: Session, path: string, options: Call = {}): Promise<Answer<A>> => {
  const headers = session.headers(options.headers)
  if (options.body !== undefined) headers["content-type"] = "application/json"
  let response: Response
  try {
    response = await fetch(url(path, options.query), {
      method: options.method ?? "GET",
      headers,
      body: options.body === undefined ? null : JSON.stringify(options.body),
      cache: "no-store",
      credentials: "omit",
      ...(options.signal === undefined ? {} : { signal: options.signal })
    })
  } catch (error) {
    if ((error as Error).name === "AbortError") throw error
    return {
      status: 0,
      headers: new Headers(),
      value: undefined,
      problem: { status: 0, title: "Unreachable", detail: "The registry could not be reached: check the network." }
    }
  }
  if (response.ok) {
    const text = await response.text()
    return {
      status: response.status,
      headers: response.headers,
      value: text === "" ? undefined : JSON.parse(text),
      problem: undefined
    }
  }
  return { status: response.status, headers: response.headers, value: undefined, problem: await problemOf(response) }
}

/** An id no route can have (the nil UUID; route ids are UUIDv7): a delete of it finds nothing to delete. */
const NO_ROUTE = "00000000-0000-0000-0000-000000000000"

/**
 * What a token may do, by asking, as the API offers no read of a token's scopes: the dry run of a delete of an id no
 * route can have (`dryRun=true`, which every write of the API that serves this page takes, docs/history.md). A dry run
 * is checked as the real delete is, token and scope first: a token that may not write is refused (401, 403; 405 on a
 * follower), one that may is told there is no such route (404). Nothing changes, and nothing could: the id has no
 * route to delete even where a dry run were not understood.
 */
export const probe = async (session: Session): Promise<void> => {
  const answer = await call(session, `/${NO_ROUTE}`, { method: "DELETE", query: { dryRun: "true" } })
  session.writable = answer.status !== 403 && answer.status !== 405 && answer.status !== 401
}

/** The whole sentence of a problem, for places that show one line. */
export const describe = (problem: Problem): string =>
  problem.status === 0 ? problem.detail : `${problem.title} (${problem.status}): ${problem.detail}`

/** A route as people name it: its method and path. */
export const routeName = (route: Pick<Route, "method" | "path">): string => `${route.method} ${route.path}`

/**
 * The stored route a `409 route_conflict` names, read from the API (the problem carries its id only), as a sentence;
 * undefined for another problem, or when that route cannot be read (deleted meanwhile).
 */
export const conflictingRoute = async (session: Session, problem: Problem): Promise<string | undefined> => {
  if (problem.code !== "route_conflict" || problem.conflictingRouteId === undefined) return undefined
  const other = await call<Route>(session, `/${problem.conflictingRouteId}`)
  return other.value === undefined
    ? undefined
    : `The route already stored is ${routeName(other.value)} (handler ${other.value.handler}).`
}

/** A problem's sentence, with the method and path of the route a conflict names. */
export const explain = async (session: Session, problem: Problem): Promise<string> =>
  [describe(problem), await conflictingRoute(session, problem)].filter(Boolean).join(" ")
