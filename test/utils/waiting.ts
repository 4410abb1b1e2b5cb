/**
 * Waiting in tests without racing the machine: for an event where there is one, and, for what sends none (another
 * process's exit, a directory removed), by polling up to a deadline. Each deadline is a bound on a loaded machine, not
 * a measure; the test that waits must have a timeout above the sum of its deadlines.
 */
import { Effect } from "effect"
import { watch } from "node:fs"
import { readFile } from "node:fs/promises"
import { basename, dirname } from "node:path"

// Real time, whatever clock the waiting fiber has: a TestClock stands still while sockets and processes answer.
const pause = (ms: number) => Effect.promise(() => new Promise((resolve) => setTimeout(resolve, ms)))

/** What a wait is for, as its failure names it: a text, or a function giving one when it fails. */
export type What = string | (() => string)

/**
 * The suite's one polling wait: until `check` holds (a function, sync or async, or an Effect run in the waiting
 * fiber, its context and clock included), polling in real time every 2 ms at first and backing off to every 100 ms;
 * dies with `what` after `millis`. For what sends no event (another process's exit, a directory removed, a socket
 * answering a fiber under a TestClock); from a Promise, `await Effect.runPromise(eventually(…))`.
 */
export const eventually = <E = never, R = never>(
  what: What,
  check: (() => boolean | PromiseLike<boolean>) | Effect.Effect<boolean, E, R>,
  millis = 5_000
): Effect.Effect<void, E, R> => {
  const holds = Effect.isEffect(check) ? check : Effect.promise(async () => await check())
  return Effect.gen(function*() {
    const deadline = Date.now() + millis
    for (let every = 2; !(yield* holds); every = Math.min(100, 2 * every)) {
      if (Date.now() > deadline) {
        return yield* Effect.die(new Error(`not within ${millis} ms: ${typeof what === "string" ? what : what()}`))
      }
      yield* pause(every)
    }
  })
}

/**
 * Resolves with the JSON a file holds once it is written whole: on the directory's events, checked once at the start
 * for a file written before. Rejects after `ms`, with `describe()` in the message.
 */
export const writtenJson = (file: string, ms: number, describe: () => string): Promise<any> =>
  new Promise((resolve, reject) => {
    let settled = false
    const settle = (f: () => void) => {
      if (settled) return
      settled = true
      watcher.close()
      clearTimeout(timer)
      f()
    }
    const check = () =>
      readFile(file, "utf8").then((text) => JSON.parse(text)).then(
        (json) => settle(() => resolve(json)),
        () => {} // not there yet, or not written whole: the next event tells
      )
    const watcher = watch(dirname(file), (_event, name) => {
      if (name === null || name === basename(file)) void check()
    })
    const timer = setTimeout(
      () => settle(() => reject(new Error(`${file} not written in ${ms} ms\n${describe()}`))),
      ms
    )
    void check()
  })
