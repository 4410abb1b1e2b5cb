/**
 * Connections of the Postgres store's own, beside the host's pool, for what a pool connection cannot do: listening,
 * where the connection's own `error` and `end` events must reach the store (the pool's listening connection swallows
 * them), and cancelling reads when every pool connection is stuck. They are made from the host's `PgClient` config,
 * as `@effect/sql-pg` makes its pool's: the same server, credentials, TLS, stream and application name.
 *
 * @internal
 */
import type * as PgClient from "@effect/sql-pg/PgClient"
import { Duration, Effect, Redacted } from "effect"
import Pg from "pg"

/** Makes a new client, not yet connected. */
export type MakeClient = () => Pg.Client

/**
 * The maker of clients like the pool's, or `undefined` when the config does not say where the pool connects: a pool
 * handed to `PgClient.layerFromPool` that reaches its server through a stream of its own (the embedded PGlite) or
 * through the `PG*` environment. The store then listens through `PgClient.listen`, and cancels through the pool.
 */
export const fromConfig = (config: PgClient.PgClientConfig): MakeClient | undefined => {
  if (config.url === undefined && config.host === undefined && config.stream === undefined) return undefined
  // The options @effect/sql-pg's `PgClient.make` gives its pool.
  const options: Pg.ClientConfig = {
    connectionString: config.url === undefined ? undefined : Redacted.value(config.url),
    user: config.username,
    host: config.host,
    database: config.database,
    password: config.password === undefined ? undefined : Redacted.value(config.password),
    ssl: config.ssl,
    port: config.port,
    ...(config.stream === undefined ? {} : { stream: config.stream }),
    connectionTimeoutMillis: config.connectTimeout === undefined ? undefined : Duration.toMillis(config.connectTimeout),
    application_name: config.applicationName ?? "@effect/sql-pg",
    ...(config.types === undefined ? {} : { types: config.types })
  }
  return () => {
    const client = new Pg.Client(options)
    // An error event with no listener would take the process down; whoever uses the client listens too.
    client.on("error", () => undefined)
    return client
  }
}

// How long closing a connection may take: a connection that died silently never confirms its end.
const END_MILLIS = 1_000

/** A connected client, closed when the scope closes. */
export const connected = (make: MakeClient) =>
  Effect.acquireRelease(
    Effect.suspend(() => {
      const client = make()
      return Effect.tryPromise({
        try: () => client.connect().then(() => client),
        catch: (error) => {
          client.end().catch(() => undefined)
          return error
        }
      })
    }),
    (client) =>
      Effect.promise(() => client.end().catch(() => undefined)).pipe(
        Effect.interruptible,
        Effect.timeoutOption(END_MILLIS),
        Effect.asVoid
      )
  )
