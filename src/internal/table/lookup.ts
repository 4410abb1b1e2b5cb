/**
 * Looking a request up in the route tree: depth first in order of precedence, skipping every node of a class that
 * already failed in this lookup (see routeTree.ts).
 *
 * @internal
 */
import type * as Route from "../../Route.js"
import {
  type BadPath,
  byteOrder,
  type Found,
  type Leaf,
  type MethodNotAllowed,
  type Node,
  type NotFound,
  notFound,
  type Resolution,
  type Tree
} from "./node.js"
import * as RequestPath from "./requestPath.js"

// ---------------------------------------------------------------------------------------------------------------
// Lookup
// ---------------------------------------------------------------------------------------------------------------

// Scratch space of the current lookup (lookups are synchronous, so one at a time): the bounds of the segments the
// parameters of the branch being tried matched, as pairs, and the nodes reached that hold routes of other methods.
const spans: Array<number> = []
const reached: Array<Node<any>> = []

// For a HEAD request to a table with HEAD routes: the first GET route reached (the most specific), with the spans of
// its parameters, which serves when no HEAD route does. One walk finds both, so no node is examined twice.
let fallback: Leaf<any> | undefined
const fallbackSpans: Array<number> = []
let wantsFallback = false

// The number of the current lookup: a class whose `failed` holds it failed in this lookup. `backtracked`: whether
// some node failed in this lookup yet.
let lookupNumber = 0
let backtracked = false

// Nodes examined by lookups, ever: a lookup's work, counted (not timed) by the tests and the benchmark.
let examined = 0

/** How many nodes lookups have examined since the process started: the difference around a lookup is its work. */
export const examinedNodes = (): number => examined

// The end of the path is reached at `node`: its route of `method`, or none, noting that the path has routes there.
const atEnd = <R extends Route.Route>(node: Node<R>, method: string): Leaf<R> | undefined => {
  examined++
  const leaves = node.leaves
  if (leaves === undefined) return undefined
  const leaf = leaves.get(method)
  if (leaf === undefined) {
    reached.push(node)
    if (wantsFallback && fallback === undefined) keepFallback(leaves.get("GET"))
  }
  return leaf
}

const keepFallback = (leaf: Leaf<any> | undefined): void => {
  if (leaf === undefined) return
  fallback = leaf
  for (let i = 0; i < 2 * leaf.names.length; i++) fallbackSpans[i] = spans[i]!
}

/**
 * The most specific route of `method` below `node` for the segments of `path` from `start` on, `k` parameters in.
 * A node whose class failed already in this lookup is skipped: its subtree would fail alike, and would note the
 * same methods for a 405 as the one that failed first (the class holds the methods at every node below). Only a
 * failure marks a class, so a lookup that does not backtrack writes nothing.
 */
const search = <R extends Route.Route>(
  node: Node<R>,
  path: string,
  start: number,
  method: string,
  k: number
): Leaf<R> | undefined => {
  examined++
  // Until something failed in this lookup, nothing can be skipped: a hit without backtracking reads no class.
  if (backtracked && node.class!.failed === lookupNumber) return undefined
  let end = path.indexOf("/", start)
  if (end === -1) end = path.length
  // An empty segment matches nothing: a static segment is never empty, nor is a parameter's value.
  if (end !== start) {
    const last = end === path.length
    const only = node.only
    const child = only !== undefined
      ? (only.key!.length === end - start && path.startsWith(only.key!, start) ? only : undefined)
      : node.statics?.get(path.slice(start, end))
    if (child !== undefined) {
      const leaf = last ? atEnd(child, method) : search(child, path, end + 1, method, k)
      if (leaf !== undefined) return leaf
    }
    const mixed = node.mixed
    if (mixed !== undefined) {
      for (let i = 0; i < mixed.length; i++) {
        const child = mixed[i]!
        const texts = child.texts!
        if (!split(texts, path, start, end, k)) continue
        const leaf = last ? atEnd(child, method) : search(child, path, end + 1, method, k + texts.length - 1)
        if (leaf !== undefined) return leaf
      }
    }
    const param = node.param
    if (param !== undefined) {
      spans[2 * k] = start
      spans[2 * k + 1] = end
      const leaf = last ? atEnd(param, method) : search(param, path, end + 1, method, k + 1)
      if (leaf !== undefined) return leaf
    }
    const wildcard = node.wildcard
    if (wildcard !== undefined && noEmptySegmentFrom(path, start)) {
      spans[2 * k] = start
      spans[2 * k + 1] = path.length
      const leaf = atEnd(wildcard, method)
      if (leaf !== undefined) return leaf
    }
  }
  node.class!.failed = lookupNumber
  backtracked = true
  return undefined
}

