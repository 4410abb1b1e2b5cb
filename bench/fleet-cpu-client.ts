/**
 * One client process of bench/fleet-cpu.ts: many change streams opened on raw sockets (`node:net`, an HTTP/1.1
 * request written by hand), each read and thrown away, so that the client side costs little and exactly the same for
 * the registry and its peer. A stream counts as connected once its `ready` event arrived, and a round's last event as
 * received once its marker (a string only that event carries) went by on it; a marker split between two reads is
 * still found (each read is searched with the end of the one before).
 */
import { connect, type Socket } from "node:net"

export type Command =
  /** Opens `count` streams of `group` at `origin`'s change stream, with `token`. */
  | {
    readonly type: "connect"
    readonly group: string
    readonly origin: string
    readonly token: string
    readonly count: number
  }
  /** Answers `seen` once every stream of `group` received `marker` (from now on). */
  | { readonly type: "await"; readonly group: string; readonly marker: string }
  | { readonly type: "stop" }

export type Report =
  | { readonly type: "ready" }
  | { readonly type: "connected"; readonly group: string }
  | { readonly type: "armed"; readonly group: string }
  | { readonly type: "seen"; readonly group: string }
  | { readonly type: "lost"; readonly group: string; readonly reason: string }

interface Stream {
  readonly socket: Socket
  ready: boolean
  tail: string
  seen: boolean
}

interface Group {
  readonly streams: Array<Stream>
  marker: string | undefined
  unseen: number
}

const groups = new Map<string, Group>()
const send = (report: Report) => process.send!(report)

const open = (command: Extract<Command, { type: "connect" }>) => {
  const url = new URL(command.origin)
  const group: Group = { streams: [], marker: undefined, unseen: 0 }
  groups.set(command.group, group)
  let waiting = command.count
  const request =
    `GET /v1/routing/changes HTTP/1.1\r\nHost: ${url.host}\r\nAuthorization: Bearer ${command.token}\r\n` +
    "Accept: text/event-stream\r\n\r\n"
  for (let i = 0; i < command.count; i++) {
    const socket = connect(Number(url.port), url.hostname)
    const stream: Stream = { socket, ready: false, tail: "", seen: false }
    group.streams.push(stream)
    socket.setEncoding("latin1")
    socket.write(request)
    socket.on("data", (text: string) => {
      const searched = stream.tail + text
      stream.tail = text.length >= 64 ? text.slice(-64) : searched.slice(-64)
      if (!stream.ready) {
        if (!searched.includes("event: ready")) return
        stream.ready = true
        if (--waiting === 0) send({ type: "connected", group: command.group })
      }
      if (group.marker !== undefined && !stream.seen && searched.includes(group.marker)) {
        stream.seen = true
        if (--group.unseen === 0) {
          group.marker = undefined
          send({ type: "seen", group: command.group })
        }
      }
    })
    socket.on("error", () => {})
    socket.once("close", () => {
      if (!stopping) send({ type: "lost", group: command.group, reason: "a stream closed" })
    })
  }
}

let stopping = false

process.on("message", (command: Command) => {
  switch (command.type) {
    case "connect":
      return open(command)
    case "await": {
      const group = groups.get(command.group)!
      for (const stream of group.streams) stream.seen = false
      group.unseen = group.streams.length
      group.marker = command.marker
      return send({ type: "armed", group: command.group })
    }
    case "stop":
      stopping = true
      for (const group of groups.values()) for (const stream of group.streams) stream.socket.destroy()
      process.exit(0)
  }
})
send({ type: "ready" })
