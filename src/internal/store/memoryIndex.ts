/**
 * The routes the memory store holds, indexed: by id, by conflict key, ids in page order, and the ids under each method,
 * handler and middleware name (a listing's filters). A follower's table keeps its routes in one too.
 *
 * @internal
 */
import * as Route from "../../Route.js"
import type { ListQuery, Page } from "../../RouteRepository.js"
import { nameOf } from "../route/fields.js"
import * as Rules from "./rules.js"

// Ids kept in ascending order (JavaScript string order: byte order for the ASCII ids stores make). Ids are UUIDv7,
// so an insert is nearly always an append, but a replaced RouteIdGenerator may give any order.

/** The position of the first id greater than `after` (0 without one): where a page after it starts. */
const firstAfter = (ids: ReadonlyArray<string>, after: string | undefined): number => {
  if (after === undefined) return 0
  let low = 0
  let high = ids.length
  while (low < high) {
    const middle = (low + high) >>> 1
    if (ids[middle]! <= after) low = middle + 1
    else high = middle
  }
  return low
}

const insertSorted = (ids: Array<string>, id: string): void => {
  if (ids.length === 0 || ids[ids.length - 1]! < id) ids.push(id)
  else ids.splice(firstAfter(ids, id), 0, id)
}

const removeSorted = (ids: Array<string>, id: string): void => {
  const at = firstAfter(ids, id) - 1
  if (ids[at] === id) ids.splice(at, 1)
}

/** Sorted ids under each value of one field: the routes a filter on that field can match, already in page order. */
type Postings = Map<string, Array<string>>

const post = (postings: Postings, key: string, id: string): void => {
  const ids = postings.get(key)
  if (ids === undefined) postings.set(key, [id])
  else insertSorted(ids, id)
}

const unpost = (postings: Postings, key: string, id: string): void => {
  const ids = postings.get(key)
  if (ids === undefined) return
  removeSorted(ids, id)
  if (ids.length === 0) postings.delete(key)
}

const NONE: ReadonlyArray<string> = []

/**
 * Everything the memory store holds. Every change updates all of it synchronously, so readers never see it torn. A
 * follower's read-only store keeps one too (`put`, `drop`, `listMemory`), so that its listings follow the same rules.
 */
export interface Memory {
  readonly byId: Map<string, Route.StoredRoute>
  readonly idByKey: Map<string, string>
  /** Every id, ascending. */
  readonly ids: Array<string>
  readonly byMethod: Postings
  readonly byHandler: Postings
  readonly byMiddleware: Postings
  readonly byTag: Postings
  /** The revision of the store's last change. */
  revision: number
}

/** A memory without routes. */
export const emptyMemory = (): Memory => ({
  byId: new Map(),
  idByKey: new Map(),
  ids: [],
  byMethod: new Map(),
  byHandler: new Map(),
  byMiddleware: new Map(),
  byTag: new Map(),
  revision: 0
})

// `key`: the route's conflict key, which the caller computed to check for a conflict.
export const addRoute = (memory: Memory, route: Route.StoredRoute, key: string): void => {
  memory.byId.set(route.id, route)
  memory.idByKey.set(key, route.id)
  insertSorted(memory.ids, route.id)
  post(memory.byMethod, route.method, route.id)
  post(memory.byHandler, route.handler, route.id)
  for (const entry of route.middleware) post(memory.byMiddleware, nameOf(entry), route.id)
  if (route.tags !== undefined) { for (const tag of route.tags) post(memory.byTag, tag, route.id) }
}

export const dropRoute = (memory: Memory, route: Route.StoredRoute): void => {
  memory.byId.delete(route.id)
  memory.idByKey.delete(Rules.conflictKey(route.method, route.path, route.when))
  removeSorted(memory.ids, route.id)
  unpost(memory.byMethod, route.method, route.id)
  unpost(memory.byHandler, route.handler, route.id)
  for (const entry of route.middleware) unpost(memory.byMiddleware, nameOf(entry), route.id)
  if (route.tags !== undefined) { for (const tag of route.tags) unpost(memory.byTag, tag, route.id) }
}

