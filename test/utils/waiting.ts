/**
 * Waiting in tests without racing the machine: for an event where there is one, and, for what sends none (another
 * process's exit, a directory removed), by polling up to a deadline. Each deadline is a bound on a loaded machine, not
 * a measure; the test that waits must have a timeout above the sum of its deadlines.
 */
import { watch } from "node:fs"
import { readFile } from "node:fs/promises"
import { basename, dirname } from "node:path"

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** Polls `condition` every 100 ms until it holds, or `ms` pass; resolves whether it held. */
export const eventually = async (ms: number, condition: () => boolean | Promise<boolean>): Promise<boolean> => {
  const deadline = Date.now() + ms
  for (;;) {
    if (await condition()) return true
    if (Date.now() > deadline) return false
    await pause(100)
  }
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
