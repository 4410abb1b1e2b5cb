/**
 * What the benchmarks of change propagation share (bench/propagation.ts between processes on one database,
 * bench/fleet.ts from a registry to its followers): a plan of changes at a steady rate, made before the clock starts,
 * the percentiles of the latencies measured, and a digest of a table to tell whether readers ended equal.
 */
import { createHash } from "node:crypto"

/** One change of the plan: made by `writer` at `at` ms after the start; it leaves `handler` at `path`, or nothing. */
export interface Change {
  readonly key: number
  readonly at: number
  readonly writer: number
  readonly type: "create" | "update" | "delete"
  readonly path: string
  readonly handler: string | null
}

export interface PlanOptions {
  readonly perSecond: number
  readonly seconds: number
  /** How many processes make the changes, in turn. */
  readonly writers: number
  /** A path is changed again only this long after its last change, so every reader can see each state it passes. */
  readonly spacingMillis: number
  /** Set apart the paths and handlers of one plan from another's on the same registry (letters and digits). */
  readonly tag?: string | undefined
}

/**
 * The changes of a run: one every 1/rate seconds, in turn from each writer; half create a path, the rest update (three
 * tenths) or delete (a fifth) one whose last change is at least `spacingMillis` old. Every create and update leaves a
 * handler of its own (`h<key>`), so a reader can tell each state of a route from the others.
 */
export const plan = (options: PlanOptions): Array<Change> => {
  const tag = options.tag ?? ""
  const changes: Array<Change> = []
  const paths: Array<{ readonly path: string; free: number }> = []
  for (let key = 0; key < options.perSecond * options.seconds; key++) {
    const at = (key * 1000) / options.perSecond
    const writer = key % options.writers
    const ready = paths.filter((entry) => entry.free <= at)
    const roll = Math.random()
    const handler = `${tag}h${key}`
    if (roll < 0.5 || ready.length === 0) {
      const path = `${tag === "" ? "" : `/${tag}`}/p/${key}/:id`
      paths.push({ path, free: at + options.spacingMillis })
      changes.push({ key, at, writer, type: "create", path, handler })
    } else {
      const entry = ready[Math.floor(Math.random() * ready.length)]!
      const type = roll < 0.8 ? "update" : "delete"
      entry.free = type === "delete" ? Infinity : at + options.spacingMillis
      changes.push({ key, at, writer, type, path: entry.path, handler: type === "delete" ? null : handler })
    }
  }
  return changes
}

/** The `p`th percentile of ascending `sorted` (nearest rank); NaN when it is empty. */
export const percentile = (sorted: ArrayLike<number>, p: number): number =>
  sorted.length === 0 ? NaN : sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!

/** The routes of a table, as id=handler lines in order, hashed: equal tables have equal digests. */
export const digest = (routes: Iterable<{ readonly id: string; readonly handler: string }>): string =>
  createHash("sha1").update(Array.from(routes, (route) => `${route.id}=${route.handler}`).sort().join("\n"))
    .digest("hex")
