/**
 * The route table: a tree of path segments, changed in place one route at a time.
 *
 * Every node stands for a path prefix: its static children by segment, its mixed children by shape, at most one
 * parameter child and one wildcard child, and the routes whose pattern ends there, by method. A lookup walks the
 * request's segments depth first, trying a node's children in order of precedence (static, mixed segments by more
 * static characters then shape in byte order, parameter, wildcard), so the first route of the method it reaches is
 * the most specific one; a failed branch is left for the next, which is the backtracking `/a/b/:y` then `/a/:x/c`
 * needs. A wildcard child ends its pattern and takes the rest of the path. Inserting or removing a route touches only
 * the nodes of its own path.
 *
 * Backtracking alone can be made slow: with 64-segment routes of one character, each with a parameter at a different
 * position, a request of those characters matches a prefix of every route and a miss shows only at its end, so a
 * depth-first walk visits every node (n²/2 for n routes; n³/6 with two parameters each). What bounds it is that
 * subtrees at one depth with the same *suffix structure* (the methods ending at each node, the static keys and mixed
 * shapes, where the parameters and wildcards are; not which routes) answer a request's remaining segments alike. Every
 * node belongs to a class of nodes of that depth and structure, kept exact by hash-consing as routes come and go (see
 * Classes); a lookup marks each class whose subtree failed and skips every other node of it, so a subtree is explored at most once per class,
 * and the tables above cost a miss a few times a hit (test/RouteTable.test.ts counts it, bench/table.ts times it).
 *
 * Two routes of one method never share a shape (the stores refuse it). Should it happen anyway, the table keeps
 * both and the last inserted serves; removing it brings back the one it hid, so the table depends only on which
 * routes it holds, not on the order the changes came in. A hidden route changes no class: only the methods count.
 *
 * @internal
 */
import { Either } from "effect"
import type * as Route from "../../Route.js"
import * as Grammar from "../route/grammar.js"
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
  /** The mixed children, the most specific first (see `moreSpecific`). */
  mixed: Array<Node<R>> | undefined = undefined
  param: Node<R> | undefined = undefined
  wildcard: Node<R> | undefined = undefined
  /** The routes whose pattern ends here, by method; `undefined` when there are none. */
  leaves: Map<string, Leaf<R>> | undefined = undefined
  /** The methods of `leaves` as a 405 lists them, computed on first use after a change. */
  allow: ReadonlyArray<string> | undefined = undefined
  readonly depth: number
  /** The hash of `key`, which the parent's structure hash takes for this child. */
  readonly keyHash: number
  /** The hash of its structure (see Classes), kept as its methods and its children's classes change. */
  hash: number
  /** Its class: `undefined` only while a change is being applied along its path. */
  class: Class | undefined = undefined
  /** Its neighbours in the list of its class's nodes. */
  previousOfClass: Node<R> | undefined = undefined
  nextOfClass: Node<R> | undefined = undefined
  /**
   * For a mixed child, the static texts around its parameters (its shape split at each `:`): `["", ".", ""]` for
   * `:file.:ext`. Static text never holds a `:`.
   */
  readonly texts: ReadonlyArray<string> | undefined
  /**
   * @param key the edge from the parent: a static segment's value, a mixed segment's shape, `:` for the parameter,
   * `*` for the wildcard; `undefined` for the root. No static segment is `:` or `*` or holds a `:`, so none is
   * mistaken for another kind.
   */
  constructor(readonly parent: Node<R> | undefined, readonly key: string | undefined, mixed = false) {
    this.depth = parent === undefined ? 0 : parent.depth + 1
    this.keyHash = key === undefined ? 0 : stringHash(key)
    this.hash = depthHash(this.depth)
    this.texts = mixed ? key!.split(":") : undefined
  }
}

const PARAM_KEY = ":"
const WILDCARD_KEY = "*"

