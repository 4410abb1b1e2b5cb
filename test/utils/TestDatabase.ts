/**
 * The database the Postgres suites run against: the server named by DATABASE_URL, or, when it is unset, an
 * embedded PGlite (real Postgres compiled to WASM) so `npm test` needs no server. Under CI the server is
 * required: a missing DATABASE_URL fails the suites instead of quietly testing something else.
 */
import { PgClient } from "@effect/sql-pg"
import * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import { PGlite } from "@electric-sql/pglite"
import { createPgConfig } from "@electric-sql/pglite/node-postgres"
import { Effect, Layer, Redacted } from "effect"
import { execFileSync } from "node:child_process"
import { readdirSync } from "node:fs"
import Pg from "pg"
import * as PgRouteRepository from "route-registry/PgRouteRepository"

const url = process.env.DATABASE_URL
export const usingServer = url !== undefined && url !== ""

/**
 * For a test that needs a PostgreSQL server (not the embedded one): reported skipped, with `reason`, where none is
 * configured; under CI, where one always is, a missing server fails the test instead.
 */
export const requireServer = (ctx: { readonly skip: (condition: boolean, note?: string) => void }, reason: string) => {
  ctx.skip(!usingServer && process.env.CI !== "true", `${reason}: set DATABASE_URL to run it`)
  if (!usingServer) throw new Error("CI must test against the PostgreSQL server: set DATABASE_URL (see .ci/run)")
}

export type ClientOptions = Pick<
  PgClient.PgClientConfig,
  "transformResultNames" | "transformQueryNames" | "maxConnections"
>

// One PGlite per test file: it is a single session, so every client shares its one pool.
let embedded: Promise<Pg.Pool> | undefined
const embeddedPool = () =>
  embedded ??= PGlite.create().then((pglite) => new Pg.Pool(createPgConfig(pglite) as Pg.PoolConfig))

/** A `SqlClient` on the test database; each call makes a new client (a new pool on the server). */
export const layer = (options: ClientOptions = {}): Layer.Layer<PgClient.PgClient | SqlClient.SqlClient, SqlError> => {
  if (usingServer) return PgClient.layer({ url: Redacted.make(url!), maxConnections: 20, ...options })
  if (process.env.CI === "true") {
    return Layer.die(new Error("CI must test against the PostgreSQL server: set DATABASE_URL (see .ci/run)"))
  }
  // The embedded database has one connection whatever is asked.
  const { maxConnections: _, ...transforms } = options
  return PgClient.layerFromPool({ acquire: Effect.promise(embeddedPool), ...transforms })
}

let counter = 0

/** A fresh table name, so tests never see each other's rows. */
export const freshTable = () => `rr_test_${process.pid}_${Date.now().toString(36)}_${counter++}`

/** The Postgres store on a table of its own, uninstalled (table, history, functions) when the layer is released. */
export const storeLayer = (options: PgRouteRepository.Options = {}) =>
  Layer.unwrapScoped(Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const table = options.table ?? freshTable()
    yield* Effect.addFinalizer(() =>
      PgRouteRepository.uninstall({ ...options, table }).pipe(
        Effect.provideService(SqlClient.SqlClient, sql),
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
 * A database of its own on the server named by DATABASE_URL, for tests that run several host processes against one
 * database; `drop` removes it (closing any connection left).
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
  const own = new URL(url!)
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

/** Stops or starts the PostgreSQL server the machine runs (the one DATABASE_URL names). */
export const cluster = (action: "start" | "stop") =>
  execFileSync("pg_ctlcluster", ["--skip-systemctl-redirect", readdirSync("/etc/postgresql")[0]!, "main", action], {
    stdio: "ignore"
  })

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
