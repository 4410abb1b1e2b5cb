/**
 * Vitest's global set-up: names the PostgreSQL server every Postgres suite of the run uses. DATABASE_URL when it is
 * set (CI sets it, to the machine's server); otherwise a server of the run's own (EmbeddedServer), started once for
 * the whole run and removed when it ends. The test processes read it with `inject("database")` (TestDatabase), and
 * each works in a database of its own on that server (TestDatabase.ts), which the run drops when it ends.
 *
 * Vitest runs this once for each project (and once for the root): the server and the run's databases are the run's,
 * shared by every call and released by the last teardown.
 */
import { fileURLToPath } from "node:url"
import Pg from "pg"
import type { TestProject } from "vitest/node"
import { build } from "../../dashboard/build.js"
import * as Compiled from "./compiled.js"
import * as EmbeddedServer from "./EmbeddedServer.js"

export interface Database {
  readonly url: string
  /**
   * What the name of every database this run makes starts with: the name of DATABASE_URL's database (or `postgres`),
   * then `_r` and the run's process id in base 36, so a later run knows whose they are.
   */
  readonly prefix: string
}

declare module "vitest" {
  export interface ProvidedContext {
    readonly database: Database
    /** Where src/ and examples/ are compiled for the processes the tests start (compiled.ts). */
    readonly compiled: string
  }
}

/** `${base}_r<pid in base 36>_`: a PostgreSQL name is at most 63 bytes, and the test processes add up to 20. */
const prefixOf = (url: string, pid: number) => {
  const base = decodeURIComponent(new URL(url).pathname.slice(1)) || "postgres"
  return `${base.slice(0, 30)}_r${pid.toString(36)}_`
}

const RUN = /_r([0-9a-z]+)_/

const alive = (pid: number) => {
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM"
  }
}

/** Drops the databases of this run, or, with `stale`, those a run that is no longer running left behind. */
const dropDatabases = async (url: string, prefix: string, stale: boolean) => {
  const client = new Pg.Client({ connectionString: url })
  await client.connect()
  try {
    const base = prefix.slice(0, prefix.lastIndexOf("_r"))
    const { rows } = await client.query<{ datname: string }>(
      "SELECT datname FROM pg_database WHERE starts_with(datname, $1)",
      [stale ? `${base}_r` : prefix]
    )
    for (const { datname } of rows) {
      const owner = RUN.exec(datname.slice(base.length))?.[1]
      if (stale && (owner === undefined || alive(parseInt(owner, 36)))) continue
      await client.query(`DROP DATABASE IF EXISTS ${Pg.escapeIdentifier(datname)} WITH (FORCE)`)
    }
  } finally {
    await client.end()
  }
}

interface Shared {
  users: number
  database: Promise<Database>
  compiled: Promise<string>
  close: () => Promise<void>
}

// One for the run, whichever project's set-up comes first (each may load this module anew).
const KEY = Symbol.for("route-registry/test/globalSetup")
const registry = globalThis as { [KEY]?: Shared }

const open = async (): Promise<{ readonly database: Database; readonly close: () => Promise<void> }> => {
  const given = process.env.DATABASE_URL
  if (given !== undefined && given !== "") {
    const prefix = prefixOf(given, process.pid)
    await dropDatabases(given, prefix, true)
    return { database: { url: given, prefix }, close: () => dropDatabases(given, prefix, false) }
  }
  const started = Date.now()
  const server = await EmbeddedServer.make()
  console.log(
    `DATABASE_URL is unset: the Postgres suites run on a PostgreSQL server of their own, ${server.url}, ` +
      `started in ${Date.now() - started} ms in ${server.control.directory} (removed when the run ends)`
  )
  return {
    database: { url: server.url, prefix: prefixOf(server.url, process.pid) },
    close: server.close
  }
}

export default async function setup(project: TestProject) {
  if (registry[KEY] === undefined) {
    // The hosts under test serve the dashboard (npm start's does by default): its page is built first, as it ships.
    await build()
    const opened = open()
    const compiled = Compiled.compile(fileURLToPath(new URL("../..", import.meta.url)), alive)
    registry[KEY] = {
      users: 0,
      database: opened.then((opened) => opened.database),
      compiled: compiled.then(({ directory }) => directory),
      close: () =>
        Promise.all([opened.then((opened) => opened.close()), compiled.then(({ remove }) => remove())])
          .then(() => undefined)
    }
  }
  const shared = registry[KEY]
  shared.users++
  project.provide("database", await shared.database)
  project.provide("compiled", await shared.compiled)
  return async () => {
    if (--shared.users > 0) return
    delete registry[KEY]
    await shared.close()
  }
}
