import { Layer } from "effect"
import * as RouteRepository from "route-registry/RouteRepository"
import type { Store } from "./httpContract.js"
import * as TestDatabase from "./TestDatabase.js"

/** Both stores, each fresh whenever a server is started over it. */
export const stores: ReadonlyArray<readonly [name: string, store: Store]> = [
  ["memory store", RouteRepository.layerMemory],
  ["postgres store", TestDatabase.storeLayer().pipe(Layer.provide(TestDatabase.layer()))]
]
