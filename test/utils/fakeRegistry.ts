/**
 * A registry's change stream (docs/http-api.md, "Following every change") served by a small `node:http` server over a map of routes and the
 * library's own replay ring, with the faults a follower must survive on command: every stream cut, the next event
 * cut in the middle of its frame, a restart (a new store: old cursors are answered with a reset), a silent stream,
 * refusals. Events may be split into single bytes and sent with CRLF line ends, as any server may send them.
 */
import * as Http from "node:http"
import type * as Net from "node:net"
import * as Route from "route-registry/Route"
import { newStoreId } from "../../src/internal/store/rules.js"
import * as ReplayRing from "../../src/internal/table/replayRing.js"

export interface Options {
  /** The token it accepts; others get 401 invalid_token. */
  readonly token?: string
  /** Heartbeat period; default 15 s. */
  readonly heartbeatMillis?: number
  /** Replay ring capacity; default the library's. */
  readonly capacity?: number
  /** Line ends: "\n" (default) or "\r\n". */
  readonly lineEnd?: string
  /** Serve another table's routes and replay ring (a relay's) instead of its own. */
  readonly source?: { readonly ring: ReplayRing.ReplayRing; readonly routes: Iterable<Route.StoredRoute> }
}

export interface FakeRegistry {
  readonly origin: string
  readonly routes: Map<string, Route.StoredRoute>
  /** Stores a route (new, or a new version) and streams it. */
  readonly put: (route: Route.StoredRoute) => void
  /** Removes a route and streams its delete. */
  readonly remove: (id: string) => void
  /** Writes `text` as it is into every open stream (an attack: a bad event, a heartbeat of another form). */
  readonly inject: (text: string) => void
  /** Destroys every open stream. */
  readonly cutAll: () => void
  /** The next event is written up to the middle of its frame, then its stream destroyed. */
  readonly cutNextEventMidway: () => void
  /** A new store's ring, as after a memory registry's restart: a follower's cursor is answered with a reset. */
  readonly restart: () => void
  /** Refuses every new stream with this status (401, 403, 503…), or accepts them again (undefined). */
  readonly refuse: (status: number | undefined) => void
  /** Writes nothing more (no event, no heartbeat) until `speak`; events are queued meanwhile. */
  readonly silence: () => void
  /** Writes everything up to the next `ready`, then falls silent (until `speak`). */
  readonly holdReady: () => void
  readonly speak: () => void
  /** The `Last-Event-ID` of each stream opened, in order (undefined: none). */
  readonly resumedFrom: Array<string | undefined>
  /** When each request for the stream arrived (epoch ms), refused ones included. */
  readonly requests: Array<number>
  /** How many streams are open. */
  readonly open: () => number
  readonly close: () => Promise<void>
}

interface Stream {
  readonly res: Http.ServerResponse
  readonly queue: Array<string>
  readonly unsubscribe: () => void
}

