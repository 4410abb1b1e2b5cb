/**
 * The change stream (`GET /v1/routing/changes`, Server-Sent Events) read with `fetch`, because the token must go in a
 * header and `EventSource` cannot send one. It reconnects by itself with backoff and jitter, resuming from the last
 * event's cursor (`Last-Event-ID`).
 */
import { type Route, type Session, url } from "./api.js"

export type Change =
  | { readonly _tag: "upsert"; readonly route: Route }
  | { readonly _tag: "delete"; readonly id: string }

export interface Listener {
  /** A change made after the page's state was read. */
  readonly change: (change: Change) => void
  /** Every route, at a (re)connection that sent a snapshot: the page's state is replaced by it. */
  readonly snapshot: (routes: ReadonlyMap<string, Route>) => void
  readonly status: (status: "connecting" | "live" | "reconnecting") => void
  /** The token was refused (signed out elsewhere, revoked): the stream stops. */
  readonly refused: (status: number) => void
  /** The token expired (the registry's `expired` event): the stream stops, and the person signs in again. */
  readonly expired: () => void
}

const FIRST_DELAY_MILLIS = 250
const MAX_DELAY_MILLIS = 5_000

const sleep = (millis: number, signal: AbortSignal) =>
  new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, millis)
    signal.addEventListener("abort", () => (clearTimeout(timer), resolve()), { once: true })
  })

interface Event {
  readonly type: string
  readonly data: string
  readonly id: string | undefined
}

/** Splits a stream of SSE text into events (the WHATWG rules: `field: value` lines, a blank line ends an event). */
const events = async function*(body: ReadableStream<Uint8Array>): AsyncGenerator<Event> {
  const reader = body.getReader()
  const decoder = new TextDecoder()
  let buffer = ""
  let type = ""
  let data: Array<string> = []
  let id: string | undefined
  for (;;) {
    const { done, value } = await reader.read()
    if (done) return
    buffer += decoder.decode(value, { stream: true })
    // Lines are read by position and the rest kept once per chunk: a snapshot of 10,000 routes comes in chunks of
    // hundreds of lines, and cutting the buffer at every line would copy it hundreds of times.
    let from = 0
    for (;;) {
      const lf = buffer.indexOf("\n", from)
      const cr = buffer.indexOf("\r", from)
      const end = cr === -1 || (lf !== -1 && lf < cr) ? lf : cr
      // A CR at the very end may be the first half of a CRLF: wait for the next chunk.
      if (end === -1 || (end === cr && end === buffer.length - 1)) break
      const line = buffer.slice(from, end)
      from = end + (end === cr && buffer.charCodeAt(end + 1) === 10 ? 2 : 1)
      if (line === "") {
        if (data.length > 0 || type !== "") yield { type: type || "message", data: data.join("\n"), id }
        type = ""
        data = []
        id = undefined
        continue
      }
      if (line.startsWith(":")) continue
      const colon = line.indexOf(":")
      const name = colon === -1 ? line : line.slice(0, colon)
      const field = colon === -1 ? "" : line.slice(colon + (line.charCodeAt(colon + 1) === 32 ? 2 : 1))
      if (name === "event") type = field
      else if (name === "data") data.push(field)
      else if (name === "id") id = field
    }
    buffer = buffer.slice(from)
  }
}

/** Follows the change stream until `signal` aborts. */
export const follow = async (session: Session, listener: Listener, signal: AbortSignal): Promise<void> => {
  let cursor: string | undefined
  let failures = 0
  listener.status("connecting")
  while (!signal.aborted) {
    try {
      const response = await fetch(url("/changes"), {
        headers: session.headers({
          accept: "text/event-stream",
          ...(cursor === undefined ? {} : { "last-event-id": cursor })
        }),
        cache: "no-store",
        credentials: "omit",
        signal
      })
      if (response.status === 401 || response.status === 403) return listener.refused(response.status)
      if (!response.ok || response.body === null) throw new Error(`the change stream answered ${response.status}`)
      // Without a cursor, or after a reset, the stream starts with every route: gathered, then handed over at ready.
      let snapshot: Map<string, Route> | undefined = cursor === undefined ? new Map() : undefined
      for await (const event of events(response.body)) {
        if (event.id !== undefined && event.id !== "") cursor = event.id
        switch (event.type) {
          case "reset":
            snapshot = new Map()
            break
          case "upsert": {
            const route = JSON.parse(event.data) as Route
            if (snapshot === undefined) listener.change({ _tag: "upsert", route })
            else snapshot.set(route.id, route)
            break
          }
          case "delete": {
            const { id } = JSON.parse(event.data) as { id: string }
            if (snapshot === undefined) listener.change({ _tag: "delete", id })
            else snapshot.delete(id)
            break
          }
          case "ready":
            if (snapshot !== undefined) listener.snapshot(snapshot)
            snapshot = undefined
            failures = 0
            listener.status("live")
            break
          case "expired":
            return listener.expired()
        }
      }
    } catch {
      // A dropped connection or a failed request: retried below, unless the person signed out.
    }
    if (signal.aborted) return
    listener.status("reconnecting")
    const delay = Math.min(MAX_DELAY_MILLIS, FIRST_DELAY_MILLIS * 2 ** failures++)
    await sleep(delay / 2 + Math.random() * delay / 2, signal)
  }
}
