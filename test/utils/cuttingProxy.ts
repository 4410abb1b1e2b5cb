/**
 * A TCP proxy in front of an HTTP server that cuts what passes: the next event cut in the middle of its frame (both
 * sockets destroyed after half of the chunk that carries it), or every connection refused while it is down. It counts
 * the `reset` events it passes to clients.
 */
import * as Net from "node:net"

export interface CuttingProxy {
  readonly origin: string
  /** The next chunk carrying event data is passed up to its middle, then the connection is destroyed. */
  readonly cutNextEventMidway: () => void
  /** Destroys every connection, and every new one until `up`. */
  readonly down: () => void
  readonly up: () => void
  /** How many `reset` events have passed. */
  readonly resets: () => number
  readonly close: () => Promise<void>
}

const RESET = "event: reset"

export const start = async (targetPort: number): Promise<CuttingProxy> => {
  const sockets = new Set<Net.Socket>()
  let cut = false
  let isDown = false
  let resets = 0
  const server = Net.createServer((client) => {
    if (isDown) return void client.destroy()
    const upstream = Net.connect(targetPort, "127.0.0.1")
    sockets.add(client).add(upstream)
    let tail = ""
    const end = () => {
      sockets.delete(client)
      sockets.delete(upstream)
      client.destroy()
      upstream.destroy()
    }
    client.on("data", (chunk) => upstream.write(chunk))
    upstream.on("data", (chunk: Buffer) => {
      const text = tail + chunk.toString("latin1")
      resets += text.split(RESET).length - 1
      tail = text.slice(-(RESET.length - 1))
      if (cut && text.includes("data: ")) {
        cut = false
        client.write(chunk.subarray(0, Math.max(1, chunk.length >> 1)), end)
        return
      }
      client.write(chunk)
    })
    client.on("close", end).on("error", end)
    upstream.on("close", end).on("error", end)
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  return {
    origin: `http://127.0.0.1:${(server.address() as Net.AddressInfo).port}`,
    cutNextEventMidway: () => {
      cut = true
    },
    down: () => {
      isDown = true
      for (const socket of sockets) socket.destroy()
    },
    up: () => {
      isDown = false
    },
    resets: () => resets,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy()
        server.close(() => resolve())
      })
  }
}
