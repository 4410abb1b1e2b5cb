/**
 * The route tree's nodes, their classes (nodes of one depth and one suffix structure, kept exact by hash-consing, so a
 * lookup explores a subtree at most once per class) and the answers of a lookup. routeTree.ts says how the tree works.
 *
 * @internal
 */
import type * as Route from "../../Route.js"
import * as When from "../route/when.js"

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

/**
 * A route in the tree: where its pattern ends, the names of its parameters in path order, and its conditions. The
 * routes of one method ending at one node form a chain through `next`, in order of precedence among their conditions
 * (docs/router.md: conditions), a route without conditions last; the node's `leaves` holds the chain's head.
 */
export class Leaf<R extends Route.Route> {
  /** Routes of the same method, shape and conditions that this one hides, oldest first: empty unless stores slipped. */
  hidden: Array<Leaf<R>> | undefined = undefined
  /** The next route of the chain: same method and node, conditions of lower precedence. */
  next: Leaf<R> | undefined = undefined
  /** The route's conditions in canonical form, `undefined` for none. */
  readonly when: When.When | undefined
  /** Their canonical JSON, `""` for none. */
  readonly whenKey: string
  constructor(
    readonly route: R,
    readonly names: ReadonlyArray<string>,
    readonly node: Node<R>
  ) {
    // Canonical whatever made the route (a host may build one by hand): the chain's order and the classes compare it.
    this.when = route.when === undefined ? undefined : When.canonical(route.when as unknown as Record<string, unknown>)
    this.whenKey = When.keyOf(this.when)
  }
}

export class Node<R extends Route.Route> {
  statics: Map<string, Node<R>> | undefined = undefined
  /** The static child when there is exactly one: compared in place, without cutting the segment out of the path. */
  only: Node<R> | undefined = undefined
  /** The mixed children, the most specific first (see `moreSpecific`). */
  mixed: Array<Node<R>> | undefined = undefined
  param: Node<R> | undefined = undefined
  wildcard: Node<R> | undefined = undefined
  /** The routes whose pattern ends here, by method (each the head of its chain); `undefined` when there are none. */
  leaves: Map<string, Leaf<R>> | undefined = undefined
  /** How many of the routes in `leaves`' chains have conditions: none, and a lookup reads no request but its path. */
  conditional = 0
  /** The methods of `leaves` as a 405 lists them (kept only when no route here has conditions). */
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

export const PARAM_KEY = ":"
export const WILDCARD_KEY = "*"

export class Tree<R extends Route.Route> {
  readonly root = new Node<R>(undefined, undefined)
  readonly byId = new Map<string, Leaf<R>>()
  /** The classes of its nodes by structure hash; those sharing a hash (a collision) are chained. */
  readonly classes = new Map<number, Class>()
  headRoutes = 0
  /** The number of the last lookup begun: a class whose `failed` holds a lookup's number failed in that lookup. */
  lookups = 0
  /** Nodes examined by its lookups, ever: a lookup's work, counted (not timed) by the tests and the benchmark. */
  examined = 0
  /**
   * @param hashBits the bits of a structure hash that find a class: all of them, but for the tests, which keep few to
   * make collisions common and so check that they cost a comparison, never a wrong class.
   */
  constructor(readonly hashBits = -1) {
    join(this, this.root)
  }
}

export const byteOrder = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0)

// ---------------------------------------------------------------------------------------------------------------
// Classes
// ---------------------------------------------------------------------------------------------------------------
//
// A node's structure is its depth, the methods of the routes ending at it with their conditions, and its children, each as its edge (the
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

export class Class {
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
export const stringHash = (s: string): number => {
  let h = 0x811c9dc5
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 0x01000193)
  return h
}

export const depthHash = (depth: number): number => mix(depth + 0x6a09e667)
export const methodHash = (method: string): number => mix(stringHash(method) ^ 0x3c6ef372)
/** The term of a route in its node's structure hash: its method, and its conditions when it has some. */
export const leafHash = (method: string, whenKey: string): number =>
  whenKey === "" ? methodHash(method) : mix(methodHash(method) + stringHash(whenKey))

// The term of a child in its parent's structure hash: its edge mixed with its class.
export const childHash = (child: Node<any>, cls: Class): number => mix(child.keyHash ^ Math.imul(cls.value, 0x9e3779b1))

// The same conditions, in the same order, along two chains.
const sameChain = (a: Leaf<any> | undefined, b: Leaf<any> | undefined): boolean => {
  while (a !== undefined && b !== undefined && a.whenKey === b.whenKey) {
    a = a.next
    b = b.next
  }
  return a === undefined && b === undefined
}

// The same methods, each with the same conditions: a lookup then finds the same routes of each, or none.
const sameMethods = (a: Map<string, Leaf<any>> | undefined, b: Map<string, Leaf<any>> | undefined): boolean => {
  if ((a?.size ?? 0) !== (b?.size ?? 0)) return false
  if (a !== undefined) { for (const [method, leaf] of a) if (!sameChain(leaf, b!.get(method))) return false }
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
export const join = (tree: Tree<any>, node: Node<any>): Class => {
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
export const leave = (tree: Tree<any>, node: Node<any>): void => {
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
export const settle = (tree: Tree<any>, node: Node<any>): void => {
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
