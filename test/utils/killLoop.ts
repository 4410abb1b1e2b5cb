/**
 * `kill -9` of a follower process at random instants while changes pour into its registry (docs/resilience.md): after
 * every kill the snapshot file on disk must be a complete table of some revision, exactly the registry's routes as of
 * that revision, never a mix; every restart must route from it. Shared by test/reliability/killed.test.ts (20 kills)
 * and bench/resilience.ts (200 kills).
 */
import * as Fs from "node:fs"
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
}

export interface Outcome {
  readonly kills: number
  /** Snapshots found after a kill, each complete and equal to the registry's table at its revision. */
  readonly checked: number
  /** Restarts that said they route from the snapshot. */
  readonly fromSnapshot: number
  /** Revisions the writer made. */
  readonly revisions: number
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
  const request = async (method: string, path: string, body?: unknown) => {
    const response = await fetch(registry + path, {
      method,
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: body === undefined ? null : JSON.stringify(body)
    })
    const revision = Number(response.headers.get("registry-revision"))
    const json = response.status === 204 ? undefined : await response.json() as { id: string }
    if (response.status >= 300) throw new Error(`${method} ${path}: ${response.status} ${JSON.stringify(json)}`)
    return { revision, json }
  }
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
  let snapshotThere = false
  try {
    for (let kill = 0; kill < options.kills; kill++) {
      const follower = await options.startFollower(options.snapshotFile)
      if (snapshotThere) {
        if (/routing from the snapshot/.test(follower.output())) fromSnapshot++
        else problems.push(`restart ${kill} did not route from the snapshot:\n${follower.output().slice(-2_000)}`)
      }
      await pause(Math.random() * options.maxLifeMillis)
      await follower.kill()
      if (!Fs.existsSync(options.snapshotFile)) continue
      const decoded = SnapshotFile.decode(Fs.readFileSync(options.snapshotFile), "follower")
      if (decoded._tag === "Left") {
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
      } else checked++
    }
  } finally {
    writing = false
    await writer
  }
  return { kills: options.kills, checked, fromSnapshot, revisions: tables.size, problems }
}
