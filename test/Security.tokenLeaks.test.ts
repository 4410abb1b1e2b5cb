/**
 * Security: tokens never appear in logs, problem bodies or headers, through every adapter, on every store.
 */
import { assert, describe, it } from "@effect/vitest"
import { Cause, Layer, Logger, LogLevel, Redacted } from "effect"
import * as Util from "node:util"
import * as Authenticator from "route-registry/Authenticator"
import * as Route from "route-registry/Route"
import * as RouteRepository from "route-registry/RouteRepository"
import type { Received, Sent } from "./utils/adapters.js"
import { adapters } from "./utils/adapters.js"
import { failingStore, get, json, post } from "./utils/httpContract.js"
import { sample } from "./utils/security.js"

describe("tokens never appear in logs, bodies or headers", () => {
  // Every token of this suite contains the marker, and nothing else sent contains it.
  const MARKER = /s3cr3t/i
  const ADMIN_T = "admin-S3CR3T-ADM-7q"
  const READER_T = "reader-S3CR3T-RD-2x"
  const WRITER_T = "writer-S3CR3T-WR-9k"
  const secretTokens = Authenticator.layerStaticTokens([
    { token: Redacted.make(ADMIN_T), scopes: ["routes:read", "routes:write"], id: "admin" },
    { token: Redacted.make(READER_T), scopes: ["routes:read"], id: "reader" },
    { token: Redacted.make(WRITER_T), scopes: ["routes:write"], id: "writer" }
  ])

  const presented = [
    `Bearer ${ADMIN_T}`,
    `bearer ${READER_T}`,
    `BEARER ${WRITER_T}`,
    "Bearer unknown-S3CR3T-xx-1a", // well-formed, not configured
    `Bearer ${ADMIN_T.toUpperCase()}`, // a case change
    `Bearer ${ADMIN_T}=`, // a suffix
    `Bearer ${ADMIN_T.slice(0, -1)}`, // a prefix
    "Bearer bad,S3CR3T;token", // malformed
    `Bearer ${ADMIN_T} extra`, // malformed
    `Bearer ${ADMIN_T}\u00e9`, // malformed (Latin-1)
    `Basic ${ADMIN_T}`, // another scheme
    `Token ${ADMIN_T}`,
    `${ADMIN_T}` // no scheme
  ]

  const battery = (id: string): ReadonlyArray<Sent> => [
    ...presented.flatMap((authorization) => [
      post(sample, { authorization, ...json }),
      post("{not json", { authorization, ...json }),
      post({ ...sample, path: "/x/" }, { authorization, ...json }),
      post(sample, { authorization, "content-type": "text/plain" }),
      post("x".repeat(70_000), { authorization, ...json }),
      get(id, { authorization }),
      get("not-an-id", { authorization }),
      { method: "DELETE", path: "/v1/routing", headers: { authorization } }
    ]),
    // Tokens elsewhere than the Authorization header: ignored, never echoed.
    { method: "GET", path: `/v1/routing/${id}?access_token=${ADMIN_T}` },
    { method: "POST", path: `/v1/routing?access_token=${ADMIN_T}`, headers: json, body: JSON.stringify(sample) },
    { method: "GET", path: `/v1/routing/${id}`, headers: { "x-api-key": ADMIN_T, cookie: `token=${ADMIN_T}` } }
  ]

  const stores = [
    ["memory store", RouteRepository.layerMemory],
    ["a store that dies (500)", failingStore("defect")],
    ["an unavailable store (503)", failingStore("unavailable")]
  ] as const

  for (const adapter of adapters) {
    it(`through ${adapter.name}, at every log level, on every store`, async () => {
      const lines: Array<string> = []
      const capture = Layer.merge(
        Logger.replace(
          Logger.defaultLogger,
          Logger.make((options) => lines.push(`${Logger.stringLogger.log(options)}\n${Cause.pretty(options.cause)}`))
        ),
        Logger.minimumLogLevel(LogLevel.All)
      )
      const consoleMethods = ["log", "info", "warn", "error", "debug", "trace"] as const
      const originals = consoleMethods.map((name) => console[name])
      for (const name of consoleMethods) {
        console[name] = (...args: Array<unknown>) => void lines.push(Util.inspect(args, { depth: null }))
      }
      const answers: Array<Received> = []
      // The servers close and the console comes back here, before the assertions, not when the test finishes: what
      // the servers log up to their close is checked below.
      try {
        for (const [, store] of stores) {
          const server = await adapter.start(Layer.mergeAll(store, secretTokens, capture))
          try {
            const created = await server.send(post(sample, { authorization: `Bearer ${ADMIN_T}`, ...json }))
            const id = created.status === 201 ? created.json.id : Route.makeRouteId(0)
            answers.push(created)
            for (const request of battery(id)) answers.push(await server.send(request))
          } finally {
            await server.close()
          }
        }
      } finally {
        consoleMethods.forEach((name, i) => (console[name] = originals[i]!))
      }
      // The capture works: refused tokens are logged at debug level, defects at error level (without the token).
      assert.isTrue(lines.some((line) => line.includes("token refused")), "no debug line captured")
      assert.isTrue(lines.some((line) => line.includes("secret_table")), "no error line captured")
      for (const line of lines) assert.notMatch(line, MARKER, `a token in the log: ${line}`)
      const statuses = new Set<number>()
      for (const answer of answers) {
        statuses.add(answer.status)
        assert.notMatch(answer.text, MARKER, `a token in a ${answer.status} body`)
        answer.headers.forEach((value, name) => assert.notMatch(value, MARKER, `a token in header ${name}`))
      }
      // The battery reached every outcome it is meant to.
      for (const status of [201, 400, 401, 403, 404, 405, 413, 415, 500, 503]) {
        assert.isTrue(statuses.has(status), `${status}`)
      }
    })
  }
})
