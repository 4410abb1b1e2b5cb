/**
 * What the example hosts share when started from the command line: where to listen, which tokens to accept (the
 * variables of `npm start`, README's "Configuration"), and a graceful shutdown. Tests import the examples instead and pass
 * services of their own.
 */
import { Effect, Layer, LogLevel, Redacted } from "effect"
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

// Effect's log levels by the names LOG_LEVEL takes, in any case: Effect's own (`Warning`) and its labels (`WARN`).
const LOG_LEVELS: ReadonlyMap<string, LogLevel.LogLevel> = new Map(
  LogLevel.allLevels.flatMap((level) => [[level._tag.toLowerCase(), level], [level.label.toLowerCase(), level]])
)

/**
 * `LOG_LEVEL`: the least severe of the library's log lines the host prints (docs/configuration.md), one of Effect's
 * levels: `All`, `Trace`, `Debug`, `Info` (the default), `Warning`, `Error`, `Fatal`, `None`, in any case (`warn` and
 * `off`, Effect's labels, too).
 */
export const logLevel = (): LogLevel.LogLevel => {
  const raw = process.env.LOG_LEVEL ?? ""
  if (raw.trim() === "") return LogLevel.Info
  return LOG_LEVELS.get(raw.trim().toLowerCase()) ??
    fail(`LOG_LEVEL must be one of ${LogLevel.allLevels.map((level) => level._tag).join(", ")} (got "${raw}")`)
}

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

/** A whole number of milliseconds from 1 to Node's longest timer from `name`, or `undefined` when it is unset or empty. */
export const optionalPositiveMillis = (name: string): number | undefined =>
  optionalMillis(name) === undefined ? undefined : positiveMillis(name, 0)

/**
 * `FOLLOW_RETRY_MAX_MS`: a follower's longest wait between two tries to reconnect (`RouteFollower.Options.retryMax`),
 * from its first wait (100 ms) up; `undefined` (the default, 4 s) when it is unset or empty.
 */
export const followRetryMaxMillis = (): number | undefined => {
  const millis = optionalMillis("FOLLOW_RETRY_MAX_MS")
  if (millis === undefined) return undefined
  return millis >= FOLLOW_RETRY_INITIAL_MS && millis <= MAX_TIMER_MS
    ? millis
    : fail(
      `FOLLOW_RETRY_MAX_MS must be a whole number of milliseconds from ${FOLLOW_RETRY_INITIAL_MS} to ${MAX_TIMER_MS} (got "${process.env.FOLLOW_RETRY_MAX_MS}")`
    )
}

// A follower's first wait before reconnecting (RouteFollower's default retryInitial): the least FOLLOW_RETRY_MAX_MS.
const FOLLOW_RETRY_INITIAL_MS = 100

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

// The entries of a comma-separated token list, each `token` or `name=token` (docs/configuration.md); empty entries are ignored.
const list = (name: string, scopes: ReadonlyArray<Authenticator.Scope>): Array<Authenticator.StaticToken> =>
  (process.env[name] ?? "").split(",").map((entry) => entry.trim()).flatMap((entry, i) => {
    if (entry === "") return []
    const { id, token } = Authenticator.parseTokenEntry(entry)
    if (!Authenticator.isWellFormedToken(Redacted.value(token))) {
      return fail(
        `${name} entry ${i + 1} is not a valid bearer token: use letters, digits and - . _ ~ + / only, as token or ` +
          "name=token"
      )
    }
    return [{ token, scopes, id }]
  })

const ROUTING_TOKENS_SHAPE = "a JSON array of { \"name\": …, \"token\": …, \"scopes\": [ … ] }"

// One entry of ROUTING_TOKENS, every field checked here so that the message names it; the token is never echoed.
const routingToken = (entry: unknown, i: number): Authenticator.StaticToken => {
  const at = `ROUTING_TOKENS[${i}]`
  if (typeof entry !== "object" || entry === null || Array.isArray(entry)) {
    return fail(`${at} must be an object { "name": …, "token": …, "scopes": [ … ] }`)
  }
  const { name, scopes, token, ...rest } = entry as Record<string, unknown>
  const unknown = Object.keys(rest)
  if (unknown.length > 0) fail(`${at} has the unknown field "${unknown[0]}": give name, token and scopes only`)
  if (typeof name !== "string" || name === "") fail(`${at}.name must be a non-empty string, such as "alice"`)
  if (typeof token !== "string" || !Authenticator.isWellFormedToken(token)) {
    fail(`${at}.token must be a bearer token: letters, digits and - . _ ~ + / only, optionally followed by = padding`)
  }
  if (!Array.isArray(scopes)) fail(`${at}.scopes must be an array, such as ["routes:read", "routes:write:/payments"]`)
  ;(scopes as Array<unknown>).forEach((scope, j) => {
    const problem = Authenticator.checkScope(scope)
    if (problem !== undefined) fail(`${at}.scopes[${j}]: ${problem}`)
  })
  return { id: name as string, token: Redacted.make(token as string), scopes: scopes as Array<Authenticator.Scope> }
}

