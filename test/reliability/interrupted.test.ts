/**
 * A test run that is interrupted (Ctrl-C) or killed leaves nothing behind: not the PostgreSQL server it started for
 * itself when DATABASE_URL is unset, nor its data directory, nor a test process, nor a process a test started.
 */
import { assert, describe, it, onTestFinished } from "@effect/vitest"
import { Effect } from "effect"
import { type ChildProcess, spawn } from "node:child_process"
import { existsSync } from "node:fs"
import { mkdtemp, rm } from "node:fs/promises"
import * as Net from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { run } from "../utils/spawned.js"
import { eventually, writtenJson } from "../utils/waiting.js"

const alive = (pid: number) => {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

const accepts = (port: number) =>
  new Promise<boolean>((resolve) => {
    const socket = Net.connect(port, "127.0.0.1")
    socket.once("error", () => resolve(false))
    socket.once("connect", () => {
      socket.destroy()
      resolve(true)
    })
  })

const exited = (child: ChildProcess) => new Promise((resolve) => child.once("exit", resolve))

// What each test waits for, at most, on a loaded machine: a process starting (tsx compiling, initdb and PostgreSQL
// starting, or a whole vitest run starting its test process), and processes and files going once their owner is gone
// (the guard stops the server twice, 2 s apart). Each test's timeout is above their sum.
const STARTED_MS = 90_000
const GONE_MS = 30_000
const TIMEOUT_MS = STARTED_MS + GONE_MS + 30_000

/** Resolves with the first line of `output()` that `accept` takes, on the process's output events. */
const line = (child: ChildProcess, output: () => string, accept: (text: string) => boolean, ms: number) =>
  new Promise<string>((resolve, reject) => {
    const find = () => output().split("\n").find(accept)
    const done = (f: () => void) => {
      clearTimeout(timer)
      child.stdout!.off("data", seen)
      child.off("exit", early)
      f()
    }
    const seen = () => {
      const found = find()
      if (found !== undefined) done(() => resolve(found))
    }
    const early = () => done(() => reject(new Error(`exited before printing it:\n${output()}`)))
    const timer = setTimeout(() => done(() => reject(new Error(`not printed in ${ms} ms:\n${output()}`))), ms)
    child.stdout!.on("data", seen)
    child.once("exit", early)
    seen()
  })

describe("an interrupted test run", () => {
  // SIGKILL, as in a crash: the process runs no handler. Ctrl-C ends it the same way, as it sets none.
  it("leaves no PostgreSQL server and no data directory when the process that started it is killed", async () => {
    const starter = run("test/fixtures/embeddedServer.ts")
    const printed = await line(starter.child, starter.output, (text) => text.startsWith("{"), STARTED_MS)
    const { directory, url } = JSON.parse(printed) as { directory: string; url: string }
    const port = Number(new URL(url).port)
    assert.isTrue(await accepts(port), "the server was not up")
    starter.child.kill("SIGKILL")
    await starter.exited
    // The guard stops the server twice, 2 s apart, then removes the directory.
    await Effect.runPromise(
      eventually(
        `${directory} removed and its server stopped`,
        async () => !existsSync(directory) && !(await accepts(port)),
        GONE_MS
      )
    )
  }, TIMEOUT_MS)

  it("leaves no test process and no process a test started when the run's main process gets SIGINT", async () => {
    const scratch = await mkdtemp(join(tmpdir(), "route-registry-interrupted-"))
    onTestFinished(() => rm(scratch, { recursive: true, force: true }))
    const pidsFile = join(scratch, "pids.json")
    const vitest = spawn(process.execPath, [
      "node_modules/vitest/vitest.mjs",
      "run",
      "--config",
      "test/fixtures/interrupted/vitest.config.ts"
    ], { env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "", PIDS_FILE: pidsFile } })
    let output = ""
    vitest.stdout.on("data", (chunk) => (output += chunk))
    vitest.stderr.on("data", (chunk) => (output += chunk))
    onTestFinished(() => void vitest.kill("SIGKILL"))
    const pids = await writtenJson(pidsFile, STARTED_MS, () => `the fixture's test did not start:\n${output}`) as {
      worker: number
      child: number
    }
    assert.isTrue(alive(pids.worker) && alive(pids.child))
    // The signal reaches the main process alone, as when it is sent to it by pid: its test process loses its
    // channel to it, and must end, with the child it started.
    vitest.kill("SIGINT")
    await exited(vitest)
    await Effect.runPromise(
      eventually(
        () => `still running: ${JSON.stringify(pids)}`,
        () => !alive(pids.worker) && !alive(pids.child),
        GONE_MS
      )
    )
  }, TIMEOUT_MS)
})
