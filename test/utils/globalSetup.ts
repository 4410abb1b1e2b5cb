/**
 * Vitest's global set-up: names the PostgreSQL server every Postgres suite of the run uses. DATABASE_URL when it is
 * set (CI sets it, to the machine's server); otherwise a server of the run's own (EmbeddedServer), started once for
 * the whole run and removed when it ends. The test processes read it with `inject("database")` (TestDatabase).
 */
import type { TestProject } from "vitest/node"
import { build } from "../../dashboard/build.js"
import * as EmbeddedServer from "./EmbeddedServer.js"

export interface Database {
  readonly url: string
  /** The run's own server, which the tests may stop and start; absent when DATABASE_URL names the server. */
  readonly embedded?: EmbeddedServer.Control
}

declare module "vitest" {
  export interface ProvidedContext {
    readonly database: Database
  }
}

export default async function setup(project: TestProject) {
  // The hosts under test serve the dashboard (npm start's does by default): its page is built first, as it ships.
  await build()
  const url = process.env.DATABASE_URL
  if (url !== undefined && url !== "") {
    project.provide("database", { url })
    return
  }
  const started = Date.now()
  const server = await EmbeddedServer.make()
  console.log(
    `DATABASE_URL is unset: the Postgres suites run on a PostgreSQL server of their own, ${server.url}, ` +
      `started in ${Date.now() - started} ms in ${server.control.directory} (removed when the run ends)`
  )
  project.provide("database", { url: server.url, embedded: server.control })
  return server.close
}
