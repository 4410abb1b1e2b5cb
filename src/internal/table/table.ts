/**
 * The route table's data type: a tree of routes that iterates, pipes and prints as Effect's data types do.
 *
 * @internal
 */
import { format, NodeInspectSymbol } from "effect/Inspectable"
import { pipeArguments } from "effect/Pipeable"
import type * as Route from "../../Route.js"
import type { Table } from "../../RouteTable.js"
import * as Tree from "./routeTree.js"

export const TypeId: unique symbol = Symbol.for("route-registry/RouteTable")

function* routesOf<R extends Route.Route>(tree: Tree.Tree<R>): Generator<R> {
  for (const leaf of tree.byId.values()) yield leaf.route
}

export class TableImpl<R extends Route.Route> implements Table<R> {
  readonly [TypeId]: typeof TypeId = TypeId
  // Not readonly: a process starting from a snapshot replaces it in one step with its store's (`replaceTree`).
  constructor(public tree: Tree.Tree<R> = new Tree.Tree()) {}
  [Symbol.iterator](): Iterator<R> {
    return routesOf(this.tree)
  }
  pipe() {
    // As Effect's own data types do: `pipeArguments` reads the arguments object.
    // eslint-disable-next-line prefer-rest-params
    return pipeArguments(this, arguments)
  }
  toJSON() {
    return { _id: "RouteTable", routes: Array.from(this, (route) => `${route.method} ${route.path} (${route.id})`) }
  }
  toString() {
    return format(this.toJSON())
  }
  [NodeInspectSymbol]() {
    return this.toJSON()
  }
}

/** Makes `tree` the table's, in one step: the next lookup reads it (a table started from a snapshot, caught up). */
export const replaceTree = <R extends Route.Route>(table: TableImpl<R>, tree: Tree.Tree<R>): void => {
  table.tree = tree
}
