/**
 * The database the Postgres suites run against: the server named by DATABASE_URL, or, when it is unset, the server
 * the run started for itself (see globalSetup.ts). Every suite runs on either; none is skipped.
 */
import { PgClient } from "@effect/sql-pg"
import * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import { Effect, Layer, Redacted } from "effect"
import { execFileSync, spawnSync } from "node:child_process"
import { readdirSync } from "node:fs"
import Pg from "pg"
import * as PgRouteRepository from "route-registry/PgRouteRepository"
import { inject } from "vitest"
import * as EmbeddedServer from "./EmbeddedServer.js"
import type {} from "./globalSetup.js"

const database = inject("database")

/** The URL of the run's database. */
export const url = database.url

export type ClientOptions = Pick<
  PgClient.PgClientConfig,
  "transformResultNames" | "transformQueryNames" | "maxConnections"
>

/** A `SqlClient` on the test database; each call makes a new client (a new pool on the server). */
export const layer = (options: ClientOptions = {}): Layer.Layer<PgClient.PgClient | SqlClient.SqlClient, SqlError> =>
  PgClient.layer({ url: Redacted.make(url), maxConnections: 20, ...options })

let counter = 0

/** A fresh table name, so tests never see each other's rows. */
export const freshTable = () => `rr_test_${process.pid}_${Date.now().toString(36)}_${counter++}`

/** The Postgres store on a table of its own, uninstalled (table, history, functions) when the layer is released. */
export const storeLayer = (options: PgRouteRepository.Options = {}) =>
  Layer.unwrapScoped(Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const table = options.table ?? freshTable()
    // Retried: closing the server interrupts its table's poll, and @effect/sql-pg cancels an interrupted query by its
    // backend's pid; that cancel can land on the next statement the same connection runs, which may be this one.
    yield* Effect.addFinalizer(() =>
      PgRouteRepository.uninstall({ ...options, table }).pipe(
        Effect.provideService(SqlClient.SqlClient, sql),
        Effect.retry({ times: 3 }),
        Effect.orDie
      )
    )
    return PgRouteRepository.layer({ ...options, table })
  }))

/** A client whose every connection is refused: nothing listens on port 1. */
export const unreachable: Layer.Layer<PgClient.PgClient | SqlClient.SqlClient, SqlError> = PgClient.layerFromPool({
  acquire: Effect.acquireRelease(
    Effect.sync(() => new Pg.Pool({ host: "127.0.0.1", port: 1, connectionTimeoutMillis: 2000 })),
    (pool) => Effect.promise(() => pool.end())
  )
})

/**
 * A database of its own on the test server, for tests that run several host processes against one database; `drop`
 * removes it (closing any connection left).
 */
export const freshDatabase = async (): Promise<{ readonly url: string; readonly drop: () => Promise<void> }> => {
  const name = `rr_${freshTable()}`
  const admin = new Pg.Client({ connectionString: url })
  await admin.connect()
  try {
    await admin.query(`CREATE DATABASE ${name}`)
  } finally {
    await admin.end()
  }
  const own = new URL(url)
  own.pathname = `/${name}`
  return {
    url: own.toString(),
    drop: async () => {
      const client = new Pg.Client({ connectionString: url })
      await client.connect()
      try {
        await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
      } finally {
        await client.end()
      }
    }
  }
}

/**
 * Stops or starts the test server: the run's own server, or, where DATABASE_URL names one (CI), the PostgreSQL server
 * the machine runs.
 */
export const cluster = (action: "start" | "stop") => {
  if (database.embedded !== undefined) return EmbeddedServer[action](database.embedded)
  execFileSync("pg_ctlcluster", ["--skip-systemctl-redirect", readdirSync("/etc/postgresql")[0]!, "main", action], {
    stdio: "ignore"
  })
}

/** Starts the test server if a test stopped it and failed before starting it again: it is left up, whatever happened. */
export const keepUp = () => {
  const { hostname, port } = new URL(url)
  const up = database.embedded !== undefined
    ? EmbeddedServer.running(database.embedded)
    : spawnSync("pg_isready", ["-q", "-h", hostname, "-p", port || "5432"]).status === 0
  if (!up) cluster("start")
}

/** Runs `f` on a connection of its own to `url`, retrying for 5 s while the server starts. */
export const admin = async <A>(url: string, f: (client: Pg.Client) => Promise<A>): Promise<A> => {
  for (let attempt = 0;; attempt++) {
    const client = new Pg.Client({ connectionString: url })
    try {
      await client.connect()
      try {
        return await f(client)
      } finally {
        await client.end()
      }
    } catch (error) {
      if (attempt >= 20) throw error
      await new Promise((resolve) => setTimeout(resolve, 250)) // the server may still be starting
    }
  }
}