export class Tree<R extends Route.Route> {
  readonly root = new Node<R>(undefined, undefined)
  readonly byId = new Map<string, Leaf<R>>()
  /** The classes of its nodes by structure hash; those sharing a hash (a collision) are chained. */
  readonly classes = new Map<number, Class>()
  headRoutes = 0
  /**
   * @param hashBits the bits of a structure hash that find a class: all of them, but for the tests, which keep few to
   * make collisions common and so check that they cost a comparison, never a wrong class.
   */
  constructor(readonly hashBits = -1) {
    join(this, this.root)
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Classes
// ---------------------------------------------------------------------------------------------------------------
//
// A node's structure is its depth, the methods of the routes ending at it, and its children, each as its edge (the
// static key, the mixed shape, "parameter" or "wildcard") and its class. Two nodes of one structure have subtrees
// that match the same requests with the same methods at every end, so one answers a lookup's remaining segments
// exactly as the other: that is what lets a lookup skip a node whose class failed already (see Lookup).
//
// Classes are exact, by hash-consing: a node's structure hash is a sum of one term per method and per child (so a
// change updates it in constant time), the classes are found by that hash, and a node joins a class only after its
// structure is compared, child class by child class, with a node of the class. A hash collision costs a comparison,
// never a wrong answer. The comparison costs the node's fan-out, and is made only when another node has the same
// structure (or a colliding hash); no fan-out is too large to be classed. A change re-classes the nodes of its own
// path, bottom-up; a class with no node left is dropped, so there are never more classes than nodes. (Hashes alone,
// without the comparison, would be as fast and could, on a collision, skip a subtree that matches.)

class Class {
  /** The number of the last lookup in which a node of this class failed (see Lookup). */
  failed = 0
  /** Its nodes, as a list through `nextOfClass`: the first is compared with a node that may join. */
  first: Node<any> | undefined = undefined
  /** The next class with the same structure hash (as the tree keys it). */
  nextWithHash: Class | undefined = undefined
  /** Stands for the class in its parents' structure hashes: random, so no two classes are likely to mix alike. */
  readonly value = (Math.random() * 0x1_0000_0000) | 0
  constructor(readonly hash: number) {}
}

// A 32-bit finaliser (MurmurHash3's): spreads every input bit over the output, so the sums below rarely collide.
const mix = (h: number): number => {
  h ^= h >>> 16
  h = Math.imul(h, 0x85ebca6b)
  h ^= h >>> 13
  h = Math.imul(h, 0xc2b2ae35)
  return h ^ (h >>> 16)
}

// FNV-1a over UTF-16 units.
const stringHash = (s: string): number => {
  let h = 0x811c9dc5
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 0x01000193)
  return h
}

const depthHash = (depth: number): number => mix(depth + 0x6a09e667)
const methodHash = (method: string): number => mix(stringHash(method) ^ 0x3c6ef372)

// The term of a child in its parent's structure hash: its edge mixed with its class.
const childHash = (child: Node<any>, cls: Class): number => mix(child.keyHash ^ Math.imul(cls.value, 0x9e3779b1))

const sameMethods = (a: Map<string, unknown> | undefined, b: Map<string, unknown> | undefined): boolean => {
  if ((a?.size ?? 0) !== (b?.size ?? 0)) return false
  if (a !== undefined) { for (const method of a.keys()) if (!b!.has(method)) return false }
  return true
}

const sameStatics = (a: Map<string, Node<any>> | undefined, b: Map<string, Node<any>> | undefined): boolean => {
  if ((a?.size ?? 0) !== (b?.size ?? 0)) return false
  if (a !== undefined) { for (const [key, child] of a) if (b!.get(key)?.class !== child.class) return false }
  return true
}

const sameMixed = (a: ReadonlyArray<Node<any>> | undefined, b: ReadonlyArray<Node<any>> | undefined): boolean => {
  if ((a?.length ?? 0) !== (b?.length ?? 0)) return false
  if (a !== undefined) {
    for (let i = 0; i < a.length; i++) if (a[i]!.key !== b![i]!.key || a[i]!.class !== b![i]!.class) return false
  }
  return true
}

const sameStructure = (a: Node<any>, b: Node<any>): boolean =>
  a.depth === b.depth && a.param?.class === b.param?.class && a.wildcard?.class === b.wildcard?.class &&
  sameMethods(a.leaves, b.leaves) && sameStatics(a.statics, b.statics) && sameMixed(a.mixed, b.mixed)

// Puts `node` into the class of its structure, made when there is none.
const join = (tree: Tree<any>, node: Node<any>): Class => {
  const hash = node.hash & tree.hashBits
  let cls = tree.classes.get(hash)
  while (cls !== undefined && !sameStructure(node, cls.first!)) cls = cls.nextWithHash
  if (cls === undefined) {
    cls = new Class(hash)
    cls.nextWithHash = tree.classes.get(hash)
    tree.classes.set(hash, cls)
  }
  node.nextOfClass = cls.first
  if (cls.first !== undefined) cls.first.previousOfClass = node
  cls.first = node
  node.class = cls
  return cls
}

// Takes `node` out of its class, dropping the class when it was the last of it.
const leave = (tree: Tree<any>, node: Node<any>): void => {
  const cls = node.class!
  if (node.previousOfClass === undefined) cls.first = node.nextOfClass
  else node.previousOfClass.nextOfClass = node.nextOfClass
  if (node.nextOfClass !== undefined) node.nextOfClass.previousOfClass = node.previousOfClass
  node.previousOfClass = undefined
  node.nextOfClass = undefined
  node.class = undefined
  if (cls.first !== undefined) return
  const head = tree.classes.get(cls.hash)!
  if (head === cls) {
    if (cls.nextWithHash === undefined) tree.classes.delete(cls.hash)
    else tree.classes.set(cls.hash, cls.nextWithHash)
    return
  }
  let previous = head
  while (previous.nextWithHash !== cls) previous = previous.nextWithHash!
  previous.nextWithHash = cls.nextWithHash
}

// Re-classes `node`, whose structure hash is up to date, and each ancestor in turn, whose hash then changes with it.
const settle = (tree: Tree<any>, node: Node<any>): void => {
  let current: Node<any> | undefined = node
  while (current !== undefined) {
    const before = current.class
    if (before !== undefined) leave(tree, current)
    const after = join(tree, current)
    const parent: Node<any> | undefined = current.parent
    if (after === before || parent === undefined) return
    const term = before === undefined ? 0 : childHash(current, before)
    parent.hash = (parent.hash - term + childHash(current, after)) | 0
    current = parent
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Changes
// ---------------------------------------------------------------------------------------------------------------

const byteOrder = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0)

const staticLength = (mixed: Node<any>): number => mixed.key!.length - mixed.texts!.length + 1

// Between two mixed segments at one position, the one with more static characters wins, then the one whose shape
// comes first in byte order: negative when `a` wins.
const moreSpecific = (a: Node<any>, b: Node<any>): number =>
  staticLength(b) - staticLength(a) || byteOrder(a.key!, b.key!)

const mixedChildOf = <R extends Route.Route>(node: Node<R>, shape: string): Node<R> => {
  const mixed = node.mixed ??= []
  let child = mixed.find((candidate) => candidate.key === shape)
  if (child === undefined) {
    child = new Node(node, shape, true)
    mixed.push(child)
    mixed.sort(moreSpecific)
  }
  return child
}

// The child of `node` for `segment`, made when there is none; a new node has no class until the change settles.
const childOf = <R extends Route.Route>(node: Node<R>, segment: Grammar.PathSegment): Node<R> => {
  if (segment._tag === "Param") return node.param ??= new Node(node, PARAM_KEY)
  if (segment._tag === "Wildcard") return node.wildcard ??= new Node(node, WILDCARD_KEY)
  if (segment._tag === "Mixed") return mixedChildOf(node, segment.shape)
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
  insertParsed(tree, route, parsed.right)
}

/**
 * Adds `route` whose path is already parsed into `parsed`, replacing the route with the same id if there is one.
 */
export const insertParsed = <R extends Route.Route>(
  tree: Tree<R>,
  route: R,
  parsed: Pick<Grammar.ParsedPath, "segments" | "params">
): void => {
  const previous = tree.byId.get(route.id)
  if (previous !== undefined) detach(tree, previous)
  let node = tree.root
  for (const segment of parsed.segments) node = childOf(node, segment)
  const leaf = new Leaf(route, parsed.params, node)
  const leaves = node.leaves ??= new Map()
  const hidden = leaves.get(route.method)
  leaves.set(route.method, leaf)
  if (route.method === "HEAD") tree.headRoutes++
  tree.byId.set(route.id, leaf)
  if (hidden !== undefined) {
    // The same method ends here already: no node is new and no structure changes.
    leaf.hidden = [...(hidden.hidden ?? []), hidden]
    hidden.hidden = undefined
    return
  }
  node.allow = undefined
  node.hash = (node.hash + methodHash(route.method)) | 0
  settle(tree, node)
}

/** The route with that id, or `undefined`. */
export const get = <R extends Route.Route>(tree: Tree<R>, id: string): R | undefined => tree.byId.get(id)?.route

/** The ids of the routes in the tree. */
export const ids = (tree: Tree<any>): Iterable<string> => tree.byId.keys()

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
  if (leaves.size === 0) node.leaves = undefined
  node.allow = undefined
  node.hash = (node.hash - methodHash(method)) | 0
  settle(tree, prune(tree, node))
}

// Drops the nodes that lead to no route any more, from `node` up; returns the deepest node left, whose structure
// changed.
const prune = <R extends Route.Route>(tree: Tree<R>, node: Node<R>): Node<R> => {
  let current = node
  while (
    current.parent !== undefined && current.leaves === undefined && current.param === undefined &&
    current.statics === undefined && current.mixed === undefined && current.wildcard === undefined
  ) {
    const parent: Node<R> = current.parent
    parent.hash = (parent.hash - childHash(current, current.class!)) | 0
    leave(tree, current)
    if (current.key === PARAM_KEY) {
      parent.param = undefined
    } else if (current.key === WILDCARD_KEY) {
      parent.wildcard = undefined
    } else if (current.texts !== undefined) {
      const mixed = parent.mixed!
      mixed.splice(mixed.indexOf(current), 1)
      if (mixed.length === 0) parent.mixed = undefined
    } else {
      const statics = parent.statics!
      statics.delete(current.key!)
      if (statics.size === 0) parent.statics = undefined
      parent.only = statics.size === 1 ? statics.values().next().value : undefined
    }
    current = parent
  }
  return current
}

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
 * Static text holds no `/`, so no occurrence found from inside the segment runs past its end.
 */
const split = (texts: ReadonlyArray<string>, path: string, start: number, end: number, k: number): boolean => {
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
