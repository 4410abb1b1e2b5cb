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
 * Routes of one method and shape differ by their conditions (docs/router.md: conditions): they end at one node, as a
 * chain in order of precedence, and a lookup takes the first whose conditions the request meets. A node none of whose
 * routes has conditions is looked up as if conditions did not exist: its chains are single routes.
 *
 * Two routes of one method, shape and conditions never coexist (the stores refuse it). Should it happen anyway, the
 * table keeps both and the last inserted serves; removing it brings back the one it hid, so the table depends only on
 * which routes it holds, not on the order the changes came in. A hidden route changes no class: only the methods and
 * conditions count.
 *
 * @internal
 */
import { Either } from "effect"
import type * as Route from "../../Route.js"
import * as Path from "../route/path.js"
import * as When from "../route/when.js"
import { byteOrder, childHash, Leaf, leafHash, leave, Node, PARAM_KEY, settle, Tree, WILDCARD_KEY } from "./node.js"

export { examinedNodes, lookup } from "./lookup.js"
export {
  type BadPath,
  type Found,
  Leaf,
  type MethodNotAllowed,
  Node,
  type NotFound,
  notFound,
  type Resolution,
  Tree
} from "./node.js"

// ---------------------------------------------------------------------------------------------------------------
// Changes
// ---------------------------------------------------------------------------------------------------------------

/** How many static characters a mixed child's segment has: between two mixed segments, the one with more wins. */
export const staticLength = (mixed: Node<any>): number => mixed.key!.length - mixed.texts!.length + 1

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
const childOf = <R extends Route.Route>(node: Node<R>, segment: Path.PathSegment): Node<R> => {
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
  const parsed = Path.parsePathReused(route.path)
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
  parsed: Pick<Path.ParsedPath, "segments" | "params">
): void => {
  const previous = tree.byId.get(route.id)
  if (previous !== undefined) detach(tree, previous)
  let node = tree.root
  for (const segment of parsed.segments) node = childOf(node, segment)
  const leaf = new Leaf(route, parsed.params, node)
  const leaves = node.leaves ??= new Map()
  if (route.method === "HEAD") tree.headRoutes++
  tree.byId.set(route.id, leaf)
  const head = leaves.get(route.method)
  const hidden = servingLike<R>(head, leaf.whenKey)
  if (hidden !== undefined) {
    // The same method and conditions end here already: no node is new and no structure changes.
    leaf.hidden = [...(hidden.hidden ?? []), hidden]
    hidden.hidden = undefined
    replaceInChain(leaves, hidden, leaf)
    return
  }
  insertInChain(leaves, head, leaf)
  if (leaf.when !== undefined) node.conditional++
  node.allow = undefined
  node.hash = (node.hash + leafHash(route.method, leaf.whenKey)) | 0
  settle(tree, node)
}

// The route of the chain from `head` whose conditions are `whenKey`, serving in place of any it hides.
const servingLike = <R extends Route.Route>(head: Leaf<R> | undefined, whenKey: string): Leaf<R> | undefined => {
  let leaf = head
  while (leaf !== undefined && leaf.whenKey !== whenKey) leaf = leaf.next
  return leaf
}

// Puts `leaf` into its method's chain in order of precedence of conditions (docs/router.md: conditions).
const insertInChain = <R extends Route.Route>(
  leaves: Map<string, Leaf<R>>,
  head: Leaf<R> | undefined,
  leaf: Leaf<R>
): void => {
  if (head === undefined || When.compare(leaf.when, head.when) < 0) {
    leaf.next = head
    leaves.set(leaf.route.method, leaf)
    return
  }
  let previous = head
  while (previous.next !== undefined && When.compare(previous.next.when, leaf.when) < 0) previous = previous.next
  leaf.next = previous.next
  previous.next = leaf
}

// Puts `replacement` where `leaf` is in its chain (`undefined`: takes `leaf` out).
const replaceInChain = <R extends Route.Route>(
  leaves: Map<string, Leaf<R>>,
  leaf: Leaf<R>,
  replacement: Leaf<R> | undefined
): void => {
  const method = leaf.route.method
  const next = leaf.next
  leaf.next = undefined
  const head = leaves.get(method)!
  if (replacement !== undefined) replacement.next = next
  const after = replacement ?? next
  if (head === leaf) {
    if (after === undefined) leaves.delete(method)
    else leaves.set(method, after)
    return
  }
  let previous = head
  while (previous.next !== leaf) previous = previous.next!
  previous.next = after
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
  const serving = servingLike(leaves.get(method), leaf.whenKey)!
  if (serving !== leaf) {
    serving.hidden!.splice(serving.hidden!.indexOf(leaf), 1)
    if (serving.hidden!.length === 0) serving.hidden = undefined
    return
  }
  const next = leaf.hidden?.pop()
  if (next !== undefined) {
    next.hidden = leaf.hidden!.length === 0 ? undefined : leaf.hidden
    replaceInChain(leaves, leaf, next)
    return
  }
  replaceInChain(leaves, leaf, undefined)
  if (leaf.when !== undefined) node.conditional--
  if (leaves.size === 0) node.leaves = undefined
  node.allow = undefined
  node.hash = (node.hash - leafHash(method, leaf.whenKey)) | 0
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