/**
 * Whether the segment `path[start, end)` splits as a mixed segment with static `texts` around its parameters, whose
 * spans it then writes from the `k`-th on. Each parameter but the last takes the shortest non-empty text up to the
 * next occurrence of the static text after it, the last what remains before the final static text. Taking the first
 * occurrence is never wrong: were the rest to match from a later one, it would match from this one too (its first
 * parameter would only be longer), so a segment that fails from the first fails from every one, and one pass decides.
 * Static text holds no `/`, so no occurrence found from inside the segment runs past its end. Outside a lookup (an
 * explanation, which keeps no spans) it writes only scratch space that the next lookup overwrites.
 */
export const split = (texts: ReadonlyArray<string>, path: string, start: number, end: number, k: number): boolean => {
  let at = start + texts[0]!.length
  if (!path.startsWith(texts[0]!, start)) return false
  const params = texts.length - 1
  for (let i = 1; i < params; i++) {
    const text = texts[i]!
    const next = path.indexOf(text, at + 1)
    if (next === -1 || next + text.length > end) return false
    spans[2 * (k + i - 1)] = at
    spans[2 * (k + i - 1) + 1] = next
    at = next + text.length
  }
  const text = texts[params]!
  const valueEnd = end - text.length
  if (valueEnd <= at || !path.startsWith(text, valueEnd)) return false
  spans[2 * (k + params - 1)] = at
  spans[2 * (k + params - 1) + 1] = valueEnd
  return true
}

// Where the last empty segment of the current lookup's path starts (`-1` for none), found on first use: a wildcard
// matches only non-empty segments.
let lastEmpty = -2

// Whether every segment of `path` from `start` on, the one at `start` being non-empty, is non-empty.
const noEmptySegmentFrom = (path: string, start: number): boolean => {
  if (lastEmpty === -2) {
    lastEmpty = path.charCodeAt(path.length - 1) === 47 ? path.length : path.lastIndexOf("//") + 1
    if (lastEmpty === 0) lastEmpty = -1
  }
  return lastEmpty < start
}

const find = <R extends Route.Route>(tree: Tree<R>, path: string, method: string): Leaf<R> | undefined => {
  // Setting an array's length is a call into the runtime: skipped when there is nothing to clear.
  if (reached.length !== 0) reached.length = 0
  lookupNumber++
  backtracked = false
  lastEmpty = -2
  return path.length === 1 ? atEnd(tree.root, method) : search(tree.root, path, 1, method, 0)
}

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

const found = <R extends Route.Route>(
  leaf: Leaf<R>,
  path: string,
  spans: ReadonlyArray<number>
): Found<R> | BadPath => {
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

// A HEAD request: its HEAD route, else the GET route that the same walk reached first.
const findHead = <R extends Route.Route>(tree: Tree<R>, path: string): Found<R> | BadPath | undefined => {
  fallback = undefined
  wantsFallback = true
  const leaf = find(tree, path, "HEAD")
  wantsFallback = false
  if (leaf !== undefined) return found(leaf, path, spans)
  const get: Leaf<R> | undefined = fallback
  fallback = undefined
  return get === undefined ? undefined : found(get, path, fallbackSpans)
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
  if (method === "HEAD" && tree.headRoutes > 0) return findHead(tree, path) ?? methodNotAllowed()
  // Without HEAD routes, a HEAD request is served by the GET route, without a body.
  const leaf = find(tree, path, method === "HEAD" ? "GET" : method)
  return leaf === undefined ? methodNotAllowed() : found(leaf, path, spans)
}
