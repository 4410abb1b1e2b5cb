/**
 * The rules of a Node HTTP/1.1 transport that reach past one request and its response: `Expect: 100-continue`, and
 * the lingering close that keeps a refusal from being lost to a reset.
 *
 * Why lingering: a socket closed while the client's bytes are still arriving answers them with a reset, and a reset
 * makes the client's kernel drop what it had received but not yet read, the refusal included. So after an answer
 * that closes the connection while the body is still coming, the body is read and discarded (up to `LINGER_BYTES`
 * and `LINGER_MILLIS`), and only then is the response ended, which is when Node closes the connection.
 *
 * @internal
 */
import { Effect, Runtime } from "effect"
import type { IncomingMessage, ServerResponse } from "node:http"
import * as Alarms from "../alarms.js"
import type { OpenBody } from "../http/exchange.js"

/** Most bytes read and discarded after an answer before the connection is closed anyway. */
export const LINGER_BYTES = 4 * 1024 * 1024

/** Longest time the rest of a body is read and discarded after an answer before the connection is closed anyway. */
export const LINGER_MILLIS = 2_000

// The test Node's http server applies to the Expect header (lib/_http_server.js), so both decide alike.
const CONTINUE = /(?:^|\W)100-continue(?:$|\W)/i

/** `true` when the client waits for `100 Continue` before sending its body (never for HTTP/1.0, RFC 9110 §10.1.1). */
const expectsContinue = (req: IncomingMessage): boolean => {
  const expect = req.headers.expect
  return expect !== undefined && CONTINUE.test(expect) && (req.httpVersionMajor > 1 || req.httpVersionMinor > 0)
}

// Node's ServerResponse records every `100 Continue` it writes, its own automatic one (sent before the "request"
// event when the server has no "checkContinue" listener) and the host's, in `_sent100`.
const sentContinue = (res: ServerResponse): boolean => (res as { _sent100?: unknown })._sent100 === true

/**
 * Sends `100 Continue` if the client waits for it and it was not sent yet: called right before a body is read, so a
 * request refused earlier gets its final answer instead and the client never sends the body. Node sends it itself
 * unless the server listens for "checkContinue"; a second one, should a runtime not record it, is harmless (a client
 * accepts any number of 1xx answers, RFC 9110 §15.2).
 */
export const sendContinue = (req: IncomingMessage, res: ServerResponse): void => {
  if (expectsContinue(req) && !sentContinue(res) && !res.headersSent) res.writeContinue()
}

/**
 * `true` when an answer with these headers closes the connection while the client may still be sending its body:
 * the answer asks for `Connection: close`, or the client waits for a `100 Continue` that was never sent (then Node
 * closes the connection itself, since the client may or may not send the body).
 */
export const closesUnread = (
  req: IncomingMessage,
  res: ServerResponse | undefined,
  headers: Readonly<Record<string, string>>
): boolean =>
  !req.complete && (headers.connection === "close" || (res !== undefined && expectsContinue(req) && !sentContinue(res)))

/**
 * Listens to the body of `req`: its chunks, its end, and its close or error (the body will not end). Returns the
 * function that stops listening.
 */
export const listen = (
  req: IncomingMessage,
  onData: (chunk: Buffer) => void,
  onEnd: () => void,
  onClose: () => void
): () => void => {
  req.on("data", onData)
  req.on("end", onEnd)
  req.on("close", onClose)
  req.on("error", onClose)
  return () => {
    req.off("data", onData)
    req.off("end", onEnd)
    req.off("close", onClose)
    req.off("error", onClose)
  }
}

/**
 * Reads and discards the rest of the request until it ends, is aborted, or passes `LINGER_BYTES` or `LINGER_MILLIS`,
 * then calls `done` once. Returns a function that stops without calling `done`.
 */
export const discard = (req: IncomingMessage, done: () => void): () => void => {
  if (req.destroyed) {
    done()
    return () => {}
  }
  let discarded = 0
  const stop = () => {
    timer()
    unlisten()
  }
  const finish = () => {
    stop()
    // Stops reading from the socket at once: past a bound, the rest is cut off, not read while the connection closes.
    req.pause()
    done()
  }
  const onData = (chunk: Buffer) => {
    discarded += chunk.length
    if (discarded > LINGER_BYTES) finish()
  }
  // Called outside any fiber (an adapter answering): on the default runtime's clock.
  const timer = Alarms.after(Runtime.defaultRuntime, LINGER_MILLIS, finish)
  const unlisten = listen(req, onData, finish, finish)
  req.resume()
  return stop
}

/**
 * The Node response beneath an `HttpServerRequest` served by `@effect/platform-node`, which keeps it in the field
 * its `NodeHttpServerRequest.toServerResponse` reads (this library does not depend on that package to call it).
 */
export const serverResponseOf = (request: object): ServerResponse | undefined => {
  const response = (request as { readonly response?: unknown }).response
  return typeof response === "object" && response !== null &&
      typeof (response as ServerResponse).writeContinue === "function"
    ? response as ServerResponse
    : undefined
}

/** `discard` as an Effect that completes when the discarding stops; interrupting it stops it. */
export const discarding = (req: IncomingMessage): Effect.Effect<void> =>
  Effect.async<void>((resume) => Effect.sync(discard(req, () => resume(Effect.void))))

/**
 * Ends `res` with `body` (its headers already written). When the answer closes the connection while the body is
 * still coming, the body bytes go out at once but the response ends only after `discard`, since its end is what
 * makes Node close the connection.
 */
export const end = (
  req: IncomingMessage,
  res: ServerResponse,
  headers: Readonly<Record<string, string>>,
  body: string
): void => {
  if (!closesUnread(req, res, headers)) return void res.end(body)
  res.write(body)
  discard(req, () => res.end())
}

/**
 * Opens an answer's stream on `res`, its head already written: written into `res` as it goes, stopped when the
 * connection closes (the client left), and closed by destroying the connection, which drops what it holds.
 */
export const openStream = (res: ServerResponse, body: OpenBody): void => {
  if (res.destroyed) return
  const stop = body.open({
    write: (chunk) => void res.write(chunk),
    buffered: () => res.writableLength,
    drained: (resume) => {
      // Later in any case: a connection that holds less than its high-water mark emits no "drain".
      if (res.writableNeedDrain) res.once("drain", resume)
      else setImmediate(resume)
    },
    close: () => void res.destroy()
  })
  res.once("close", stop)
}
