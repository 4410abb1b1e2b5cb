/**
 * `kill -9` of a follower process at random instants while changes pour into its registry (docs/resilience.md): after
 * every kill the snapshot file on disk must be a complete table of some revision, exactly the registry's routes as of
 * that revision, never a mix; every restart must route from it. Shared by test/reliability/killed.test.ts (20 kills)
 * and bench/resilience.ts (200 kills).
 */
import * as Fs from "node:fs"
import * as Http from "node:http"
import * as SnapshotFile from "../../src/internal/table/snapshotFile.js"

/** A process started: its origin, its output so far, and how to kill it. */
export interface Process {
  readonly origin: string
  readonly output: () => string
  readonly kill: () => Promise<unknown>
}

export interface Options {
  readonly kills: number
  readonly token: string
  /** The registry's origin. */
  readonly registry: string
  /** Starts a follower of the registry writing `snapshotFile`, resolving once it listens. */
  readonly startFollower: (snapshotFile: string) => Promise<Process>
  readonly snapshotFile: string
  /** The longest a follower lives before its kill (drawn uniformly from 0). */
  readonly maxLifeMillis: number
  /**
   * How many followers live and are killed at once, each writing a snapshot file of its own (`<snapshotFile>.<lane>`
   * when more than one), while the one writer pours changes in; default 1.
   */
  readonly lanes?: number | undefined
  /** Told after each kill what its snapshot was found to be (a benchmark's progress). */
  readonly report?: ((line: string) => void) | undefined
}

export interface Outcome {
  readonly kills: number
  /** Snapshots found after a kill, each complete and equal to the registry's table at its revision. */
  readonly checked: number
  /** Restarts that said they route from the snapshot. */
  readonly fromSnapshot: number
  /** Revisions the writer made. */
  readonly revisions: number
  /** The distinct revisions the snapshots checked were of. */
  readonly snapshotRevisions: number
  /**
   * Snapshots refused, by reason (the phrase before its first `:`), whether by the check after a kill or by a restart's
   * warning; a restart before the lane's first snapshot was written counts under `missing`.
   */
  readonly refused: Readonly<Record<string, number>>
  /** Every problem found (empty when the promise holds). */
  readonly problems: ReadonlyArray<string>
}

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

// The most routes the writer keeps: past it each create is followed by the delete of the oldest.
const KEEP = 200

export const run = async (options: Options): Promise<Outcome> => {
  const { registry, token } = options
  // The registry's table at each revision the writer made, as its sorted ids joined.
  const tables = new Map<number, string>()
  const live: Array<string> = []
  let writing = true
  let n = 0
  // A connection per write (no keep-alive): a loaded registry closing an idle connection as the next write goes out
  // would leave a write that may or may not have been applied, which the tables below cannot tell.
  const request = (method: string, path: string, body?: unknown) =>
    new Promise<{ revision: number; json: { id: string } | undefined }>((resolve, reject) => {
      const sent = Http.request(registry + path, {
        method,
        agent: false,
        headers: { authorization: `Bearer ${token}`, "content-type": "application/json" }
      }, (response) => {
        let text = ""
        response.setEncoding("utf8")
        response.on("data", (chunk: string) => text += chunk)
        response.on("end", () => {
          const status = response.statusCode ?? 0
          if (status >= 300) return reject(new Error(`${method} ${path}: ${status} ${text}`))
          resolve({
            revision: Number(response.headers["registry-revision"]),
            json: status === 204 ? undefined : JSON.parse(text) as { id: string }
          })
        })
      })
      sent.on("error", reject)
      sent.end(body === undefined ? undefined : JSON.stringify(body))
    })
  const record = (revision: number) => tables.set(revision, [...live].sort().join(","))
  const writer = (async () => {
    while (writing) {
      const created = await request("POST", "/v1/routing", {
        method: "GET",
        path: `/k/${n++}`,
        middleware: [],
        handler: "echo"
      })
      live.push(created.json!.id)
      record(created.revision)
      if (live.length > KEEP) {
        const removed = await request("DELETE", `/v1/routing/${live.shift()!}`)
        record(removed.revision)
      }
    }
  })()
  const problems: Array<string> = []
  let checked = 0
  let fromSnapshot = 0
  const revisionsSeen = new Set<number>()
  const refused: Record<string, number> = {}
  const refusal = (reason: string) => {
    const kind = reason.split(":")[0]!
    refused[kind] = (refused[kind] ?? 0) + 1
  }
  const lanes = options.lanes ?? 1
  const lane = async (index: number) => {
    const snapshotFile = lanes === 1 ? options.snapshotFile : `${options.snapshotFile}.${index}`
    let snapshotThere = false
    for (let kill = index; kill < options.kills; kill += lanes) {
      const follower = await options.startFollower(snapshotFile)
      const warned = /is not routed from \((.*)\); starting without it/.exec(follower.output())
      if (warned !== null) refusal(warned[1]!)
      if (snapshotThere) {
        if (/routing from the snapshot/.test(follower.output())) fromSnapshot++
        else problems.push(`restart ${kill} did not route from the snapshot:\n${follower.output().slice(-2_000)}`)
      }
      await pause(Math.random() * options.maxLifeMillis)
      await follower.kill()
      if (!Fs.existsSync(snapshotFile)) continue
      const decoded = SnapshotFile.decode(Fs.readFileSync(snapshotFile), "follower")
      if (decoded._tag === "Left") {
        refusal(decoded.left)
        problems.push(`after kill ${kill}: the snapshot is refused (${decoded.left})`)
        continue
      }
      snapshotThere = true
      const { entries, header } = decoded.right
      const expected = tables.get(header.revision)
      const actual = entries.map((entry) => entry.route.id).sort().join(",")
      if (expected === undefined) {
        problems.push(`after kill ${kill}: revision ${header.revision} is none the writer made`)
      } else if (expected !== actual) {
        problems.push(`after kill ${kill}: the snapshot at ${header.revision} is not the table then`)
      } else {
        checked++
        revisionsSeen.add(header.revision)
        options.report?.(`kill ${kill}: a complete snapshot of revision ${header.revision} (${entries.length} routes)`)
      }
    }
  }
  try {
    await Promise.all(Array.from({ length: lanes }, (_, index) => lane(index)))
  } finally {
    writing = false
    await writer
  }
  return {
    kills: options.kills,
    checked,
    fromSnapshot,
    revisions: tables.size,
    snapshotRevisions: revisionsSeen.size,
    refused,
    problems
  }
}
