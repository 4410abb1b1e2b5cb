/**
 * The route tree's nodes and the answers of a lookup (see routeTree.ts for how the tree works).
 *
 * @internal
 */
import type * as Route from "../../Route.js"
import { type Class, depthHash, join, stringHash } from "./classes.js"

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

export const PARAM_KEY = ":"
export const WILDCARD_KEY = "*"

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

export const byteOrder = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0)
