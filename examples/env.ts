/**
 * What the example hosts share when started from the command line: where to listen, which tokens to accept (the
 * variables of `npm start`, CONTRACT §5), and a graceful shutdown. Tests import the examples instead and pass
 * services of their own.
 */
import { Layer, Redacted } from "effect"
import { randomBytes } from "node:crypto"
import * as Http from "node:http"
import type { AddressInfo } from "node:net"
import { pathToFileURL } from "node:url"
import * as Authenticator from "route-registry/Authenticator"
import type * as InvalidOption from "route-registry/InvalidOption"
import * as RouteRepository from "route-registry/RouteRepository"

// Past this, connections still open are closed, so a stop stays within the 10 seconds the contract allows.
const SHUTDOWN_GRACE_MS = 9_000

/** `true` when the module at `url` is the script node was started with, not an import. */
export const isMain = (url: string): boolean =>
  process.argv[1] !== undefined && url === pathToFileURL(process.argv[1]).href

/** Prints the problem and exits 1: for configuration a host cannot start with. */
export const fail = (message: string): never => {
  console.error(`error: ${message}`)
  process.exit(1)
}

/** `PORT` (0 picks a free port), or the example's own default so several examples can run side by side. */
export const port = (fallback: number): number => {
  const raw = process.env.PORT || String(fallback)
  const port = Number(raw)
  return Number.isInteger(port) && port >= 0 && port <= 65535 ? port : fail(`PORT must be 0–65535 (got "${raw}")`)
}

export const host = (): string => process.env.HOST || "127.0.0.1"

/** A whole number of milliseconds from `name`, or `undefined` when it is unset or empty. */
export const optionalMillis = (name: string): number | undefined => {
  const raw = process.env[name]
  if (raw === undefined || raw === "") return undefined
  const millis = Number(raw)
  return Number.isSafeInteger(millis) && millis >= 0
    ? millis
    : fail(`${name} must be a whole number of milliseconds (got "${raw}")`)
}

const list = (name: string): Array<string> =>
  (process.env[name] ?? "").split(",").map((entry) => entry.trim()).filter((entry, i) => {
    if (entry === "") return false // empty entries are ignored
    if (!Authenticator.isWellFormedToken(entry)) {
      fail(`${name} entry ${i + 1} is not a valid bearer token: use letters, digits and - . _ ~ + / only`)
    }
    return true
  })

/**
 * The tokens of `ROUTING_ADMIN_TOKENS` and `ROUTING_READ_TOKENS`. With none configured, one random admin token is
 * generated and printed once, so a newcomer can try the API at once: never a fixed token.
 */
export const tokens = (): ReadonlyArray<Authenticator.StaticToken> => {
  const admin = list("ROUTING_ADMIN_TOKENS")
  const read = list("ROUTING_READ_TOKENS")
  if (admin.length === 0 && read.length === 0) {
    const token = randomBytes(24).toString("base64url")
    console.log(`no tokens configured: generated admin token ${token}`)
    console.log("(set ROUTING_ADMIN_TOKENS and ROUTING_READ_TOKENS to choose your own)")
    admin.push(token)
  }
  return [
    ...admin.map((token, i) => ({
      token: Redacted.make(token),
      scopes: ["routes:read", "routes:write"] as const,
      id: `admin-${i + 1}`
    })),
    ...read.map((token, i) => ({
      token: Redacted.make(token),
      scopes: ["routes:read"] as const,
      id: `reader-${i + 1}`
    }))
  ]
}

/** `store` (the in-memory store by default) and the configured tokens. */
export const services = <A, E>(
  store: Layer.Layer<A, E> = RouteRepository.layerMemory as Layer.Layer<A, E>
): Layer.Layer<A | Authenticator.Authenticator, E | InvalidOption.InvalidOption> =>
  Layer.merge(store, Authenticator.layerStaticTokens(tokens()))

/** Runs `stop` once on SIGINT or SIGTERM, then exits: 0 when it stopped cleanly, 1 otherwise. */
export const onShutdown = (stop: () => Promise<void>): void => {
  let stopping = false
  const handler = (signal: string) => {
    if (stopping) return
    stopping = true
    console.log(`${signal} received: finishing requests in flight`)
    stop().then(() => {
      console.log("stopped")
      process.exit(0)
    }, (error: unknown) => {
      console.error("error while stopping:", error)
      process.exit(1)
    })
  }
  process.once("SIGINT", handler)
  process.once("SIGTERM", handler)
}

/**
 * Serves `listener` on a `node:http` server at HOST:PORT and prints `listening on http://HOST:PORT`. On SIGINT or
 * SIGTERM it stops accepting, finishes the requests in flight, then `dispose` releases the services.
 *
 * The listener also takes the requests that carry `Expect: 100-continue` ("checkContinue"), so Node does not send
 * `100 Continue` before the listener runs: the routing API sends it only when it reads the body, and a request it
 * refuses first (no token, too large a Content-Length…) gets its answer without the client sending the body. Whatever
 * it passes on to `next` gets the 100 first, so the host's own handlers need not send it.
 */
export const serve = (listener: Http.RequestListener, fallbackPort: number, dispose: () => Promise<void>): void => {
  const server = Http.createServer(listener)
  server.on("checkContinue", listener)
  const at = host()
  server.on("error", (error) => fail(`cannot listen on ${at}:${port(fallbackPort)}: ${error.message}`))
  server.listen(port(fallbackPort), at, () => {
    const { port } = server.address() as AddressInfo
    console.log(`listening on http://${at.includes(":") ? `[${at}]` : at}:${port}`)
  })
  onShutdown(() =>
    new Promise<void>((resolve) => {
      setTimeout(() => server.closeAllConnections(), SHUTDOWN_GRACE_MS).unref()
      // close() drops only the connections idle at that moment; keep-alive ones that finish later go as they idle.
      setInterval(() => server.closeIdleConnections(), 50).unref()
      server.close(() => resolve())
    }).then(dispose)
  )
}
