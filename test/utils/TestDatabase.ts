/**
 * The database the Postgres suites run against: a database of this test process's own, on the server named by
 * DATABASE_URL or, when it is unset, on the server the run started for itself (see globalSetup.ts). Every suite runs
 * on either; none is skipped.
 *
 * Each vitest worker (VITEST_POOL_ID: no two test processes that run at once share one) works in a database of its
 * own, made here on first use and dropped when the run ends: test files run in parallel, and what one file does to
 * its database (ending its connections, counting them) reaches no other.
 */
import { PgClient } from "@effect/sql-pg"
import * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import { Effect, Layer, Redacted } from "effect"
import Pg from "pg"
import * as PgRouteRepository from "route-registry/PgRouteRepository"
import { inject } from "vitest"
import type {} from "./globalSetup.js"

const database = inject("database")

const withDatabase = (server: string, name: string) => {
  const url = new URL(server)
  url.pathname = `/${name}`
  return url.toString()
}

/** Runs `f` on a connection of its own to the server's own database (where databases are made and dropped). */
const onServer = async <A>(f: (client: Pg.Client) => Promise<A>): Promise<A> => {
  const client = new Pg.Client({ connectionString: database.url })
  await client.connect()
  try {
    return await f(client)
  } finally {
    await client.end()
  }
}

/** Makes database `name` unless it exists: the worker's database may have been made by an earlier file. */
const ensureDatabase = (name: string) =>
  onServer(async (client) => {
    const found = await client.query("SELECT 1 FROM pg_database WHERE datname = $1", [name])
    if (found.rowCount !== 0) return
    await client.query(`CREATE DATABASE ${Pg.escapeIdentifier(name)}`).catch((error: { code?: string }) => {
      if (error.code !== "42P04") throw error // duplicate_database: made meanwhile, which is as good
    })
  })

const workerDatabase = `${database.prefix}w${process.env.VITEST_POOL_ID ?? "0"}`
await ensureDatabase(workerDatabase)

/** The URL of this test process's database. */
export const url = withDatabase(database.url, workerDatabase)

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

// Retried: closing the server interrupts its table's poll, and @effect/sql-pg cancels an interrupted query by its
// backend's pid; that cancel can land on the next statement the same connection runs, which may be one of these.
const settled = <A, E>(effect: Effect.Effect<A, E, SqlClient.SqlClient>, sql: SqlClient.SqlClient) =>
  effect.pipe(Effect.provideService(SqlClient.SqlClient, sql), Effect.retry({ times: 3 }), Effect.orDie)

/**
 * A table this process installed and emptied, for the next store to take: installing one takes about 25 statements,
 * and the HTTP contract starts a store for each of its tests. `rows` is what the migrations wrote into the tables of
 * its family (the single rows of the feed and the limits), which emptying puts back.
 */
interface Installed {
  readonly table: string
  readonly rows: ReadonlyArray<{ readonly name: string; readonly rows: string }>
  /** The sequences its tables own (their identity columns): restarted as TRUNCATE's RESTART IDENTITY does. */
  readonly sequences: ReadonlyArray<string>
}

const idle: Array<Installed> = []

/** Installs `table` and notes what its migrations wrote: every table named after it but the migrations table. */
const install = (table: string) =>
  Effect.gen(function*() {
    yield* PgRouteRepository.migrate({ table })
    const sql = (yield* SqlClient.SqlClient).withoutTransforms()
    const family = yield* sql<{ readonly name: string }>`
      SELECT tablename AS name FROM pg_tables
      WHERE schemaname = current_schema() AND (tablename = ${table} OR starts_with(tablename, ${`${table}_`}))
        AND tablename <> ${`${table}_migrations`}`
    const rows = yield* Effect.forEach(family, ({ name }) =>
      Effect.map(
        sql<{ readonly rows: string }>`SELECT coalesce(json_agg(t), '[]')::text AS rows FROM ${sql(name)} AS t`,
        ([row]) => ({ name, rows: row!.rows })
      ))
    const sequences = yield* sql<{ readonly name: string }>`
      SELECT s.relname AS name FROM pg_class s
      JOIN pg_depend d ON d.classid = 'pg_class'::regclass AND d.objid = s.oid AND d.deptype IN ('a', 'i')
      JOIN pg_class t ON t.oid = d.refobjid
      WHERE s.relkind = 'S' AND t.relnamespace = current_schema()::regnamespace
        AND t.relname IN ${sql.in(family.map(({ name }) => name))}`
    return { table, rows, sequences: sequences.map(({ name }) => name) }
  })

