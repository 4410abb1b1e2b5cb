/**
 * The benchmark's servers (bench/peers, bench/ours) as adapters of the HTTP contract suite: what the files of
 * test/bench-peers/ share. Each server is started with the suite's tokens and options over its own store: the suite's
 * store layer is ignored.
 */
import type { Options, Started } from "../../bench/peers/shared.js"
import type { Adapter } from "./adapters.js"
import { fetchFrom } from "./adapters.js"
import { ADMIN, READER, WRITER } from "./httpContract.js"

export type Start = (options: Options) => Promise<Started>

export const tokens: Options["tokens"] = [
  { token: ADMIN, scopes: ["routes:read", "routes:write"], id: "admin" },
  { token: READER, scopes: ["routes:read"], id: "reader" },
  { token: WRITER, scopes: ["routes:write"], id: "writer" }
]

export const asAdapter = (name: string, start: Start): Adapter => ({
  name,
  start: async (_services, options) => {
    const server = await start({
      tokens,
      maxBodyBytes: options?.maxBodyBytes,
      bodyTimeoutMillis: options?.bodyTimeoutMillis
    })
    const origin = `http://127.0.0.1:${server.port}`
    return { send: fetchFrom(origin), fetch: globalThis.fetch, origin, close: server.close }
  }
})
