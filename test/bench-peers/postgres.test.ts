/**
 * The benchmark's Postgres peer and the library's Node listener, each on a fresh table of the test database, pass the
 * rows of create and get the benchmark sends.
 */
import { afterAll, describe } from "@effect/vitest"
import Pg from "pg"
import * as RouteRepository from "route-registry/RouteRepository"
import * as OursNodeListener from "../../bench/ours/node-listener.js"
import * as FastifyPg from "../../bench/peers/fastify-pg.js"
import { asAdapter, type Start } from "../utils/benchPeers.js"
import { createGetContract } from "../utils/httpContract.js"
import * as TestDatabase from "../utils/TestDatabase.js"

describe("benchmark servers on Postgres", () => {
  let pool: Pg.Pool | undefined
  const database = () => (pool ??= new Pg.Pool({ connectionString: TestDatabase.url, max: 10 }))
  afterAll(() => pool?.end())
  // An installed table, emptied, for each server; emptied again for the next when the server closes.
  const onFreshTable = (start: Start): Start => async (options) => {
    const pool = database()
    const { release, table } = await TestDatabase.leaseTable(pool)
    const server = await start({ ...options, database: { pool, table } })
    return {
      ...server,
      close: async () => {
        await server.close()
        await release()
      }
    }
  }
  describe("Fastify + pg.Pool", () =>
    createGetContract(asAdapter("Fastify + pg", onFreshTable(FastifyPg.start)), RouteRepository.layerMemory))
  describe("ours: AdminListener", () =>
    createGetContract(
      asAdapter("AdminListener + pg", onFreshTable(OursNodeListener.start)),
      RouteRepository.layerMemory
    ))
})
