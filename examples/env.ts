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

// Node's longest timer: a longer delay would fire at once.
const MAX_TIMER_MS = 2_147_483_647

/** A whole number of milliseconds from 1 to Node's longest timer from `name`, or `fallback` when it is unset or empty. */
const positiveMillis = (name: string, fallback: number): number => {
  const millis = optionalMillis(name) ?? fallback
  return millis >= 1 && millis <= MAX_TIMER_MS
    ? millis
    : fail(`${name} must be a whole number of milliseconds from 1 to ${MAX_TIMER_MS} (got "${process.env[name]}")`)
}

/** The timeouts of a host started from the command line, from the environment, every one checked. */
export interface Timeouts {
  /** `HEADERS_TIMEOUT_MS`: longest time a request's headers may take to arrive (Node's `server.headersTimeout`). */
  readonly headersMillis: number
  /** `BODY_TIMEOUT_MS`: longest time a body may take, on the routing API's paths and the stored routes alike. */
  readonly bodyMillis: number
  /** `REQUEST_TIMEOUT_MS`: longest time a whole request may take to arrive, on any path (`server.requestTimeout`). */
  readonly requestMillis: number
}

const DEFAULT_HEADERS_TIMEOUT_MS = 10_000
const DEFAULT_BODY_TIMEOUT_MS = 10_000
// Beyond the headers and the body: the time the library takes to discard the rest of a body after its 408.
const REQUEST_TIMEOUT_MARGIN_MS = 10_000

export const timeouts = (): Timeouts => {
  const headersMillis = positiveMillis("HEADERS_TIMEOUT_MS", DEFAULT_HEADERS_TIMEOUT_MS)
  const bodyMillis = positiveMillis("BODY_TIMEOUT_MS", DEFAULT_BODY_TIMEOUT_MS)
  const least = headersMillis + bodyMillis
  const requestMillis = positiveMillis("REQUEST_TIMEOUT_MS", Math.min(least + REQUEST_TIMEOUT_MARGIN_MS, MAX_TIMER_MS))
  return requestMillis > least ? { headersMillis, bodyMillis, requestMillis } : fail(
    `REQUEST_TIMEOUT_MS must be more than HEADERS_TIMEOUT_MS + BODY_TIMEOUT_MS (${least}), or the server would cut a ` +
      `slow request before the 408 that names its timeout (got ${requestMillis})`
  )
}

/**
 * The timeouts' server-level knobs for `node:http`, checked every second (Node checks every 30 s by default, so a
 * timeout could be overrun by that much).
 */
export const serverOptions = (limits: Timeouts = timeouts()): Http.ServerOptions => ({
  headersTimeout: limits.headersMillis,
  requestTimeout: limits.requestMillis,
  connectionsCheckingInterval: 1_000
})

/**
 * A `node:http` server for `listener` with the timeouts' server-level knobs. It also takes the requests that carry
 * `Expect: 100-continue` ("checkContinue"), so Node does not send `100 Continue` before the listener runs: the
 * routing API sends it only when it reads the body, and a request it refuses first (no token, too large a
 * Content-Length…) gets its answer without the client sending the body. Whatever it passes on to `next` gets the 100
 * first, so the host's own handlers need not send it.
 */
export const createServer = (listener: Http.RequestListener, limits: Timeouts = timeouts()): Http.Server => {
  const server = Http.createServer(serverOptions(limits), listener)
  server.on("checkContinue", listener)
  return server
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

/** The configured tokens, as an authenticator. */
export const authenticator = (): Layer.Layer<Authenticator.Authenticator, InvalidOption.InvalidOption> =>
  Authenticator.layerStaticTokens(tokens())

/** `store` (the in-memory store by default) and the configured tokens. */
export const services = <A, E>(
  store: Layer.Layer<A, E> = RouteRepository.layerMemory as Layer.Layer<A, E>
): Layer.Layer<A | Authenticator.Authenticator, E | InvalidOption.InvalidOption> => Layer.merge(store, authenticator())

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
 * Serves `listener` on a `createServer` server at HOST:PORT and prints `listening on http://HOST:PORT`. On SIGINT or
 * SIGTERM it stops accepting, finishes the requests in flight, then `dispose` releases the services. With `dashboard`
 * (its path), it prints the dashboard's address too.
 */
export const serve = (
  listener: Http.RequestListener,
  fallbackPort: number,
  dispose: () => Promise<void>,
  limits: Timeouts = timeouts(),
  closeStreams: () => void = () => {},
  dashboard?: string
): void => {
  const server = createServer(listener, limits)
  const at = host()
  server.on("error", (error) => fail(`cannot listen on ${at}:${port(fallbackPort)}: ${error.message}`))
  server.listen(port(fallbackPort), at, () => {
    const { port } = server.address() as AddressInfo
    const origin = `http://${at.includes(":") ? `[${at}]` : at}:${port}`
    console.log(`listening on ${origin}`)
    if (dashboard !== undefined) console.log(`dashboard at ${origin}${dashboard}/`)
  })
  onShutdown(() =>
    new Promise<void>((resolve) => {
      // Change streams never finish by themselves: their followers are told to resume elsewhere at once.
      closeStreams()
      setTimeout(() => server.closeAllConnections(), SHUTDOWN_GRACE_MS).unref()
      // close() drops only the connections idle at that moment; keep-alive ones that finish later go as they idle.
      setInterval(() => server.closeIdleConnections(), 50).unref()
      server.close(() => resolve())
    }).then(dispose)
  )
}
