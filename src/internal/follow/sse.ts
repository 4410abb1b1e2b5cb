/**
 * A Server-Sent Events parser, as the WHATWG HTML standard (§9.2.6, "Interpreting an event stream") reads a stream,
 * over bytes and bounded: lines end with CRLF, LF or CR (a CR at the end of one chunk and an LF at the start of the
 * next are one line end), a leading byte order mark is skipped (split across chunks too), `data` lines are joined with LF, a line starting with
 * `:` is a comment, `id` sets the last event id (kept across events, ignored when it holds NUL), a value's one leading
 * space is dropped, and unknown fields are ignored. `retry` is ignored too: a follower reconnects on its own backoff.
 *
 * One difference: an event with a type and no `data` line is delivered (with empty data), where the standard drops
 * it, so that a `ready` need carry no data.
 *
 * An event is held in memory until its blank line: one of more than `maxEventBytes` (its lines, field names and line
 * ends included) is a protocol error, and the parser takes nothing more, so a stream never makes it buffer without
 * bound.
 *
 * @internal
 */

/** One event, as dispatched: its type (`message` when it named none), its data, and the last event id. */
export interface Event {
  readonly type: string
  readonly data: string
  readonly id: string
}

export interface Sink {
  /** An event; a returned string is a protocol error, which stops the parser (a comment's too). */
  readonly event: (event: Event) => string | undefined
  /** A comment line (a heartbeat): its text after the colon, its one leading space dropped. */
  readonly comment: (text: string) => string | undefined
}

const LF = 0x0a
const CR = 0x0d
const BOM = [0xef, 0xbb, 0xbf] as const

export class Parser {
  /** The protocol error that stopped the parser, once there is one. */
  failure: string | undefined = undefined
  // The start of a line whose end has not arrived yet, and its length.
  private partial: Array<Buffer> = []
  private partialBytes = 0
  // The bytes of the lines of the event being read, before its blank line.
  private eventBytes = 0
  private data = ""
  private hasData = false
  private type = ""
  private lastId = ""
  // The previous chunk ended with CR: an LF starting this one ends no other line.
  private afterCR = false
  private started = false
  // The stream's first bytes while they may still be the start of a byte order mark (it can arrive split).
  private head: Buffer | undefined = undefined

  constructor(readonly maxEventBytes: number, readonly sink: Sink) {}

  /** Reads `chunk`; returns the protocol error that stopped the parser, if it stops. */
  push(chunk: Buffer): string | undefined {
    if (this.failure !== undefined) return this.failure
    let at = 0
    if (!this.started) {
      if (this.head !== undefined) chunk = Buffer.concat([this.head, chunk])
      const marked = BOM.every((byte, i) => i >= chunk.length || chunk[i] === byte)
      if (marked && chunk.length < BOM.length) {
        this.head = chunk
        return undefined
      }
      this.started = true
      this.head = undefined
      if (marked) at = BOM.length
    }
    if (this.afterCR) {
      this.afterCR = false
      if (chunk[at] === LF) at++
    }
    // CR rarely ends lines: found once per chunk, and again only once passed.
    let nextCR = chunk.indexOf(CR, at)
    while (at < chunk.length) {
      const lf = chunk.indexOf(LF, at)
      if (nextCR !== -1 && nextCR < at) nextCR = chunk.indexOf(CR, at)
      const end = nextCR !== -1 && (lf === -1 || nextCR < lf) ? nextCR : lf
      if (end === -1) {
        this.partialBytes += chunk.length - at
        if (this.eventBytes + this.partialBytes > this.maxEventBytes) return this.fail(this.tooLarge())
        this.partial.push(chunk.subarray(at))
        return undefined
      }
      const lineBytes = this.partialBytes + end - at
      const line = this.partialBytes === 0
        ? chunk.toString("utf8", at, end)
        : Buffer.concat([...this.partial, chunk.subarray(at, end)]).toString("utf8")
      this.partial = []
      this.partialBytes = 0
      if (chunk[end] === CR) {
        if (end + 1 === chunk.length) this.afterCR = true
        at = chunk[end + 1] === LF ? end + 2 : end + 1
      } else {
        at = end + 1
      }
      this.eventBytes += lineBytes + 1
      if (this.eventBytes > this.maxEventBytes) return this.fail(this.tooLarge())
      const failure = this.line(line)
      if (failure !== undefined) return this.fail(failure)
    }
    return undefined
  }

  private tooLarge(): string {
    return `an event of more than ${this.maxEventBytes} bytes`
  }

  private fail(failure: string): string {
    this.failure = failure
    this.partial = []
    this.data = ""
    return failure
  }

  private line(line: string): string | undefined {
    if (line === "") return this.dispatch()
    if (line.charCodeAt(0) === 0x3a) return this.sink.comment(line.slice(line.charCodeAt(1) === 0x20 ? 2 : 1))
    const colon = line.indexOf(":")
    const field = colon === -1 ? line : line.slice(0, colon)
    const value = colon === -1 ? "" : line.slice(line.charCodeAt(colon + 1) === 0x20 ? colon + 2 : colon + 1)
    switch (field) {
      case "event":
        this.type = value
        break
      case "data":
        this.data = this.hasData ? `${this.data}\n${value}` : value
        this.hasData = true
        break
      case "id":
        if (!value.includes("\0")) this.lastId = value
        break
    }
    return undefined
  }

  private dispatch(): string | undefined {
    const type = this.type
    const data = this.data
    const delivered = this.hasData || type !== ""
    this.eventBytes = 0
    this.type = ""
    this.data = ""
    this.hasData = false
    return delivered ? this.sink.event({ type: type === "" ? "message" : type, data, id: this.lastId }) : undefined
  }
}
