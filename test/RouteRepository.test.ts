import { describe, it } from "@effect/vitest"
import * as RouteRepository from "route-registry/RouteRepository"
import { repositoryContract } from "./utils/repositoryContract.js"

describe("RouteRepository.layerMemory", () => {
  repositoryContract(
    it,
    RouteRepository.layerMemory,
    (historyCapacity) => RouteRepository.layerMemoryWith({ historyCapacity })
  )
})
