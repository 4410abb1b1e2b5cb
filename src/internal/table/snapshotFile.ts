/**
 * The last-known-good snapshot of a route table on local disk (docs/resilience.md): what a follower or a Postgres-store
 * process writes after it applies changes, and routes from at its next start before its registry or database answers.
 *
 * The file is a header line, then the body: one line per route, `<revision> <Route.toJson(route)>`. The header is
 * JSON naming the format and its version, the kind of process and the store it follows, the revision the table holds,
 * when it was last confirmed current, the body's route count, byte length and SHA-256. A file whose header, length,
 * checksum or any line does not hold is refused whole, with its reason: a table is never taken in part.
 *
 * A write is atomic (a temporary file in the same folder, `fsync`, rename, `fsync` of the folder), so a crash or a
 * `kill -9` at any instant leaves the previous file or the new one. A write must cost the routing next to nothing: the
 * body is made of chunks of routes, each kept for the next write while its routes are the same, so a write serialises
 * only what changed; it is made and hashed in slices with a turn of the event loop between them, and never joined into
 * one buffer (the chunks go to the file in one `writev`); the file's I/O runs in libuv's thread pool; and writes are
 * spaced by their own cost as well as by the interval.
 *
 * @internal
 */
import { Duration, Effect, Either, Queue } from "effect"
import { createHash, type Hash } from "node:crypto"
import * as Fs from "node:fs/promises"
import * as Path from "node:path"
import { performance } from "node:perf_hooks"
import * as Route from "../../Route.js"
import * as Decode from "../follow/decode.js"
import type * as ParsedPath from "../route/path.js"

/** The file's format name and version: a file of another format or version is refused. */
export const FORMAT = "route-registry/snapshot"
export const VERSION = 1

/** Which kind of process wrote the file: one never routes from the other's. */
export type Kind = "follower" | "postgres"

/** The header line. */
export interface Header {
  readonly format: string
  readonly version: number
  readonly kind: Kind
  /** The store id (as the change log's cursors name it) the table follows. */
  readonly store: string
  readonly revision: number
  /** When the table was last confirmed equal to its registry or database (ISO 8601). */
  readonly confirmedAt: string
  readonly routes: number
  readonly bytes: number
  readonly sha256: string
}

/** A route of a snapshot, with its parsed path (the table's insert takes it). */
export interface Entry {
  readonly route: Route.StoredRoute
  readonly parsed: ParsedPath.ParsedPath
}

/** A snapshot read and checked. */
export interface Snapshot {
  readonly header: Header
  readonly entries: ReadonlyArray<Entry>
}

/** What a snapshot holds, to write. */
export interface Content {
  readonly kind: Kind
  readonly store: string
  readonly revision: number
  readonly confirmedAt: Date
  /** Captured at one instant: routes are immutable, so the array is the table as of `revision`. */
  readonly routes: ReadonlyArray<Route.StoredRoute>
}

// Work between two yields to the event loop, in routes serialised: a millisecond or two at most. A route whose chunk
// is reused counts as a tenth of one (a comparison of references, and its 160 bytes hashed after a changed chunk).
const SLICE = 500
const REUSED_WEIGHT = 0.1

// A turn of the event loop, for the requests waiting. `Effect.yieldNow` gives way to other fibers only, which Effect
// runs as microtasks: a table's whole encoding would then run before any request (bench/resilience.ts measured a
// follower's routing p99 three times as high with snapshots as without).
const nextTurn: Effect.Effect<void> = Effect.async<void>((resume) => {
  const immediate = setImmediate(() => resume(Effect.void))
  return Effect.sync(() => clearImmediate(immediate))
})

/** Consecutive routes of a body and their lines' bytes. */
interface Chunk {
  readonly routes: ReadonlyArray<Route.StoredRoute>
  readonly bytes: Buffer
}

/**
 * The chunks of the last body a writer made, by their first route: the next body reuses every chunk whose routes are
 * the same objects (routes are immutable), so a write serialises only the chunks that changed. With them, the body's
 * chunks in order and the SHA-256's state after each: a body that begins as the last one did hashes only from where it
 * differs. One per writer.
 */
export interface Kept {
  chunks: ReadonlyMap<Route.StoredRoute, Chunk>
  order: ReadonlyArray<Chunk>
  states: ReadonlyArray<Hash>
}

/** Nothing kept yet: the next body is made whole. */
export const kept = (): Kept => ({ chunks: new Map(), order: [], states: [] })

