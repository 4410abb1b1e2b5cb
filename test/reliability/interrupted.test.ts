/**
 * A test run that is interrupted (Ctrl-C) or killed leaves nothing behind: not the PostgreSQL server it started for
 * itself when DATABASE_URL is unset, nor its data directory, nor a test process, nor a process a test started.
 */
import { assert, describe, it, onTestFinished } from "@effect/vitest"
import { type ChildProcess, spawn } from "node:child_process"
import { existsSync, readFileSync } from "node:fs"
import { mkdtemp, rm } from "node:fs/promises"
import * as Net from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { run } from "../utils/spawned.js"

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

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

/** Polls `condition` every 100 ms for up to `ms`; resolves with its last answer. */
const within = async (ms: number, condition: () => boolean | Promise<boolean>) => {
  const deadline = Date.now() + ms
  for (;;) {
    if (await condition()) return true
    if (Date.now() > deadline) return false
    await pause(100)
  }
}

const exited = (child: ChildProcess) => new Promise((resolve) => child.once("exit", resolve))

describe("an interrupted test run", () => {
  // SIGKILL, as in a crash: the process runs no handler. Ctrl-C ends it the same way, as it sets none.
  it("leaves no PostgreSQL server and no data directory when the process that started it is killed", async () => {
    const starter = run("test/fixtures/embeddedServer.ts")
    const line = () => starter.output().split("\n").find((text) => text.startsWith("{"))
    assert.isTrue(await within(30_000, () => line() !== undefined), starter.output())
    const { directory, url } = JSON.parse(line()!) as { directory: string; url: string }
    const port = Number(new URL(url).port)
    assert.isTrue(await accepts(port), "the server was not up")
    starter.child.kill("SIGKILL")
    await starter.exited
    // The guard stops the server twice, 2 s apart, then removes the directory.
    assert.isTrue(await within(10_000, async () => !existsSync(directory) && !(await accepts(port))), directory)
  })

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
    assert.isTrue(await within(60_000, () => existsSync(pidsFile)), `the fixture's test did not start:\n${output}`)
    const pids = JSON.parse(readFileSync(pidsFile, "utf8")) as { worker: number; child: number }
    assert.isTrue(alive(pids.worker) && alive(pids.child))
    // The signal reaches the main process alone, as when it is sent to it by pid: its test process loses its
    // channel to it, and must end, with the child it started.
    vitest.kill("SIGINT")
    await exited(vitest)
    const gone = await within(10_000, () => !alive(pids.worker) && !alive(pids.child))
    assert.isTrue(gone, `still running: ${JSON.stringify(pids)}`)
  })
})
