/**
 * A TCP proxy in front of a database: an address that can move to another server (`point`, as a virtual IP or
 * HAProxy moves when a standby is promoted), stop passing bytes on (`hold`: what a connection that hangs, a network
 * partition or a stalled server, looks like to the client, with no server to stop), and alter what a client sends
 * (`replaceOnce`: a statement answered otherwise than it was sent).
 */
import * as Net from "node:net"

export type Direction = "to server" | "to client"

export interface Hold {
  /** Which way bytes stop passing. */
  readonly direction: Direction
  /** Starts holding on the connection whose client sends a chunk holding this text (every connection: undefined). */
  readonly after?: string | undefined
}

export interface Proxy {
  /** The database URL through the proxy. */
  readonly url: string
  readonly port: number
  /** From now on, holds bytes as `hold` says, until `release`. */
  readonly hold: (hold: Hold) => void
  /** Passes on everything held, and stops holding. */
  readonly release: () => void
  /**
   * Sends new connections to the server of `databaseUrl` (none: refuses them), as an address that moves to another
   * server does; the connections open now stay where they are, until their server ends them.
   */
  readonly point: (databaseUrl: string | undefined) => void
  /** Cuts every connection open now, as a proxy does to those of a server it marks down. */
  readonly cut: () => void
  /** Cuts the next connection whose client sends a chunk holding `text`, before the chunk passes on. */
  readonly cutOnce: (text: string) => void
  /** In the next chunk a client sends that holds `from`, replaces it by `to`, which must be as long. */
  readonly replaceOnce: (from: string, to: string) => void
  readonly close: () => Promise<void>
}

interface Pipe {
  held: Array<Buffer> | undefined
  readonly to: Net.Socket
}

interface Connection {
  readonly toServer: Pipe
  readonly toClient: Pipe
  readonly end: () => void
}

const targetOf = (databaseUrl: string) => {
  const url = new URL(databaseUrl)
  return { host: url.hostname, port: Number(url.port || 5432) }
}

export const start = async (databaseUrl: string): Promise<Proxy> => {
  let target: { readonly host: string; readonly port: number } | undefined = targetOf(databaseUrl)
  const connections = new Set<Connection>()
  let armed: Hold | undefined
  let replacing: { readonly from: string; readonly to: string } | undefined
  let cutting: string | undefined

  const pass = (pipe: Pipe, chunk: Buffer) => pipe.held === undefined ? pipe.to.write(chunk) : pipe.held.push(chunk)

  const replaced = (chunk: Buffer) => {
    if (replacing === undefined) return chunk
    const at = chunk.indexOf(replacing.from)
    if (at < 0) return chunk
    const copy = Buffer.from(chunk)
    copy.write(replacing.to, at)
    replacing = undefined
    return copy
  }

  const server = Net.createServer((client) => {
    if (target === undefined) return void client.destroy()
    const upstream = Net.connect(target.port, target.host)
    const connection: Connection = {
      toServer: { held: undefined, to: upstream },
      toClient: { held: undefined, to: client },
      end: () => {
        connections.delete(connection)
        client.destroy()
        upstream.destroy()
      }
    }
    connections.add(connection)
    const startHolding = (direction: Direction) => {
      const pipe = direction === "to server" ? connection.toServer : connection.toClient
      pipe.held ??= []
    }
    if (armed !== undefined && armed.after === undefined) startHolding(armed.direction)
    client.on("data", (chunk) => {
      if (cutting !== undefined && chunk.includes(cutting)) {
        cutting = undefined
        return connection.end()
      }
      if (armed?.after !== undefined && chunk.includes(armed.after)) startHolding(armed.direction)
      pass(connection.toServer, replaced(chunk))
    })
    upstream.on("data", (chunk) => pass(connection.toClient, chunk))
    client.on("close", connection.end).on("error", connection.end)
    upstream.on("close", connection.end).on("error", connection.end)
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const port = (server.address() as Net.AddressInfo).port
  const url = new URL(databaseUrl)
  url.hostname = "127.0.0.1"
  url.port = String(port)

  return {
    url: url.toString(),
    port,
    hold: (hold) => {
      armed = hold
      if (hold.after !== undefined) return
      for (const pipe of connections) (hold.direction === "to server" ? pipe.toServer : pipe.toClient).held ??= []
    },
    release: () => {
      armed = undefined
      for (const { toClient, toServer } of connections) {
        for (const pipe of [toServer, toClient]) {
          const held = pipe.held ?? []
          pipe.held = undefined
          for (const chunk of held) pipe.to.write(chunk)
        }
      }
    },
    point: (databaseUrl) => {
      target = databaseUrl === undefined ? undefined : targetOf(databaseUrl)
    },
    cut: () => {
      for (const connection of [...connections]) connection.end()
    },
    cutOnce: (text) => {
      cutting = text
    },
    replaceOnce: (from, to) => {
      if (Buffer.byteLength(from) !== Buffer.byteLength(to)) throw new Error("a replacement must be as long")
      replacing = { from, to }
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const connection of [...connections]) connection.end()
        server.close(() => resolve())
      })
  }
}
