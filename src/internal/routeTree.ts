/**
 * The route table (CONTRACT §10): a tree of path segments, changed in place one route at a time.
 *
 * Every node stands for a path prefix: its static children by segment, at most one parameter child, and the routes
 * whose pattern ends there, by method. A lookup walks the request's segments depth first, static child before
 * parameter child, so the first route of the method it reaches is the most specific one (at the first segment where
 * two patterns differ, the static one comes first); a failed branch is left for the next, which is the backtracking
 * `/a/b/:y` then `/a/:x/c` needs. Inserting or removing a route touches only the nodes of its own path.
 *
 * Two routes of one method never share a shape (the stores refuse it). Should it happen anyway, the table keeps
 * both and the last inserted serves; removing it brings back the one it hid, so the table depends only on which
 * routes it holds, not on the order the changes came in.
 *
 * @internal
 */
import { Either } from "effect"
import type * as Route from "../Route.js"
import * as Grammar from "./grammar.js"
import * as RequestPath from "./requestPath.js"

// ---------------------------------------------------------------------------------------------------------------
// Results
// ---------------------------------------------------------------------------------------------------------------

export interface Found<R> {
  readonly _tag: "Found"
  readonly route: R
  readonly params: Readonly<Record<string, string>>
}

export interface MethodNotAllowed {
  readonly _tag: "MethodNotAllowed"
  readonly allow: ReadonlyArray<string>
}

export interface NotFound {
  readonly _tag: "NotFound"
}

export interface BadPath {
  readonly _tag: "BadPath"
  readonly reason: string
}

export type Resolution<R> = Found<R> | MethodNotAllowed | NotFound | BadPath

export const notFound: NotFound = Object.freeze({ _tag: "NotFound" })

// ---------------------------------------------------------------------------------------------------------------
// The tree
// ---------------------------------------------------------------------------------------------------------------

/** A route in the tree: where its pattern ends, and the names of its parameters in path order. */
export class Leaf<R extends Route.Route> {
  /** Routes of the same method and shape that this one hides, oldest first: empty unless the stores slipped. */
  hidden: Array<Leaf<R>> | undefined = undefined
  constructor(
    readonly route: R,
    readonly names: ReadonlyArray<string>,
    readonly node: Node<R>
  ) {}
}

export class Node<R extends Route.Route> {
  statics: Map<string, Node<R>> | undefined = undefined
  /** The static child when there is exactly one: compared in place, without cutting the segment out of the path. */
  only: Node<R> | undefined = undefined
  param: Node<R> | undefined = undefined
  /** The routes whose pattern ends here, by method; `undefined` when there are none. */
  leaves: Map<string, Leaf<R>> | undefined = undefined
  /** The methods of `leaves` as a 405 lists them, computed on first use after a change. */
  allow: ReadonlyArray<string> | undefined = undefined
  constructor(readonly parent: Node<R> | undefined, readonly key: string | undefined) {}
}

export class Tree<R extends Route.Route> {
  readonly root = new Node<R>(undefined, undefined)
  readonly byId = new Map<string, Leaf<R>>()
  headRoutes = 0
}

// ---------------------------------------------------------------------------------------------------------------
// Changes
// ---------------------------------------------------------------------------------------------------------------

const childOf = <R extends Route.Route>(node: Node<R>, segment: Grammar.PathSegment): Node<R> => {
  if (segment._tag === "Param") return node.param ??= new Node(node, undefined)
  const statics = node.statics ??= new Map()
  let child = statics.get(segment.value)
  if (child === undefined) {
    child = new Node(node, segment.value)
    statics.set(segment.value, child)
    node.only = statics.size === 1 ? child : undefined
  }
  return child
}

/**
 * Adds `route`, replacing the route with the same id if there is one. Throws when its path is not a valid pattern,
 * which a `Route` rules out.
 */
export const insert = <R extends Route.Route>(tree: Tree<R>, route: R): void => {
  const parsed = Grammar.parsePath(route.path)
  if (Either.isLeft(parsed)) {
    throw new TypeError(`RouteTable: route ${route.id} has an invalid path: ${parsed.left[0]!.message}`)
  }
  const previous = tree.byId.get(route.id)
  if (previous !== undefined) detach(tree, previous)
  let node = tree.root
  for (const segment of parsed.right.segments) node = childOf(node, segment)
  const leaf = new Leaf(route, parsed.right.params, node)
  const leaves = node.leaves ??= new Map()
  const hidden = leaves.get(route.method)
  if (hidden !== undefined) {
    leaf.hidden = [...(hidden.hidden ?? []), hidden]
    hidden.hidden = undefined
  }
  leaves.set(route.method, leaf)
  node.allow = undefined
  if (route.method === "HEAD") tree.headRoutes++
  tree.byId.set(route.id, leaf)
}

/**
 * Removes the route with that id; `false` when the table has none.
 */
export const remove = <R extends Route.Route>(tree: Tree<R>, id: string): boolean => {
  const leaf = tree.byId.get(id)
  if (leaf === undefined) return false
  detach(tree, leaf)
  tree.byId.delete(id)
  return true
}

const detach = <R extends Route.Route>(tree: Tree<R>, leaf: Leaf<R>): void => {
  const node = leaf.node
  const leaves = node.leaves!
  const method = leaf.route.method
  if (method === "HEAD") tree.headRoutes--
  const serving = leaves.get(method)!
  if (serving !== leaf) {
    serving.hidden!.splice(serving.hidden!.indexOf(leaf), 1)
    if (serving.hidden!.length === 0) serving.hidden = undefined
    return
  }
  const next = leaf.hidden?.pop()
  if (next !== undefined) {
    next.hidden = leaf.hidden!.length === 0 ? undefined : leaf.hidden
    leaves.set(method, next)
    return
  }
  leaves.delete(method)
  node.allow = undefined
  if (leaves.size > 0) return
  node.leaves = undefined
  prune(node)
}