export const start = async (options: Options = {}): Promise<FakeRegistry> => {
  const token = options.token ?? "reader"
  const nl = options.lineEnd ?? "\n"
  const routes = new Map<string, Route.StoredRoute>()
  const begun = () => {
    const made = ReplayRing.make(options.capacity)
    made.begin(newStoreId(), 0, routes.values())
    return made
  }
  let ring = options.source?.ring ?? begun()
  const current = () => options.source?.routes ?? routes.values()
  const cursor = () => ReplayRing.cursorOf(ring.store()!, ring.revision())
  const changeFrame = (change: ReplayRing.Change) =>
    frame(
      change._tag === "Upsert" ? "upsert" : "delete",
      ReplayRing.cursorOf(ring.store()!, change.revision),
      change.text
    )
  const streams = new Set<Stream>()
  const sockets = new Set<Net.Socket>()
  const resumedFrom: Array<string | undefined> = []
  const requests: Array<number> = []
  let refusal: number | undefined
  let cutMidway = false
  let silent = false
  let holdingReady = false

  const frame = (type: string, id: string, data?: string) =>
    `event: ${type}${nl}id: ${id}${nl}${data === undefined ? "" : `data: ${data}${nl}`}${nl}`

  const write = (stream: Stream, text: string) => {
    if (holdingReady && text.startsWith("event: ready")) silent = true
    if (silent) return void stream.queue.push(text)
    if (cutMidway && !text.startsWith(":")) {
      cutMidway = false
      stream.res.write(text.slice(0, Math.ceil(text.length / 2)), () => stream.res.destroy())
      return
    }
    stream.res.write(text)
  }

  const snapshot = (stream: Stream) => {
    const at = cursor()
    for (const route of current()) {
      write(stream, frame("upsert", ReplayRing.snapshotCursorOf(at, route), Route.toJson(route)))
    }
    write(stream, frame("ready", at))
  }

  const server = Http.createServer((req, res) => {
    if (req.url?.split("?")[0] !== "/v1/routing/changes") return void res.writeHead(404).end()
    requests.push(Date.now())
    if (refusal !== undefined) {
      const code = refusal === 401 ? "invalid_token" : refusal === 403 ? "insufficient_scope" : "store_unavailable"
      return void res.writeHead(refusal, { "content-type": "application/problem+json" })
        .end(JSON.stringify({ status: refusal, code, detail: `refused with ${refusal}` }))
    }
    if (req.headers.authorization !== `Bearer ${token}`) {
      return void res.writeHead(401, { "content-type": "application/problem+json" })
        .end(JSON.stringify({ status: 401, code: "invalid_token", detail: "The bearer token is not accepted." }))
    }
    const resumedAt = req.headers["last-event-id"] as string | undefined
    resumedFrom.push(resumedAt)
    res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-store" })
    const stream: Stream = {
      res,
      queue: [],
      unsubscribe: ring.subscribe((change) => change === undefined ? res.destroy() : write(stream, changeFrame(change)))
    }
    streams.add(stream)
    res.on("close", () => {
      stream.unsubscribe()
      streams.delete(stream)
    })
    const resume = resumedAt === undefined ? undefined : ring.since(resumedAt)
    if (resume === undefined) return snapshot(stream)
    if (resume._tag === "Changes") {
      for (const change of resume.changes) write(stream, changeFrame(change))
      return write(stream, frame("ready", cursor()))
    }
    write(stream, `event: reset${nl}data: {}${nl}${nl}`)
    snapshot(stream)
  })
  server.on("connection", (socket) => {
    sockets.add(socket)
    socket.on("close", () => sockets.delete(socket))
  })
  const heartbeat = setInterval(() => {
    for (const stream of streams) write(stream, `: heartbeat${nl}${nl}`)
  }, options.heartbeatMillis ?? 15_000)
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const { port } = server.address() as Net.AddressInfo

  return {
    origin: `http://127.0.0.1:${port}`,
    routes,
    // Each change takes the next revision, as a registry's log gives it.
    put: (route) => {
      const revised = new Route.StoredRoute({ ...route, revision: ring.revision() + 1 }, true)
      routes.set(route.id, revised)
      ring.upserted(revised, revised.revision)
    },
    remove: (id) => {
      if (routes.delete(id)) ring.deleted(id, ring.revision() + 1)
    },
    inject: (text) => {
      for (const stream of streams) stream.res.write(text)
    },
    cutAll: () => {
      for (const stream of streams) stream.res.destroy()
    },
    cutNextEventMidway: () => {
      cutMidway = true
    },
    restart: () => {
      for (const stream of streams) stream.res.destroy()
      ring = begun()
    },
    refuse: (status) => {
      refusal = status
    },
    silence: () => {
      silent = true
    },
    holdReady: () => {
      holdingReady = true
    },
    speak: () => {
      silent = false
      holdingReady = false
      for (const stream of streams) for (const text of stream.queue.splice(0)) write(stream, text)
    },
    resumedFrom,
    requests,
    open: () => streams.size,
    close: () =>
      new Promise<void>((resolve) => {
        clearInterval(heartbeat)
        for (const socket of sockets) socket.destroy()
        server.close(() => resolve())
      })
  }
}