// A chunk ends after a route whose id's last byte is a multiple of 32 (a UUID's random bits: one route in 32 on
// average), so a route added or removed changes its own chunk and leaves the others' cuts where they were; or after
// MAX_CHUNK routes, so that no id pattern makes a chunk the whole table.
const MAX_CHUNK = 256

// The value of a lowercase hexadecimal digit's character code.
const hexDigit = (code: number): number => (code <= 57 ? code - 48 : code - 87)

const endsChunk = (route: Route.StoredRoute): boolean => {
  const id = route.id
  return hexDigit(id.charCodeAt(id.length - 1)) === 0 && (hexDigit(id.charCodeAt(id.length - 2)) & 1) === 0
}

// Each route's line, made once: a chunk made again for a route changed beside them serialises only that route.
const lines = new WeakMap<Route.StoredRoute, string>()

/**
 * Keeps `json`, the route's `Route.toJson` as it arrived (a registry's event, a snapshot's line), as the route's line:
 * the first write after a start then serialises no route again. `undefined` (a text not known to be canonical) keeps
 * nothing, and the line is made when a write needs it.
 */
export const keepLine = (route: Route.StoredRoute, json: string | undefined): void => {
  if (json !== undefined) lines.set(route, `${route.revision} ${json}\n`)
}

const lineOf = (route: Route.StoredRoute): string => {
  let line = lines.get(route)
  if (line === undefined) {
    line = `${route.revision} ${Route.toJson(route)}\n`
    lines.set(route, line)
  }
  return line
}

// Whether `before` holds exactly `routes[start]` to `routes[end - 1]`.
const holds = (before: Chunk, routes: ReadonlyArray<Route.StoredRoute>, start: number, end: number): boolean => {
  if (before.routes.length !== end - start) return false
  for (let i = start; i < end; i++) if (before.routes[i - start] !== routes[i]) return false
  return true
}

const chunkOf = (routes: ReadonlyArray<Route.StoredRoute>): Chunk => {
  let text = ""
  for (const route of routes) text += lineOf(route)
  return { routes, bytes: Buffer.from(text, "utf8") }
}

const isHeader = (u: unknown): u is Header => {
  if (typeof u !== "object" || u === null) return false
  const h = u as Record<string, unknown>
  return typeof h.store === "string" && Number.isSafeInteger(h.revision) && typeof h.confirmedAt === "string" &&
    !Number.isNaN(Date.parse(h.confirmedAt)) && Number.isSafeInteger(h.routes) && Number.isSafeInteger(h.bytes) &&
    typeof h.sha256 === "string" && (h.kind === "follower" || h.kind === "postgres")
}

// The route of one body line, or `undefined` when the line is not one.
const entryOf = (line: string): Entry | undefined => {
  const space = line.indexOf(" ")
  const revision = Number(line.slice(0, space))
  if (space < 1 || !Number.isSafeInteger(revision) || revision < 0) return undefined
  const text = line.slice(space + 1)
  let json: unknown
  try {
    json = JSON.parse(text)
  } catch {
    return undefined
  }
  const decoded = Decode.decodeUpsert(json, text)
  if (decoded === undefined) return undefined
  const { createdAt, handler, id, method, middleware, path } = decoded
  const route = new Route.StoredRoute({ id, method, path, middleware, handler, createdAt, revision }, true)
  keepLine(route, decoded.text)
  return { route, parsed: decoded.parsed }
}

/**
 * Checks a file's bytes as a snapshot of `kind`: the snapshot, or why it must not be routed from (a phrase naming
 * the defect: `truncated: …`, `checksum mismatch`, …).
 */