// Drops the nodes that lead to no route any more, from `node` up.
const prune = <R extends Route.Route>(node: Node<R>): void => {
  let current = node
  while (
    current.parent !== undefined && current.leaves === undefined && current.param === undefined &&
    current.statics === undefined
  ) {
    const parent: Node<R> = current.parent
    if (current.key === undefined) {
      parent.param = undefined
    } else {
      const statics = parent.statics!
      statics.delete(current.key)
      if (statics.size === 0) parent.statics = undefined
      parent.only = statics.size === 1 ? statics.values().next().value : undefined
    }
    current = parent
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Lookup
// ---------------------------------------------------------------------------------------------------------------

// Scratch space of the current lookup (lookups are synchronous, so one at a time): the bounds of the segments the
// parameters of the branch being tried matched, as pairs, and the nodes reached that hold routes of other methods.
const spans: Array<number> = []
const reached: Array<Node<any>> = []

// The end of the path is reached at `node`: its route of `method`, or none, noting that the path has routes there.
const atEnd = <R extends Route.Route>(node: Node<R>, method: string): Leaf<R> | undefined => {
  const leaves = node.leaves
  if (leaves === undefined) return undefined
  const leaf = leaves.get(method)
  if (leaf === undefined) reached.push(node)
  return leaf
}

// The most specific route of `method` below `node` for the segments of `path` from `start` on, `k` parameters in.
const search = <R extends Route.Route>(
  node: Node<R>,
  path: string,
  start: number,
  method: string,
  k: number
): Leaf<R> | undefined => {
  let end = path.indexOf("/", start)
  if (end === -1) end = path.length
  // An empty segment matches nothing: a static segment is never empty, nor is a parameter's value.
  if (end === start) return undefined
  const last = end === path.length
  const only = node.only
  const child = only !== undefined
    ? (only.key!.length === end - start && path.startsWith(only.key!, start) ? only : undefined)
    : node.statics?.get(path.slice(start, end))
  if (child !== undefined) {
    const leaf = last ? atEnd(child, method) : search(child, path, end + 1, method, k)
    if (leaf !== undefined) return leaf
  }
  const param = node.param
  if (param === undefined) return undefined
  spans[2 * k] = start
  spans[2 * k + 1] = end
  return last ? atEnd(param, method) : search(param, path, end + 1, method, k + 1)
}

const find = <R extends Route.Route>(tree: Tree<R>, path: string, method: string): Leaf<R> | undefined => {
  // Setting an array's length is a call into the runtime: skipped when there is nothing to clear.
  if (reached.length !== 0) reached.length = 0
  return path.length === 1 ? atEnd(tree.root, method) : search(tree.root, path, 1, method, 0)
}

const byteOrder = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0)

// The methods of routes at `nodes`, sorted, with HEAD wherever GET is.
const allowOf = (nodes: ReadonlyArray<Node<any>>): ReadonlyArray<string> => {
  const methods = new Set<string>()
  for (const node of nodes) for (const method of node.leaves!.keys()) methods.add(method)
  if (methods.has("GET")) methods.add("HEAD")
  return Array.from(methods).sort(byteOrder)
}

const methodNotAllowed = (): MethodNotAllowed | NotFound => {
  if (reached.length === 0) return notFound
  let allow: ReadonlyArray<string>
  if (reached.length === 1) {
    const node = reached[0]!
    allow = node.allow ??= Object.freeze(allowOf(reached))
  } else {
    allow = allowOf(reached)
  }
  return { _tag: "MethodNotAllowed", allow }
}

const found = <R extends Route.Route>(leaf: Leaf<R>, path: string): Found<R> | BadPath => {
  const names = leaf.names
  const params: Record<string, string> = {}
  for (let i = 0; i < names.length; i++) {
    const value = RequestPath.decodeSegment(path, spans[2 * i]!, spans[2 * i + 1]!)
    if (value === undefined) return { _tag: "BadPath", reason: RequestPath.notUtf8(segmentNumber(path, spans[2 * i]!)) }
    // A parameter may be named "__proto__": defined, not assigned, so it stays a value and not a prototype.
    if (names[i] === "__proto__") {
      Object.defineProperty(params, "__proto__", { value, enumerable: true, writable: true, configurable: true })
    } else {
      params[names[i]!] = value
    }
  }
  return { _tag: "Found", route: leaf.route, params }
}

const segmentNumber = (path: string, start: number): number => {
  let n = 0
  for (let i = 0; i < start; i++) if (path.charCodeAt(i) === 47) n++
  return n
}

/**
 * Resolves a request: the route that serves it with its parameters, the methods that would be served, nothing, or
 * a malformed path.
 */
export const lookup = <R extends Route.Route>(tree: Tree<R>, method: string, target: string): Resolution<R> => {
  const raw = RequestPath.pathOf(target)
  if (raw === undefined) return notFound
  const path = RequestPath.normalise(raw)
  if (typeof path === "number") return { _tag: "BadPath", reason: RequestPath.badEscape(path) }
  let leaf: Leaf<R> | undefined
  if (method === "HEAD") {
    // A HEAD route for the path serves first; else the GET route, without a body.
    if (tree.headRoutes > 0) leaf = find(tree, path, "HEAD")
    if (leaf === undefined) leaf = find(tree, path, "GET")
  } else {
    leaf = find(tree, path, method)
  }
  return leaf === undefined ? methodNotAllowed() : found(leaf, path)
}
