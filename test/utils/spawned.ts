/**
 * An example run as a user runs it: `node <file>` in a process of its own, configured by its environment alone (only
 * PATH and HOME are inherited, so no DATABASE_URL or token leaks in from the test run). A file the run compiled (src/,
 * examples/ and the fixtures compiled.ts names) runs as compiled, any other through tsx.
 */
import { type ChildProcess, spawn } from "node:child_process"
import { existsSync } from "node:fs"
import { isAbsolute, join, relative } from "node:path"
import { fileURLToPath } from "node:url"
import { inject } from "vitest"
import type {} from "./globalSetup.js"

const ROOT = fileURLToPath(new URL("../..", import.meta.url))

/**
 * What node runs for `file` (absolute, or relative to the repository): its compiled JavaScript when the run compiled
 * it (under a vitest config without this suite's globalSetup, none is), otherwise the file through tsx.
 */
export const nodeArguments = (file: string): Array<string> => {
  const path = relative(ROOT, isAbsolute(file) ? file : join(ROOT, file))
  const compiled = inject("compiled")
  const javascript = compiled === undefined ? undefined : join(compiled, path.replace(/\.ts$/, ".js"))
  return javascript !== undefined && existsSync(javascript) ? [javascript] : ["--import", "tsx", file]
}

export interface Run {
  readonly child: ChildProcess
  /** Everything written to stdout and stderr so far. */
  readonly output: () => string
  /** The exit code, once the process has exited. */
  readonly exited: Promise<number | null>
}

export interface Running extends Run {
  /** The origin printed on the "listening on" line. */
  readonly origin: string
  /** Sends the signal and resolves with the exit code. */
  readonly stop: (signal?: NodeJS.Signals) => Promise<number | null>
}

export const run = (file: string, env: Record<string, string> = {}): Run => {
  const child = spawn(process.execPath, nodeArguments(file), {
    env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "", ...env },
    stdio: ["ignore", "pipe", "pipe"]
  })
  // When the run's main process is gone, this test process ends (workerSetup.ts), and the example with it.
  const kill = () => child.kill("SIGKILL")
  process.once("disconnect", kill)
  child.once("exit", () => process.off("disconnect", kill))
  let output = ""
  child.stdout!.on("data", (chunk) => (output += chunk))
  child.stderr!.on("data", (chunk) => (output += chunk))
  const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)))
  return { child, output: () => output, exited }
}

/**
 * The longest a process may take to print that it listens, on a loaded machine (loading its modules first). The
 * tests' timeout is well above it (vitest.config.ts).
 */
export const START_MS = 90_000

/** Runs a server example on a free port (PORT=0) and resolves once it prints "listening on <origin>". */
export const start = (file: string, env: Record<string, string> = {}): Promise<Running> => {
  const spawned = run(file, { PORT: "0", ...env })
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no "listening on" line:\n${spawned.output()}`)), START_MS)
    void spawned.exited.then(() => reject(new Error(`exited early:\n${spawned.output()}`)))
    spawned.child.stdout!.on("data", () => {
      const match = /listening on (http:\/\/127\.0\.0\.1:\d+)/i.exec(spawned.output())
      if (match === null) return
      clearTimeout(timer)
      resolve({
        ...spawned,
        origin: match[1]!,
        stop: (signal = "SIGTERM") => {
          spawned.child.kill(signal)
          return spawned.exited
        }
      })
    })
  })
}
