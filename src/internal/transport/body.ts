/**
 * Bounded body readers, one per transport. Each stops at the first byte past the limit without buffering it, and
 * leaves the connection open so the 413 can still be answered on it.
 *
 * @internal
 */
import { Chunk, Effect, Exit, type Runtime, Stream } from "effect"
import type { IncomingMessage, ServerResponse } from "node:http"
import * as Alarms from "../alarms.js"
import type { BodyFailure } from "../http/exchange.js"
import * as NodeTransport from "./nodeTransport.js"

const concat = (chunks: Iterable<Uint8Array>, size: number): Uint8Array => {
  const body = new Uint8Array(size)
  let offset = 0
  for (const chunk of chunks) {
    body.set(chunk, offset)
    offset += chunk.length
  }
  return body
}

/** `true` for a Node `IncomingMessage` (checked by shape, so no Node module is loaded to ask). */
export const isIncomingMessage = (u: unknown): u is IncomingMessage =>
  typeof u === "object" && u !== null && typeof (u as IncomingMessage).pause === "function" &&
  typeof (u as IncomingMessage).on === "function" && "httpVersion" in u

/**
 * Reads a Node request, first sending `100 Continue` on `res` if the client waits for it, and calls `done` once with
 * the body or why it could not be read. Past the limit or the time allowed it pauses the request rather than
 * destroying it: the adapter discards the rest after answering (`NodeTransport.end`). Returns a function that stops
 * reading without calling `done`.
 */
export const readIncomingMessage = (
  runtime: Runtime.Runtime<never>,
  req: IncomingMessage,
  res: ServerResponse | undefined,
  maxBytes: number,
  ms: number,
  done: (body: Exit.Exit<Uint8Array, BodyFailure>) => void
): () => void => {
  // Ended before this reader started: a body parser mounted before the API took it (its 'end' will not come again).
  if (req.readableEnded) {
    done(Exit.fail("Consumed"))
    return () => {}
  }
  if (res !== undefined) NodeTransport.sendContinue(req, res)
  // One chunk is the common case: an array only for more.
  let first: Buffer | undefined
  let rest: Array<Buffer> | undefined
  let size = 0
  const timer = Alarms.after(runtime, ms, () => {
    cleanup()
    req.pause()
    done(Exit.fail("Timeout"))
  })
  const cleanup = () => {
    timer()
    unlisten()
  }
  const onData = (chunk: Buffer) => {
    size += chunk.length
    if (size > maxBytes) {
      cleanup()
      req.pause()
      done(Exit.fail("TooLarge"))
    } else if (first === undefined) first = chunk
    else (rest ??= [first]).push(chunk)
  }
  const onEnd = () => {
    cleanup()
    done(Exit.succeed(rest !== undefined ? Buffer.concat(rest, size) : first ?? new Uint8Array(0)))
  }
  const onClose = () => {
    cleanup()
    done(Exit.fail("Incomplete"))
  }
  const unlisten = NodeTransport.listen(req, onData, onEnd, onClose)
  return cleanup
}

/** `readIncomingMessage` as an Effect, its deadline on the caller's `Clock`; interrupting it stops reading. */
export const fromIncomingMessage = (req: IncomingMessage, res?: ServerResponse) => (maxBytes: number, ms: number) =>
  Effect.flatMap(
    Effect.runtime<never>(),
    (runtime) =>
      Effect.async<Uint8Array, BodyFailure>((resume) =>
        Effect.sync(readIncomingMessage(runtime, req, res, maxBytes, ms, resume))
      )
  )

/**
 * Reads a web `Request`. Past the limit or the time allowed it cancels the body stream: with no socket of its own
 * the library cannot discard the rest before the connection closes, so whether a client still sending receives the
 * 413 or 408 depends on the host runtime's server.
 */
export const fromWebRequest = (request: Request) => (maxBytes: number, timeoutMillis: number) =>
  Effect.flatMap(Effect.runtime<never>(), (runtime) => fromWebRequestOn(runtime, request, maxBytes, timeoutMillis))

const fromWebRequestOn = (
  runtime: Runtime.Runtime<never>,
  request: Request,
  maxBytes: number,
  timeoutMillis: number
) =>
  Effect.async<Uint8Array, BodyFailure>((resume, signal) => {
    // Read before the API could: a middleware of the host took it.
    if (request.bodyUsed) return resume(Effect.fail("Consumed"))
    if (request.body === null) return resume(Effect.succeed(new Uint8Array(0)))
    const reader = request.body.getReader()
    const chunks: Array<Uint8Array> = []
    let size = 0
    let settled = false
    const settle = (outcome: Effect.Effect<Uint8Array, BodyFailure>, cancel: boolean) => {
      if (settled) return
      settled = true
      timer()
      if (cancel) void reader.cancel().catch(() => {})
      resume(outcome)
    }
    const timer = Alarms.after(runtime, timeoutMillis, () => settle(Effect.fail("Timeout"), true))
    signal.addEventListener("abort", () => settle(Effect.fail("Incomplete"), true))
    const pump = (): Promise<void> =>
      reader.read().then(({ done, value }) => {
        if (settled) return
        if (done) return settle(Effect.succeed(chunks.length === 1 ? chunks[0]! : concat(chunks, size)), false)
        size += value.length
        if (size > maxBytes) return settle(Effect.fail("TooLarge"), true)
        chunks.push(value)
        return pump()
      })
    pump().catch(() => settle(Effect.fail("Incomplete"), false))
  })

/** Reads any Effect byte stream; stopping it early is up to its producer. */
export const fromStream = <E>(stream: Stream.Stream<Uint8Array, E>) => (maxBytes: number, timeoutMillis: number) =>
  stream.pipe(
    Stream.mapError((): BodyFailure => "Incomplete"),
    Stream.runFoldEffect({ chunks: Chunk.empty<Uint8Array>(), size: 0 }, (acc, chunk) => {
      const size = acc.size + chunk.length
      return size > maxBytes
        ? Effect.fail<BodyFailure>("TooLarge")
        : Effect.succeed({ chunks: Chunk.append(acc.chunks, chunk), size })
    }),
    Effect.map(({ chunks, size }) => concat(chunks, size)),
    Effect.timeoutFail({ duration: timeoutMillis, onTimeout: (): BodyFailure => "Timeout" })
  )