export const decode = (bytes: Buffer, kind: Kind): Either.Either<Snapshot, string> => {
  const newline = bytes.indexOf(10)
  if (newline < 0) return Either.left("truncated: no complete header line")
  let parsed: unknown
  try {
    parsed = JSON.parse(bytes.subarray(0, newline).toString("utf8"))
  } catch {
    return Either.left("corrupt: the header is not JSON")
  }
  const format = (parsed as { format?: unknown } | null)?.format
  const version = (parsed as { version?: unknown } | null)?.version
  if (format !== FORMAT) return Either.left(`foreign format: not a route-registry snapshot (${JSON.stringify(format)})`)
  if (version !== VERSION) {
    return Either.left(`foreign format: version ${String(version)}, this release reads ${VERSION}`)
  }
  if (!isHeader(parsed)) return Either.left("corrupt: the header lacks a field or has one of the wrong type")
  const header = parsed
  if (header.kind !== kind) return Either.left(`written by a ${header.kind} process, not a ${kind}'s`)
  const body = bytes.subarray(newline + 1)
  if (body.length < header.bytes) return Either.left(`truncated: ${body.length} of ${header.bytes} bytes`)
  if (body.length > header.bytes) {
    return Either.left(`corrupt: ${body.length} bytes where the header says ${header.bytes}`)
  }
  if (createHash("sha256").update(body).digest("hex") !== header.sha256) return Either.left("checksum mismatch")
  const lines = body.toString("utf8").split("\n")
  lines.pop() // the body ends with a newline
  if (lines.length !== header.routes) {
    return Either.left(`corrupt: ${lines.length} routes, the header says ${header.routes}`)
  }
  const entries: Array<Entry> = []
  for (let i = 0; i < lines.length; i++) {
    const entry = entryOf(lines[i]!)
    if (entry === undefined) return Either.left(`corrupt: line ${i + 2} is not a route`)
    entries.push(entry)
  }
  return Either.right({ header, entries })
}

/** Reads and checks the snapshot at `file`: it, or why not (a missing file is one reason). */
export const read = (file: string, kind: Kind): Effect.Effect<Either.Either<Snapshot, string>> =>
  Effect.promise(() =>
    Fs.readFile(file).then(
      (bytes) => decode(bytes, kind),
      (error: NodeJS.ErrnoException) =>
        Either.left(error.code === "ENOENT" ? "missing: no such file" : `unreadable: ${error.message}`)
    )
  )

/** The warning naming a snapshot that is not routed from, and why. */
export const refused = (file: string, reason: string): Effect.Effect<void> =>
  Effect.logWarning(`route table: the snapshot ${file} is not routed from (${reason}); starting without it`)

/** A file's bytes (its header, then its body's chunks), and the milliseconds its making held the event loop in all. */
export interface Encoded {
  readonly header: Buffer
  readonly body: ReadonlyArray<Buffer>
  readonly bytes: number
  readonly busyMillis: number
}

/**
 * The file's bytes for `content`, made in slices with a turn of the event loop between them, from the chunks `kept`
 * holds where they are unchanged (then `kept` holds this body's). The SHA-256 is taken chunk by chunk in the same
 * slices, from the first chunk that differs from the last body's: a body joined into one buffer, or copied whole for a
 * hash in the thread pool, held the event loop for milliseconds at a time at 10,000 routes (docs/performance.md).
 */
export const encode = (content: Content, kept: Kept): Effect.Effect<Encoded> =>
  Effect.gen(function*() {
    const routes = content.routes
    const before = kept.chunks
    const chunks = new Map<Route.StoredRoute, Chunk>()
    const order: Array<Chunk> = []
    const states: Array<Hash> = []
    // Undefined while the body so far is the last one's: its state is then the one kept.
    let hash: Hash | undefined
    let bytes = 0
    let busyMillis = 0
    let spent = 0
    let began = performance.now()
    for (let start = 0; start < routes.length;) {
      let end = start + 1
      while (end < routes.length && end - start < MAX_CHUNK && !endsChunk(routes[end - 1]!)) end++
      const first = routes[start]!
      const previous = before.get(first)
      const reused = previous !== undefined && holds(previous, routes, start, end)
      const chunk = reused ? previous : chunkOf(routes.slice(start, end))
      chunks.set(first, chunk)
      const i = order.length
      order.push(chunk)
      if (hash === undefined && kept.order[i] === chunk) {
        states.push(kept.states[i]!)
      } else {
        hash ??= i === 0 ? createHash("sha256") : kept.states[i - 1]!.copy()
        hash.update(chunk.bytes)
        states.push(hash.copy())
      }
      bytes += chunk.bytes.length
      spent += reused ? chunk.routes.length * REUSED_WEIGHT : chunk.routes.length
      start = end
      if (spent >= SLICE) {
        busyMillis += performance.now() - began
        yield* nextTurn
        spent = 0
        began = performance.now()
      }
    }
    kept.chunks = chunks
    kept.order = order
    kept.states = states
    hash ??= order.length === 0 ? createHash("sha256") : states[order.length - 1]!.copy()
    const header: Header = {
      format: FORMAT,
      version: VERSION,
      kind: content.kind,
      store: content.store,
      revision: content.revision,
      confirmedAt: content.confirmedAt.toISOString(),
      routes: routes.length,
      bytes,
      sha256: hash.digest("hex")
    }
    const head = Buffer.from(JSON.stringify(header) + "\n", "utf8")
    busyMillis += performance.now() - began
    return { header: head, body: order.map((chunk) => chunk.bytes), bytes: head.length + bytes, busyMillis }
  })

