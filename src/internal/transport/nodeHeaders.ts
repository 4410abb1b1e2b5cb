/**
 * Reading request headers from Node's `IncomingMessage` for the core.
 *
 * @internal
 */
import type { IncomingMessage } from "node:http"

/**
 * A header as the core reads it: several lines joined by ", ". Node's `req.headers` keeps only the first
 * `Authorization` line and drops the others, so that header is read from `rawHeaders`, where every line is kept.
 */
export const header = (req: IncomingMessage, name: string): string | undefined => {
  if (name !== "authorization") {
    const value = req.headers[name]
    return Array.isArray(value) ? value.join(", ") : value
  }
  const raw = req.rawHeaders
  let joined: string | undefined
  for (let i = 0; i < raw.length; i += 2) {
    const key = raw[i]!
    // The usual spellings first: lowercasing every header name of the right length allocates.
    if (
      key.length === 13 &&
      (key === "Authorization" || key === "authorization" || key.toLowerCase() === "authorization")
    ) {
      joined = joined === undefined ? raw[i + 1]! : `${joined}, ${raw[i + 1]!}`
    }
  }
  return joined
}

/** The client's address as `host:port` (`[v6]:port` for IPv6), `undefined` once the socket is gone. */
export const remoteAddress = (req: IncomingMessage): string | undefined => {
  const { remoteAddress: host, remotePort: port } = req.socket
  if (host === undefined) return undefined
  return `${host.includes(":") ? `[${host}]` : host}${port === undefined ? "" : `:${port}`}`
}