/**
 * Empties the table and its family as a fresh install leaves them: no route, no history, no key, revisions anew. By
 * DELETE with the triggers off (the log's, the bounds'), as TRUNCATE would: a TRUNCATE of the family and its new files
 * took 4 times as long on a loaded machine, after each of some thousand tests.
 */
const empty = ({ rows, sequences }: Installed) =>
  Effect.flatMap(SqlClient.SqlClient, (client) => {
    const sql = client.withoutTransforms()
    return sql.withTransaction(Effect.gen(function*() {
      yield* sql.unsafe("SET LOCAL session_replication_role = replica")
      for (const { name } of rows) yield* sql`DELETE FROM ${sql(name)}`
      for (const name of sequences) yield* sql.unsafe(`ALTER SEQUENCE ${Pg.escapeIdentifier(name)} RESTART`)
      for (const { name, rows: written } of rows) {
        if (written === "[]") continue
        yield* sql`INSERT INTO ${sql(name)} SELECT * FROM json_populate_recordset(NULL::${sql(name)}, ${written}::json)`
      }
    }))
  })

/**
 * The Postgres store on a table of its own. Given a table or a schema, that table is installed for the store and
 * uninstalled (table, history, functions) when the layer is released. Otherwise the store takes a table this process
 * installed before and another store left, emptied (as good as a fresh one, and 20 times faster), and empties it
 * again when the layer is released; the run drops the test process's database with whatever tables it holds.
 */
export const storeLayer = (options: PgRouteRepository.Options = {}) =>
  Layer.unwrapScoped(Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    if (options.table !== undefined || options.schema !== undefined) {
      const table = options.table ?? freshTable()
      yield* Effect.addFinalizer(() => settled(PgRouteRepository.uninstall({ ...options, table }), sql))
      return PgRouteRepository.layer({ ...options, table })
    }
    const installed = idle.pop() ?? (yield* settled(install(freshTable()), sql))
    yield* Effect.addFinalizer(() =>
      settled(empty(installed), sql).pipe(
        Effect.andThen(() => idle.push(installed)),
        Effect.catchAllDefect(() => settled(PgRouteRepository.uninstall({ table: installed.table }), sql))
      )
    )
    return PgRouteRepository.layer({ ...options, table: installed.table })
  }))

/**
 * A table as `storeLayer` gives one (installed, emptied), named for a server that installs the table it is given
 * (the benchmark's servers: their migration finds it done), on `pool`; `release` empties it for the next.
 */
export const leaseTable = async (
  pool: Pg.Pool
): Promise<{ readonly table: string; readonly release: () => Promise<void> }> => {
  const onPool = <A>(f: (sql: SqlClient.SqlClient) => Effect.Effect<A>) =>
    Effect.runPromise(
      Effect.flatMap(SqlClient.SqlClient, f).pipe(
        Effect.provide(PgClient.layerFromPool({ acquire: Effect.succeed(pool) })),
        Effect.orDie
      )
    )
  const installed = idle.pop() ?? (await onPool((sql) => settled(install(freshTable()), sql)))
  return {
    table: installed.table,
    release: () => onPool((sql) => settled(empty(installed), sql)).then(() => void idle.push(installed))
  }
}

/** A client whose every connection is refused: nothing listens on port 1. */
export const unreachable: Layer.Layer<PgClient.PgClient | SqlClient.SqlClient, SqlError> = PgClient.layerFromPool({
  acquire: Effect.acquireRelease(
    Effect.sync(() => new Pg.Pool({ host: "127.0.0.1", port: 1, connectionTimeoutMillis: 2000 })),
    (pool) => Effect.promise(() => pool.end())
  )
})

/**
 * A database of its own on the test server, for tests that run several host processes against one database; `drop`
 * removes it (closing any connection left). One left behind is dropped when the run ends.
 */
export const freshDatabase = async (): Promise<{ readonly url: string; readonly drop: () => Promise<void> }> => {
  const name = `${workerDatabase}_${process.pid.toString(36)}_${counter++}`
  await onServer((client) => client.query(`CREATE DATABASE ${Pg.escapeIdentifier(name)}`))
  return {
    url: withDatabase(database.url, name),
    drop: () =>
      onServer((client) => client.query(`DROP DATABASE IF EXISTS ${Pg.escapeIdentifier(name)} WITH (FORCE)`))
        .then(() => undefined)
  }
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