const routingTokens = (): Array<Authenticator.StaticToken> => {
  const raw = process.env.ROUTING_TOKENS ?? ""
  if (raw.trim() === "") return []
  let parsed: unknown
  try {
    parsed = JSON.parse(raw)
  } catch {
    return fail(`ROUTING_TOKENS is not valid JSON: give ${ROUTING_TOKENS_SHAPE}`)
  }
  return Array.isArray(parsed) ? parsed.map(routingToken) : fail(`ROUTING_TOKENS must be ${ROUTING_TOKENS_SHAPE}`)
}

/**
 * JWT bearer tokens (docs/authentication.md), when JWT_JWKS_URL, JWT_PUBLIC_KEY or JWT_SECRET is set: exactly one of them, with
 * JWT_ISSUER and JWT_AUDIENCE (comma-separated for several), and optionally JWT_ACTOR_PREFIX (prefixed to `sub` in the
 * principal id). A PEM key may be given on one line with `\n` escapes.
 */
export const jwtOptions = (): Authenticator.JwtOptions | undefined => {
  const keys = ["JWT_JWKS_URL", "JWT_PUBLIC_KEY", "JWT_SECRET"].filter((name) => (process.env[name] ?? "") !== "")
  if (keys.length === 0) return undefined
  if (keys.length > 1) fail(`set only one of ${keys.join(" and ")}: JWT keys come from one place`)
  const issuer = process.env.JWT_ISSUER ?? ""
  const audience = (process.env.JWT_AUDIENCE ?? "").split(",").map((a) => a.trim()).filter((a) => a !== "")
  if (issuer === "") fail(`JWT_ISSUER must be set with ${keys[0]}: the iss of the identity provider's tokens`)
  if (audience.length === 0) fail(`JWT_AUDIENCE must be set with ${keys[0]}: this API's name in the tokens' aud`)
  const JWT_JWKS_URL = process.env.JWT_JWKS_URL
  const JWT_PUBLIC_KEY = process.env.JWT_PUBLIC_KEY
  const JWT_SECRET = process.env.JWT_SECRET
  const JWT_ACTOR_PREFIX = process.env.JWT_ACTOR_PREFIX
  return {
    issuer,
    audience,
    ...(JWT_ACTOR_PREFIX ? { actorPrefix: JWT_ACTOR_PREFIX } : {}),
    ...(JWT_JWKS_URL ? { jwksUrl: JWT_JWKS_URL } : {}),
    ...(JWT_PUBLIC_KEY ? { publicKey: JWT_PUBLIC_KEY.replaceAll("\\n", "\n") } : {}),
    ...(JWT_SECRET ? { secret: Redacted.make(JWT_SECRET) } : {})
  }
}

/**
 * The static tokens of `ROUTING_ADMIN_TOKENS`, `ROUTING_READ_TOKENS` and `ROUTING_TOKENS`. With none configured and
 * no JWT keys either, one random token is generated and printed once, so a newcomer can try the API at once: never a
 * fixed token. It is an admin token, unless the host's API is `readOnly` (a follower's, whose writes are answered
 * 405): then a read token, and it says so.
 */
export const tokens = (readOnly = false): ReadonlyArray<Authenticator.StaticToken> => {
  const configured = [
    ...list("ROUTING_ADMIN_TOKENS", ["routes:read", "routes:write"]),
    ...list("ROUTING_READ_TOKENS", ["routes:read"]),
    ...routingTokens()
  ]
  if (configured.length > 0 || jwtOptions() !== undefined) return configured
  const token = randomBytes(24).toString("base64url")
  if (readOnly) {
    console.log(`no tokens configured: generated read token ${token}`)
    console.log("(this follower's API is read-only: reads and the change stream; writes go to the registry)")
  } else {
    console.log(`no tokens configured: generated admin token ${token}`)
  }
  console.log("(set ROUTING_ADMIN_TOKENS, ROUTING_READ_TOKENS or ROUTING_TOKENS to choose your own)")
  // It may follow this process too, listed in its fleet: a newcomer's first follower shows up.
  return readOnly
    ? [{ token: Redacted.make(token), scopes: ["routes:read", "fleet:report"], id: "reader" }]
    : [{ token: Redacted.make(token), scopes: ["routes:read", "routes:write", "fleet:report"], id: "admin" }]
}

/**
 * The configured tokens, as an authenticator (`readOnly`: see `tokens`): the static tokens, and JWTs when JWT keys are set. With both, a token is
 * looked up among the static tokens first, and verified as a JWT only when none of them is it.
 */
export const authenticator = (
  readOnly = false
): Layer.Layer<Authenticator.Authenticator, InvalidOption.InvalidOption> => {
  const statics = tokens(readOnly)
  const jwt = jwtOptions()
  if (jwt === undefined) return Authenticator.layerStaticTokens(statics)
  if (statics.length === 0) return Authenticator.layerJwt(jwt)
  const invalid = Authenticator.checkStaticTokens(statics)
  if (invalid !== undefined) return Layer.fail(invalid)
  return Layer.effect(
    Authenticator.Authenticator,
    Effect.map(
      Authenticator.jwt(jwt),
      (verify) => Authenticator.orElse(Authenticator.makeStaticTokens(statics), verify)
    )
  )
}

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