// Temporary file, fsync, rename over the old file, fsync of the folder: the old file or the new, never a mix. One
// temporary name, so a write a kill cut short leaves one stray file, which the next write truncates.
const replace = async (file: string, encoded: Encoded): Promise<void> => {
  const temporary = `${file}.tmp`
  const handle = await Fs.open(temporary, "w", 0o600)
  try {
    const { bytesWritten } = await handle.writev([encoded.header, ...encoded.body])
    if (bytesWritten !== encoded.bytes) throw new Error(`${bytesWritten} of ${encoded.bytes} bytes written`)
    await handle.sync()
  } finally {
    await handle.close()
  }
  await Fs.rename(temporary, file)
  const folder = await Fs.open(Path.dirname(Path.resolve(file)), "r")
  try {
    await folder.sync()
  } finally {
    await folder.close()
  }
}

/** What a write did: the file's size, and how long it held the event loop in all. */
export interface Written {
  readonly bytes: number
  readonly busyMillis: number
}

/**
 * Writes `content` to `file` atomically, reusing the chunks `kept` holds; fails with the reason (logged by the
 * writer, never fatal). Once the bytes are made, the file operations are not interrupted: an interrupted promise would
 * go on writing beside the next write.
 */
export const write = (file: string, content: Content, chunks: Kept = kept()): Effect.Effect<Written, string> =>
  Effect.flatMap(encode(content, chunks), (encoded) =>
    Effect.tryPromise({
      try: () => replace(file, encoded),
      catch: (error) => `cannot write the snapshot ${file}: ${String(error)}`
    }).pipe(
      Effect.as({ bytes: encoded.bytes, busyMillis: encoded.busyMillis }),
      Effect.uninterruptible
    ))

/** How often a snapshot is written at most while changes arrive: once a second. */
export const INTERVAL_MILLIS = 1_000

// Writes are also spaced by at least this many times the last one's time on the event loop, so that they take at most
// a twentieth of the request path's time on any machine and at any table size.
const BUSY_FACTOR = 20

// How long to wait after a write that held the event loop `busyMillis` in all.
const spacing = (busyMillis: number): number => Math.max(INTERVAL_MILLIS, Math.ceil(BUSY_FACTOR * busyMillis))

/** A snapshot writer: told of each change, it writes at most once per interval, and once more when it stops. */
export interface Writer {
  /** Something changed: a write follows within the interval. Synchronous and cheap, for the apply path. */
  readonly changed: () => void
  /** Writes on each cue, then waits the interval (longer after a costly write); runs until interrupted (its own fiber). */
  readonly run: Effect.Effect<never>
  /** The last write, at shutdown, when the table changed since the one before. */
  readonly final: Effect.Effect<void>
}

/**
 * A writer of `file`; `capture` gives the table as it is now, or `undefined` while it must not be written (a table
 * loaded in part, or from a bootstrap file). A failed write is logged once until one succeeds, never fatal.
 */
export const writer = (file: string, capture: () => Content | undefined): Effect.Effect<Writer> =>
  Effect.map(Queue.sliding<void>(1), (cue) => {
    const chunks = kept()
    let written: string | undefined
    let failing = false
    // The event loop's time the last write took, capture included: what spaces the next.
    let busyMillis = 0
    const once = Effect.suspend(() => {
      const began = performance.now()
      const content = capture()
      const captureMillis = performance.now() - began
      const key = content === undefined ? undefined : `${content.store}.${content.revision}.${content.routes.length}`
      if (content === undefined || key === written) return Effect.void
      return write(file, content, chunks).pipe(
        Effect.matchEffect({
          onSuccess: (done) => {
            written = key
            failing = false
            busyMillis = captureMillis + done.busyMillis
            return Effect.void
          },
          onFailure: (reason) => {
            const first = !failing
            failing = true
            return first ? Effect.logWarning(`route table: ${reason}; routing goes on, trying again`) : Effect.void
          }
        })
      )
    })
    return {
      changed: () => void Queue.unsafeOffer(cue, undefined),
      run: Effect.forever(
        Effect.zipRight(
          Effect.zipRight(Queue.take(cue), once),
          Effect.suspend(() => Effect.sleep(Duration.millis(spacing(busyMillis))))
        )
      ),
      final: once
    }
  })
