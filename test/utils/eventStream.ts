/**
 * A Server-Sent Events client for the change stream's tests: it opens `GET /v1/routing/changes` through any fetch
 * (a real socket, or the web handler in process), parses the frames as they arrive, and counts comment lines.
 */
import { Effect } from "effect"
import { eventually } from "./waiting.js"

export interface Event {
  readonly event: string
  readonly id: string | undefined
  readonly data: any
}

export interface Opened {
  readonly status: number
  readonly headers: Headers
  /** The whole body of an answer that is not a stream (a refusal). */
  readonly text: string
  readonly events: Array<Event>
  /** Comment lines received (heartbeats). */
  readonly comments: () => number
  /** Resolves once `count` events arrived in all (failing after `millis`), giving them. */
  readonly until: (count: number, millis?: number) => Promise<Array<Event>>
  /** Resolves once an event satisfies `check`, giving the events so far. */
  readonly waitFor: (check: (event: Event) => boolean, millis?: number) => Promise<Array<Event>>
  /** Resolves once the server ends or cuts the stream. */
  readonly ended: Promise<void>
  readonly close: () => void
}

const parseFrame = (frame: string, events: Array<Event>, comment: () => void) => {
  let event = "message"
  let id: string | undefined
  const data: Array<string> = []
  for (const line of frame.split("\n")) {
    if (line.startsWith(":")) comment()
    else if (line.startsWith("event: ")) event = line.slice(7)
    else if (line.startsWith("id: ")) id = line.slice(4)
    else if (line.startsWith("data: ")) data.push(line.slice(6))
  }
  if (data.length > 0) events.push({ event, id, data: JSON.parse(data.join("\n")) })
}

// Until `check` holds, failing at once when the stream has ended without it.
const waiting = (what: string, check: () => boolean, ended: () => boolean, millis: number) =>
  Effect.runPromise(eventually(what, () => {
    if (check()) return true
    if (ended()) throw new Error(`${what}: the stream ended first`)
    return false
  }, millis))

export const open = async (
  fetch: typeof globalThis.fetch,
  url: string,
  headers: Record<string, string>
): Promise<Opened> => {
  const controller = new AbortController()
  const response = await fetch(url, { headers, signal: controller.signal })
  const events: Array<Event> = []
  let comments = 0
  let done = false
  const isStream = response.headers.get("content-type") === "text/event-stream"
  const text = isStream ? "" : await response.text()
  const ended = (async () => {
    if (!isStream) return
    const reader = response.body!.getReader()
    const decoder = new TextDecoder()
    let pending = ""
    try {
      for (;;) {
        const read = await reader.read()
        if (read.done) break
        pending += decoder.decode(read.value, { stream: true })
        let end: number
        while ((end = pending.indexOf("\n\n")) !== -1) {
          parseFrame(pending.slice(0, end), events, () => comments++)
          pending = pending.slice(end + 2)
        }
      }
    } catch {
      // aborted by the test, or cut by the server
    } finally {
      done = true
    }
  })()
  return {
    status: response.status,
    headers: response.headers,
    text,
    events,
    comments: () => comments,
    until: async (count, millis = 5_000) => {
      await waiting(`${count} events (got ${events.length})`, () => events.length >= count, () => done, millis)
      return events
    },
    waitFor: async (check, millis = 5_000) => {
      await waiting("the event awaited", () => events.some(check), () => done, millis)
      return events
    },
    ended,
    close: () => controller.abort()
  }
}
