/**
 * A TCP proxy in front of the test database that can stop passing bytes on: what a connection that hangs (a network
 * partition, a stalled server) looks like to the client, with no server to stop.
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
  /** From now on, holds bytes as `hold` says, until `release`. */
  readonly hold: (hold: Hold) => void
  /** Passes on everything held, and stops holding. */
  readonly release: () => void
  readonly close: () => Promise<void>
}

interface Pipe {
  held: Array<Buffer> | undefined
  readonly to: Net.Socket
}

export const start = async (databaseUrl: string): Promise<Proxy> => {
  const target = new URL(databaseUrl)
  const pipes = new Set<{ readonly toServer: Pipe; readonly toClient: Pipe }>()
  let armed: Hold | undefined
  const sockets = new Set<Net.Socket>()

  const pass = (pipe: Pipe, chunk: Buffer) => pipe.held === undefined ? pipe.to.write(chunk) : pipe.held.push(chunk)

  const server = Net.createServer((client) => {
    const upstream = Net.connect(Number(target.port || 5432), target.hostname)
    sockets.add(client).add(upstream)
    const connection: { readonly toServer: Pipe; readonly toClient: Pipe } = {
      toServer: { held: undefined, to: upstream },
      toClient: { held: undefined, to: client }
    }
    pipes.add(connection)
    const startHolding = (direction: Direction) => {
      const pipe = direction === "to server" ? connection.toServer : connection.toClient
      pipe.held ??= []
    }
    if (armed !== undefined && armed.after === undefined) startHolding(armed.direction)
    client.on("data", (chunk) => {
      if (armed?.after !== undefined && chunk.includes(armed.after)) startHolding(armed.direction)
      pass(connection.toServer, chunk)
    })
    upstream.on("data", (chunk) => pass(connection.toClient, chunk))
    const end = () => {
      pipes.delete(connection)
      client.destroy()
      upstream.destroy()
    }
    client.on("close", end).on("error", end)
    upstream.on("close", end).on("error", end)
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const url = new URL(databaseUrl)
  url.hostname = "127.0.0.1"
  url.port = String((server.address() as Net.AddressInfo).port)

  return {
    url: url.toString(),
    hold: (hold) => {
      armed = hold
      if (hold.after !== undefined) return
      for (const pipe of pipes) (hold.direction === "to server" ? pipe.toServer : pipe.toClient).held ??= []
    },
    release: () => {
      armed = undefined
      for (const { toClient, toServer } of pipes) {
        for (const pipe of [toServer, toClient]) {
          const held = pipe.held ?? []
          pipe.held = undefined
          for (const chunk of held) pipe.to.write(chunk)
        }
      }
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy()
        server.close(() => resolve())
      })
  }
}
