/**
 * One connection to a registry's change stream (`GET /v1/routing/changes`) over `node:http`: it sends the token and
 * the cursor to resume from, checks the answer, and hands each event to a sink as its bytes arrive, synchronously, until
 * the connection is lost, which is the only way it ends.
 *
 * `node:http` rather than the global `fetch` (undici): a stream read through `fetch` goes through a web
 * `ReadableStream`, a promise per chunk and a reader per connection, where a `node:http` response hands each chunk to
 * one listener; with 1,000 streams in one process that is less memory and CPU for the same bytes
 * (`npm run bench:follow-transport`).
 *
 * @internal
 */
import { Data, Effect, Redacted, type Runtime } from "effect"
import * as Http from "node:http"
import * as Https from "node:https"
import * as Alarms from "../alarms.js"
import * as Sse from "./sse.js"

/** Where and how to connect. */
export interface Target {
  /** The change stream's URL. */
  readonly url: URL
  readonly token: Redacted.Redacted
  /** A connection that receives no byte for this long (not even a heartbeat) is taken for dead. */
  readonly idleMillis: number
  readonly maxEventBytes: number
  /** The follower's name, sent as `Follower-Name`: the registry lists it in its fleet. */
  readonly name?: string | undefined
}

/**
 * Why a connection ended: the registry answered another status than 200 (`status`, with its problem's `code`, the
 * `path` of each of its `errors[]` as `fields`, and its `detail` in `reason`, when it sent one), the connection failed
 * or ended, the stream broke the protocol (`protocol`), or it fell silent.
 */
export class Lost extends Data.TaggedError("Lost")<{
  readonly reason: string
  readonly status?: number | undefined
  readonly code?: string | undefined
  readonly fields?: ReadonlyArray<string> | undefined
  readonly protocol?: boolean | undefined
}> {}

// How much of a refusal's body is read for its problem document; the rest is dropped.
const MAX_REFUSAL_BYTES = 16 * 1024

interface Problem {
  readonly code?: string
  readonly detail?: string
  readonly fields?: ReadonlyArray<string>
}

// The `code`, `detail` and the paths of `errors[]` of a problem document, when the body is one.
const problemOf = (body: string): Problem => {
  try {
    const parsed: unknown = JSON.parse(body)
    if (typeof parsed !== "object" || parsed === null) return {}
    const { code, detail, errors } = parsed as Record<string, unknown>
    const fields = Array.isArray(errors)
      ? errors.flatMap((error: unknown) => {
        const path = typeof error === "object" && error !== null ? (error as { path?: unknown }).path : undefined
        return typeof path === "string" ? [path] : []
      })
      : []
    return {
      ...(typeof code === "string" ? { code } : {}),
      ...(typeof detail === "string" ? { detail } : {}),
      ...(fields.length > 0 ? { fields } : {})
    }
  } catch {
    return {}
  }
}

/** Reads a refusal's problem document (its first 16 KiB) and hands `done` the status, code and detail. */
export const refused = (response: Http.IncomingMessage, done: (lost: Lost) => void): void => {
  const status = response.statusCode ?? 0
  const chunks: Array<Buffer> = []
  let size = 0
  const finish = () => {
    const { code, detail, fields } = problemOf(Buffer.concat(chunks).toString("utf8"))
    done(
      new Lost({
        reason: `the registry answered ${status}${code === undefined ? "" : ` ${code}`}${
          detail === undefined ? "" : `: ${detail}`
        }${fields === undefined ? "" : ` (${fields.join(", ")})`}`,
        status,
        code,
        fields
      })
    )
  }
  response.on("data", (chunk: Buffer) => {
    if (size >= MAX_REFUSAL_BYTES) return
    chunks.push(chunk)
    size += chunk.length
    if (size >= MAX_REFUSAL_BYTES) {
      response.destroy()
      finish()
    }
  })
  response.on("end", finish)
  response.on("error", finish)
}

/**
 * Connects, resuming after `cursor` when given (`Last-Event-ID`), and runs until the connection is lost. `opened` is
 * called once the registry accepted the stream, with the stream's id for reports (`Follower-Stream`) when the registry
 * gave one; each event and heartbeat goes to `sink` as it arrives.
 */
export const connect = (
  target: Target,
  cursor: string | undefined,
  opened: (stream: string | undefined) => void,
  sink: Sse.Sink
): Effect.Effect<never, Lost> =>
  Effect.flatMap(Effect.runtime<never>(), (runtime) => connectOn(runtime, target, cursor, opened, sink))

const connectOn = (
  runtime: Runtime.Runtime<never>,
  target: Target,
  cursor: string | undefined,
  opened: (stream: string | undefined) => void,
  sink: Sse.Sink
) =>
  Effect.async<never, Lost>((resume) => {
    let ended = false
    // The registry's silence, on the caller's `Clock`: rearmed by every byte that comes (set before the last is
    // cancelled, so the deadlines' fiber keeps running).
    let quiet = () => {}
    const heard = () => {
      const last = quiet
      quiet = Alarms.after(runtime, target.idleMillis, () =>
        end(new Lost({ reason: `no byte from the registry for ${target.idleMillis} ms` })))
      last()
    }
    const end = (lost: Lost) => {
      if (ended) {
        return
      }
      ended = true
      quiet()
      request.destroy()
      resume(Effect.fail(lost))
    }
    const headers: Record<string, string> = {
      accept: "text/event-stream",
      "cache-control": "no-cache",
      authorization: `Bearer ${Redacted.value(target.token)}`
    }
    if (cursor !== undefined) {
      headers["last-event-id"] = cursor
    }
    if (target.name !== undefined) {
      headers["follower-name"] = target.name
    }
    const client = target.url.protocol === "https:" ? Https : Http
    let request: Http.ClientRequest
    try {
      request = client.get(target.url, { headers })
    } catch (error) {
      // A header `node:http` refuses (a cursor the follower should never have kept): this try is lost, not the loop.
      resume(Effect.fail(new Lost({ reason: `the request could not be made: ${String(error)}` })))
      return
    }
    heard()
    request.on("error", (error) =>
      end(new Lost({ reason: error.message })))
    request.on("response", (response) => {
      heard()
      if (response.statusCode !== 200) {
        return refused(response, end)
      }
      const type = response.headers["content-type"] ?? ""
      if (!/^text\/event-stream\s*(?:;|$)/i.test(type)) {
        return end(new Lost({ reason: `the registry answered 200 with ${JSON.stringify(type)}, not an event stream` }))
      }
      const stream = response.headers["follower-stream"]
      opened(typeof stream === "string" ? stream : undefined)
      const parser = new Sse.Parser(target.maxEventBytes, sink)
      response.on("data", (chunk: Buffer) => {
        if (ended) {
          return
        }
        heard()
        let failure: string | undefined
        try {
          failure = parser.push(chunk)
        } catch (error) {
          // A listener that throws would take the process down: the stream is dropped instead, and resumed.
          failure = `an event could not be applied: ${String(error)}`
        }
        if (failure !== undefined) {
          end(new Lost({ reason: `the stream broke the protocol: ${failure}`, protocol: true }))
        }
      })
      response.on("error", (error) =>
        end(new Lost({ reason: error.message })))
      // "close" comes after "end", and alone when the connection is cut.
      response.on("close", () => end(new Lost({ reason: "the registry ended the stream" })))
    })
    return Effect.sync(() => {
      ended = true
      quiet()
      request.destroy()
    })
  })