/** Replaces a route by its updated form; the id stays, so only the entries of changed fields move. */
export const replaceRoute = (memory: Memory, before: Route.StoredRoute, after: Route.StoredRoute): void => {
  const id = after.id
  memory.byId.set(id, after)
  memory.idByKey.delete(Rules.conflictKey(before.method, before.path, before.when))
  memory.idByKey.set(Rules.conflictKey(after.method, after.path, after.when), id)
  if (before.method !== after.method) {
    unpost(memory.byMethod, before.method, id)
    post(memory.byMethod, after.method, id)
  }
  if (before.handler !== after.handler) {
    unpost(memory.byHandler, before.handler, id)
    post(memory.byHandler, after.handler, id)
  }
  const beforeNames = before.middleware.map(nameOf)
  const afterNames = after.middleware.map(nameOf)
  for (const name of beforeNames) if (!afterNames.includes(name)) unpost(memory.byMiddleware, name, id)
  for (const name of afterNames) if (!beforeNames.includes(name)) post(memory.byMiddleware, name, id)
  const beforeTags = before.tags ?? NONE
  const afterTags = after.tags ?? NONE
  for (const tag of beforeTags) if (!afterTags.includes(tag)) unpost(memory.byTag, tag, id)
  for (const tag of afterTags) if (!beforeTags.includes(tag)) post(memory.byTag, tag, id)
}

/** Adds `route`, or replaces the route with its id. */
export const put = (memory: Memory, route: Route.StoredRoute): void => {
  const before = memory.byId.get(route.id)
  if (before === undefined) addRoute(memory, route, Rules.conflictKey(route.method, route.path, route.when))
  else replaceRoute(memory, before, route)
}

/** Removes the route with this id, if there is one. */
export const drop = (memory: Memory, id: string): void => {
  const route = memory.byId.get(id)
  if (route !== undefined) dropRoute(memory, route)
}

const matches = (route: Route.Route, query: ListQuery): boolean =>
  (query.method === undefined || route.method === query.method) &&
  (query.handler === undefined || route.handler === query.handler) &&
  (query.middleware === undefined || route.middleware.some((entry) => nameOf(entry) === query.middleware)) &&
  (query.tag === undefined || (route.tags !== undefined && route.tags.includes(query.tag))) &&
  // Paths are ASCII, so comparing UTF-16 code units is comparing bytes.
  (query.pathPrefix === undefined || route.path.startsWith(query.pathPrefix)) &&
  (query.q === undefined || Rules.containsText(route, query.q)) &&
  (query.enabled === undefined || (route.enabled !== false) === query.enabled)

/** The shortest sorted id list that holds every route the query can match: all ids, or a filter's postings. */
const candidates = (memory: Memory, query: ListQuery): ReadonlyArray<string> => {
  let shortest: ReadonlyArray<string> = memory.ids
  const narrow = (postings: Postings, key: string | undefined) => {
    if (key === undefined) return
    const ids = postings.get(key) ?? NONE
    if (ids.length < shortest.length) shortest = ids
  }
  narrow(memory.byMethod, query.method)
  narrow(memory.byHandler, query.handler)
  narrow(memory.byMiddleware, query.middleware)
  narrow(memory.byTag, query.tag)
  return shortest
}

/** One page of `query`: a binary search to its cursor, then a walk along the shortest id list its filters select. */
export const listMemory = (memory: Memory, query: ListQuery): Page => {
  const ids = candidates(memory, query)
  const items: Array<Route.StoredRoute> = []
  for (let i = firstAfter(ids, query.after); i < ids.length; i++) {
    const route = memory.byId.get(ids[i]!)!
    if (!matches(route, query)) continue
    if (items.length === query.limit) return { items, hasMore: true }
    items.push(route)
  }
  return { items, hasMore: false }
}
