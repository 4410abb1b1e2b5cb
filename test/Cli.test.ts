/**
 * The `route-registry` command end to end, as an operator runs it, against `npm start` hosts (examples/server.ts) on
 * the in-memory store and on Postgres. The commands run in this process through `Cli.run`, the bin's own entry, with
 * the output, environment and exit code the bin gives them (`cli`); what is about the process (its exit code, plain
 * text on a pipe) runs the bin in a process of its own (`bin`): each process loads the package, seconds apiece on a
 * loaded machine.
 */
import * as NodeContext from "@effect/platform-node/NodeContext"
import * as FetchHttpClient from "@effect/platform/FetchHttpClient"
import { afterAll, assert, beforeAll, describe, it, onTestFinished, vi } from "@effect/vitest"
import { ConfigProvider, Console, Effect, Either, Redacted } from "effect"
import { spawn } from "node:child_process"
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises"
import * as Http from "node:http"
import type * as Net from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { format } from "node:util"
import * as Cli from "route-registry/Cli"
import * as Split from "route-registry/Split"
import * as Yaml from "yaml"
import * as Registry from "../src/internal/cli/apiClient.js"
import * as Apply from "../src/internal/cli/apply.js"
import * as Plan from "../src/internal/cli/plan.js"
import * as RoutesFile from "../src/internal/cli/routesFile.js"
import { follow } from "./utils/followers.js"
import { nodeArguments, type Running, start } from "./utils/spawned.js"
import * as TestDatabase from "./utils/TestDatabase.js"

// The hosts are processes of their own that load the package: seconds apiece on a loaded machine.
vi.setConfig({ testTimeout: 180_000, hookTimeout: 180_000 })

const BIN = fileURLToPath(new URL("../src/bin.ts", import.meta.url))
const SERVER = "examples/server.ts"
const TOKEN = "cli-admin"
const READER = "cli-reader"
// The reader follows and reports to the fleet (fleet:report), as followers' tokens do.
const HOST_ENV = {
  ROUTING_ADMIN_TOKENS: TOKEN,
  ROUTING_TOKENS: JSON.stringify([{ name: "reader", token: READER, scopes: ["routes:read", "fleet:report"] }])
}

interface Result {
  readonly code: number | null
  readonly stdout: string
  readonly stderr: string
}

/**
 * Runs the command with `args` as the bin does (`Cli.run`, then `Cli.exitCode`), in this process: its environment is
 * `env` alone (ROUTING_TOKEN unless it says otherwise), and what it prints is kept, a line as node's console writes
 * it.
 */
const cli = (args: ReadonlyArray<string>, env: Record<string, string> = { ROUTING_TOKEN: TOKEN }) => {
  let stdout = ""
  let stderr = ""
  const run = Console.consoleWith((console) =>
    Console.withConsole(Cli.run(["node", BIN, ...args]), {
      ...console,
      log: (...data) => Effect.sync(() => void (stdout += `${format(...data)}\n`)),
      error: (...data) => Effect.sync(() => void (stderr += `${format(...data)}\n`))
    })
  )
  return run.pipe(
    Effect.exit,
    Effect.map((exit): Result => ({ code: Cli.exitCode(exit), stdout, stderr })),
    Effect.withConfigProvider(ConfigProvider.fromMap(new Map(Object.entries(env)))),
    Effect.provide(NodeContext.layer),
    Effect.runPromise
  )
}

/** Runs the bin with `args` in a process of its own; its environment is `env`, PATH and HOME only. */
const bin = (args: ReadonlyArray<string>, env: Record<string, string> = { ROUTING_TOKEN: TOKEN }) =>
  new Promise<Result>((resolve) => {
    const child = spawn(process.execPath, [...nodeArguments(BIN), ...args], {
      env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "", ...env },
      stdio: ["ignore", "pipe", "pipe"]
    })
    let stdout = ""
    let stderr = ""
    child.stdout.on("data", (chunk) => (stdout += chunk))
    child.stderr.on("data", (chunk) => (stderr += chunk))
    child.on("exit", (code) => resolve({ code, stdout, stderr }))
  })

interface Stored {
  readonly id: string
  readonly method: string
  readonly path: string
  readonly middleware: ReadonlyArray<string>
  readonly handler: string
}

const create = async (origin: string, route: object): Promise<Stored> => {
  const response = await fetch(`${origin}/v1/routing`, {
    method: "POST",
    headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" },
    body: JSON.stringify(route)
  })
  assert.strictEqual(response.status, 201, await response.clone().text())
  return response.json()
}

/** The stored routes under `prefix`, through the API itself. */
const stored = async (origin: string, prefix = "/"): Promise<Array<Stored>> => {
  const query = new URLSearchParams({ pathPrefix: prefix, limit: "1000" })
  const response = await fetch(`${origin}/v1/routing?${query}`, { headers: { authorization: `Bearer ${TOKEN}` } })
  return (await response.json()).items
}

/** Every entry of the log (`/history`, or a route's `/{id}/history`), newest first, through the API itself. */
const historyOf = async (origin: string, path = "/history"): Promise<Array<{ [key: string]: any }>> => {
  const response = await fetch(`${origin}/v1/routing${path}?limit=200`, {
    headers: { authorization: `Bearer ${TOKEN}` }
  })
  assert.strictEqual(response.status, 200, await response.clone().text())
  return (await response.json()).items
}

const fields = (routes: ReadonlyArray<Stored>) =>
  routes.map(({ handler, method, middleware, path }) => ({ method, path, middleware, handler }))

const byPathThenMethod = (a: { path: string; method: string }, b: { path: string; method: string }) =>
  a.path < b.path ? -1 : a.path > b.path ? 1 : a.method < b.method ? -1 : a.method > b.method ? 1 : 0

/** The 1-based line of the first line of `text` containing `needle`. */
const lineOf = (text: string, needle: string) => text.split("\n").findIndex((line) => line.includes(needle)) + 1

let dir: string
const file = async (name: string, text: string) => {
  const path = join(dir, name)
  await writeFile(path, text)
  return path
}

// Routes created in an order that is neither the file order nor alphabetical by method.
const SEED = [
  { method: "POST", path: "/shop/users", handler: "Users#create" },
  { method: "GET", path: "/shop/users/:id", middleware: ["auth"], handler: "Users#show" },
  { method: "GET", path: "/shop/billing/invoices", middleware: ["auth", "timing"], handler: "echo" },
  { method: "DELETE", path: "/shop/users/:id", middleware: ["auth"], handler: "Users#remove" }
]

let source: Running
let target: Running

// A host on Postgres, on a database of its own so that a sync with the host's default table never meets another
// suite's routes: started by the first test that needs it ("into a host on Postgres", which syncs a whole registry
// into it while it is empty) and shared by the one after, which works under a prefix of its own.
let onPostgres: Promise<{ readonly host: Running; readonly drop: () => Promise<void> }> | undefined
const postgresHost = async (): Promise<Running> => {
  onPostgres ??= TestDatabase.freshDatabase().then(async (database) => ({
    host: await start(SERVER, { ...HOST_ENV, DATABASE_URL: database.url }),
    drop: database.drop
  }))
  return (await onPostgres).host
}

beforeAll(async () => {
  // Plain text, as the bin writes to a pipe, whatever terminal the suite runs in (the bin's own is tested below).
  vi.stubEnv("NO_COLOR", "1")
  dir = await mkdtemp(join(tmpdir(), "route-registry-cli-"))
  ;[source, target] = await Promise.all([start(SERVER, HOST_ENV), start(SERVER, HOST_ENV)])
  for (const route of SEED) await create(source.origin, route)
})

afterAll(async () => {
  // The test process runs other files after this one.
  vi.unstubAllEnvs()
  await Promise.all([source?.stop(), target?.stop(), onPostgres?.then(({ host }) => host.stop())])
  await onPostgres?.then(({ drop }) => drop())
  await rm(dir, { recursive: true, force: true })
})

describe("route-registry export", () => {
  it("writes every route sorted by path then method, as YAML by default and JSON by extension or --format", async () => {
    const yaml = await cli(["export", "--url", source.origin])
    assert.strictEqual(yaml.code, 0, yaml.stderr)
    const expected = fields(await stored(source.origin)).sort(byPathThenMethod)
    assert.deepStrictEqual(Yaml.parse(yaml.stdout), { routes: expected })

    const output = join(dir, "exported.json")
    const json = await cli(["export", "--url", source.origin, "--output", output])
    assert.strictEqual(json.code, 0, json.stderr)
    assert.strictEqual(json.stdout, "")
    assert.include(json.stderr, `wrote ${expected.length} routes to ${output}`)
    assert.deepStrictEqual(JSON.parse(await readFile(output, "utf8")), { routes: expected })

    const forced = await cli(["export", "--url", source.origin, "--format", "json"])
    assert.strictEqual(forced.stdout.trimEnd(), (await readFile(output, "utf8")).trimEnd())
  })

  it("selects with --path-prefix", async () => {
    const result = await cli(["export", "--url", source.origin, "--path-prefix", "/shop/users/"])
    assert.deepStrictEqual(
      Yaml.parse(result.stdout).routes.map((route: Stored) => `${route.method} ${route.path}`),
      ["DELETE /shop/users/:id", "GET /shop/users/:id"]
    )
  })
})

describe("route-registry sync", () => {
  it("copies one host's routes into another; a second sync plans nothing; the export round-trips", async () => {
    const exported = join(dir, "shop.yaml")
    assert.strictEqual((await cli(["export", "--url", source.origin, "--output", exported])).code, 0)

    const first = await cli(["sync", "--url", target.origin, exported])
    assert.strictEqual(first.code, 0, first.stderr)
    assert.include(first.stdout, `Plan: ${SEED.length} to create, 0 to update, 0 to delete, 0 unchanged.`)
    assert.include(first.stdout, "+ create GET /shop/users/:id  middleware [auth]  handler Users#show")
    assert.include(first.stderr, `[${SEED.length}/${SEED.length}] create`)
    assert.deepStrictEqual(
      fields(await stored(target.origin, "/shop/")).sort(byPathThenMethod),
      fields(await stored(source.origin)).sort(byPathThenMethod)
    )

    const second = await cli(["sync", "--url", target.origin, exported])
    assert.strictEqual(second.code, 0, second.stderr)
    assert.include(second.stdout, `No changes: the registry matches the file (${SEED.length} routes).`)
    assert.strictEqual(second.stderr, "")

    // The target's routes were created in another order, with other ids: its export is the same file, byte for byte.
    const again = await cli(["export", "--url", target.origin, "--path-prefix", "/shop/"])
    assert.strictEqual(again.stdout, await readFile(exported, "utf8"))
  })

  it("into a host on Postgres as well", async () => {
    const host = await postgresHost()
    const exported = join(dir, "to-postgres.json")
    assert.strictEqual((await cli(["export", "--url", source.origin, "--output", exported])).code, 0)
    const first = await cli(["sync", "--url", host.origin, exported])
    assert.strictEqual(first.code, 0, first.stderr)
    assert.include(first.stdout, `Plan: ${SEED.length} to create`)
    const second = await cli(["sync", "--url", host.origin, exported])
    assert.include(second.stdout, "No changes")
    const copied = await cli(["export", "--url", host.origin, "--format", "json"])
    assert.strictEqual(copied.stdout, await readFile(exported, "utf8"))
  })

  it("updates in place (same id) when only parameter names, middleware or handler change", async () => {
    const before = await create(target.origin, { method: "GET", path: "/inplace/:id", handler: "show" })
    const routes = await file(
      "inplace.yaml",
      "routes:\n  - method: GET\n    path: /inplace/:itemId\n    middleware: [auth]\n    handler: show\n"
    )
    const result = await cli(["sync", "--url", target.origin, "--path-prefix", "/inplace/", routes])
    assert.strictEqual(result.code, 0, result.stderr)
    assert.include(result.stdout, `~ update GET /inplace/:id  (id ${before.id})`)
    assert.include(result.stdout, "    path        /inplace/:id -> /inplace/:itemId")
    assert.include(result.stdout, "    middleware  [] -> [auth]")
    const after = await stored(target.origin, "/inplace/")
    assert.deepStrictEqual(after.map(({ id, middleware, path }) => ({ id, path, middleware })), [
      { id: before.id, path: "/inplace/:itemId", middleware: ["auth"] }
    ])
  })

  it("a rename onto the shape of a route the same sync deletes", async () => {
    const old = await create(target.origin, { method: "GET", path: "/rename/old/:id", handler: "Old#show" })
    const taken = await create(target.origin, { method: "GET", path: "/rename/new/:id", handler: "New#show" })
    // /rename/old/:id moves to /rename/new/:key, whose shape the route in the way has; --prune deletes what the file
    // lacks.
    const routes = await file(
      "rename.yaml",
      "routes:\n  - method: GET\n    path: /rename/new/:key\n    middleware: []\n    handler: Old#show\n"
    )
    const result = await cli(["sync", "--url", target.origin, "--path-prefix", "/rename/", "--prune", routes])
    assert.strictEqual(result.code, 0, result.stderr)
    const plan = result.stdout.split("\n")
    const deleted = plan.findIndex((line) => line.startsWith(`- delete GET /rename/old/:id  (id ${old.id})`))
    const updated = plan.findIndex((line) => line.startsWith(`~ update GET /rename/new/:id  (id ${taken.id})`))
    assert.isAtLeast(deleted, 0)
    assert.isAbove(updated, deleted)
    assert.deepStrictEqual(fields(await stored(target.origin, "/rename/")), [
      { method: "GET", path: "/rename/new/:key", middleware: [], handler: "Old#show" }
    ])
    const second = await cli(["sync", "--url", target.origin, "--path-prefix", "/rename/", "--prune", routes])
    assert.include(second.stdout, "No changes: the registry matches the file (1 route).")
  })

  it("--prune deletes only under --path-prefix, and the file must stay inside it", async () => {
    await create(target.origin, { method: "GET", path: "/teams/a/one", handler: "h" })
    await create(target.origin, { method: "GET", path: "/teams/a/two", handler: "h" })
    await create(target.origin, { method: "GET", path: "/teams/b/one", handler: "h" })
    const teamA = await file("team-a.yaml", "routes:\n  - method: GET\n    path: /teams/a/one\n    handler: h\n")

    const withoutPrune = await cli(["sync", "--url", target.origin, "--path-prefix", "/teams/a/", teamA])
    assert.include(withoutPrune.stdout, "1 stored route not in the file kept (--prune deletes them).")
    assert.lengthOf(await stored(target.origin, "/teams/"), 3)

    const pruned = await cli(["sync", "--url", target.origin, "--path-prefix", "/teams/a/", "--prune", teamA])
    assert.strictEqual(pruned.code, 0, pruned.stderr)
    assert.include(pruned.stdout, "- delete GET /teams/a/two")
    assert.deepStrictEqual((await stored(target.origin, "/teams/")).map((route) => route.path), [
      "/teams/a/one",
      "/teams/b/one"
    ])

    const outside = await cli(["sync", "--url", target.origin, "--path-prefix", "/teams/b/", "--prune", teamA])
    assert.strictEqual(outside.code, 1)
    assert.include(outside.stderr, `${teamA}:2:5: routes[0]: GET /teams/a/one is outside --path-prefix /teams/b/`)
    assert.lengthOf(await stored(target.origin, "/teams/b/"), 1)
  })

  it(
    "--dry-run and diff print the plan and change nothing; --dry-run has the registry answer each change",
    async () => {
      await create(target.origin, { method: "GET", path: "/dry/kept", middleware: ["auth"], handler: "h" })
      await create(target.origin, { method: "GET", path: "/dry/gone", handler: "h" })
      const routes = await file(
        "dry.yaml",
        "routes:\n  - method: GET\n    path: /dry/kept\n    middleware: [auth, timing]\n    handler: h\n" +
          "  - method: POST\n    path: /dry/new\n    handler: h\n"
      )
      const before = await stored(target.origin, "/dry/")
      const history = await historyOf(target.origin)
      const args = ["--url", target.origin, "--path-prefix", "/dry/", "--prune", routes]
      const diff = await cli(["diff", ...args])
      const dryRun = await cli(["sync", "--dry-run", ...args])
      for (const result of [diff, dryRun]) {
        assert.strictEqual(result.code, 0, result.stderr)
        assert.include(result.stdout, "- delete GET /dry/gone")
        assert.include(result.stdout, "~ update GET /dry/kept")
        assert.include(result.stdout, "    middleware  [auth] -> [auth, timing]")
        assert.include(result.stdout, "+ create POST /dry/new  middleware []  handler h")
        assert.include(result.stdout, "Plan: 1 to create, 1 to update, 1 to delete, 0 unchanged.")
      }
      assert.strictEqual(diff.stderr, "")
      assert.strictEqual(dryRun.stdout, diff.stdout + "Dry run: the registry would apply 3 changes; nothing changed.\n")
      assert.strictEqual(
        dryRun.stderr,
        "[1/3] delete GET /dry/gone: would be done\n[2/3] update GET /dry/kept: would be done\n" +
          "[3/3] create POST /dry/new: would be done\n"
      )
      assert.deepStrictEqual(await stored(target.origin, "/dry/"), before)
      // The server's dry runs wrote nothing to its log either.
      assert.deepStrictEqual(await historyOf(target.origin), history)

      // The registry's own refusals, which the plan cannot know: a token without the write scope.
      const refused = await cli(["sync", "--dry-run", ...args], { ROUTING_TOKEN: READER })
      assert.strictEqual(refused.code, 1)
      assert.include(refused.stderr, "would fail: 403 insufficient_scope")
      assert.include(refused.stderr, "the batch would be refused whole: the 3 changes left are not tried")
      assert.include(refused.stderr, "error: 3 of 3 changes would not be applied (see above)")
      assert.deepStrictEqual(await stored(target.origin, "/dry/"), before)
    },
    120_000
  )

  it("reports every problem of a file with its line and column, exits 1 and changes nothing", async () => {
    const text = [
      "routes:",
      "  - method: get",
      "    path: /broken//path",
      "    handler: h",
      "  - method: GET",
      "    path: /broken/ok",
      "    middleware: [auth, auth]",
      "    handler: h",
      "    middlewares: [x]",
      "  - method: GET",
      "    path: /broken/:a",
      "    handler: h",
      "  - method: GET",
      "    path: /broken/:b",
      "    handler: h",
      "  - method: GET",
      "    path: /broken/:c",
      "    handler: 9h",
      ""
    ].join("\n")
    const routes = await file("broken.yaml", text)
    const result = await cli(["sync", "--url", target.origin, routes])
    assert.strictEqual(result.code, 1)
    assert.strictEqual(result.stdout, "")
    const problems = result.stderr.split("\n").filter((line) => line.startsWith(`${routes}:`))
    assert.deepStrictEqual(problems.map((line) => line.slice(routes.length + 1).split(": ")[0]!.split(":")[0]), [
      String(lineOf(text, "method: get")),
      String(lineOf(text, "/broken//path")),
      String(lineOf(text, "[auth, auth]")),
      String(lineOf(text, "middlewares")),
      String(lineOf(text, "/broken/:b") - 1),
      String(lineOf(text, "/broken/:c") - 1),
      String(lineOf(text, "9h"))
    ])
    assert.include(result.stderr, "routes[0].method: methods are case-sensitive")
    assert.include(result.stderr, "routes[1].middleware[1]:")
    assert.include(result.stderr, "routes[1].middlewares: unknown field \"middlewares\"")
    assert.include(result.stderr, "routes[3]: GET /broken/:b has the method, shape and conditions of routes[2]")
    // A duplicate is reported with the route's other problems, not only once they are fixed.
    assert.include(result.stderr, "routes[4]: GET /broken/:c has the method, shape and conditions of routes[2]")
    assert.include(result.stderr, "routes[4].handler:")
    assert.lengthOf(await stored(target.origin, "/broken/"), 0)

    const syntax = await file("syntax.json", "{\"routes\": [\n  {\"method\": \"GET\",\n  \"path\": }\n]}\n")
    const unparsable = await cli(["diff", "--url", target.origin, syntax])
    assert.strictEqual(unparsable.code, 1)
    assert.match(unparsable.stderr, new RegExp(`${syntax}:3:\\d+: `))
  })

  it("sends If-Match: a route changed after its version was read is reported, not overwritten", async () => {
    const route = await create(target.origin, { method: "GET", path: "/race/:id", handler: "mine" })
    const items = Either.getOrThrow(
      RoutesFile.parse("routes:\n  - method: GET\n    path: /race/:id\n    handler: fromFile\n")
    )
    // Another operator changes the route between the read of its version and the update.
    const theirs = () =>
      fetch(`${target.origin}/v1/routing/${route.id}`, {
        method: "PATCH",
        headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" },
        body: JSON.stringify({ handler: "theirs" })
      })
    const result = await Effect.gen(function*() {
      const registry = yield* Registry.make(target.origin, Redacted.make(TOKEN))
      const racing: Registry.Registry = {
        ...registry,
        get: (id) => registry.get(id).pipe(Effect.tap(() => Effect.promise(theirs)))
      }
      const plan = Plan.make(yield* registry.list(), items, { pathPrefix: "/race/", prune: false })
      assert.deepStrictEqual(plan.changes.map((change) => change._tag), ["Update"])
      return yield* Effect.either(Apply.apply(racing, plan, "race.yaml"))
    }).pipe(Effect.provide(FetchHttpClient.layer), Effect.runPromise)
    assert.deepStrictEqual(result, Either.left(new Cli.SyncFailed({ failed: 1, total: 1 })))
    assert.strictEqual((await stored(target.origin, "/race/"))[0]!.handler, "theirs")
  })

  it("applies the plan as one batch: a refused change leaves every other undone, and is named", async () => {
    const route = await create(target.origin, { method: "GET", path: "/whole/:id", handler: "mine" })
    const items = Either.getOrThrow(RoutesFile.parse(
      "routes:\n  - method: GET\n    path: /whole/:id\n    handler: fromFile\n" +
        "  - method: GET\n    path: /whole/a\n    handler: h\n  - method: POST\n    path: /whole\n    handler: h\n"
    ))
    const before = (await historyOf(target.origin)).length
    // Another operator changes the route after the plan read its version: the batch's update is refused.
    const theirs = () =>
      fetch(`${target.origin}/v1/routing/${route.id}`, {
        method: "PATCH",
        headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" },
        body: JSON.stringify({ handler: "theirs" })
      })
    const printed: Array<string> = []
    const spy = vi.spyOn(console, "error").mockImplementation((...args) => void printed.push(args.join(" ")))
    onTestFinished(() => spy.mockRestore())
    const result = await Effect.gen(function*() {
      const registry = yield* Registry.make(target.origin, Redacted.make(TOKEN))
      const racing: Registry.Registry = {
        ...registry,
        get: (id) => registry.get(id).pipe(Effect.tap(() => Effect.promise(theirs)))
      }
      const plan = Plan.make(yield* registry.list(), items, { pathPrefix: "/whole", prune: false })
      assert.deepStrictEqual(plan.changes.map((change) => change._tag), ["Update", "Create", "Create"])
      return yield* Effect.either(Apply.apply(racing, plan, "whole.yaml"))
    }).pipe(Effect.provide(FetchHttpClient.layer), Effect.runPromise)
    assert.deepStrictEqual(result, Either.left(new Cli.SyncFailed({ failed: 3, total: 3 })))
    // The refused change is named: its place in the plan, in the file, and what it is.
    assert.match(
      printed.join("\n"),
      /\[1\/3\] whole\.yaml:\d+:\d+: routes\[0\]: update GET \/whole\/:id: failed: 412 precondition_failed: /
    )
    assert.notMatch(printed.join("\n"), /\[[23]\/3\].*failed/)
    assert.include(printed.join("\n"), "the batch was refused whole: the 3 changes left are not applied")
    // Neither create was applied: only the other operator's change is in the log.
    assert.deepStrictEqual(fields(await stored(target.origin, "/whole")), [
      { method: "GET", path: "/whole/:id", middleware: [], handler: "theirs" }
    ])
    assert.strictEqual((await historyOf(target.origin)).length, before + 1)
  })

  it("names the change a 409 refuses: a route another operator created meanwhile on its method and shape", async () => {
    const route = await create(target.origin, { method: "GET", path: "/taken/:id", handler: "mine" })
    const items = Either.getOrThrow(RoutesFile.parse(
      "routes:\n  - method: GET\n    path: /taken/:id\n    handler: fromFile\n" +
        "  - method: GET\n    path: /taken/b\n    handler: h\n"
    ))
    // Another operator creates the second route's method and shape after the plan was made.
    const theirs = () => create(target.origin, { method: "GET", path: "/taken/b", handler: "theirs" })
    const printed: Array<string> = []
    const spy = vi.spyOn(console, "error").mockImplementation((...args) => void printed.push(args.join(" ")))
    onTestFinished(() => spy.mockRestore())
    const result = await Effect.gen(function*() {
      const registry = yield* Registry.make(target.origin, Redacted.make(TOKEN))
      const racing: Registry.Registry = {
        ...registry,
        get: (id) => registry.get(id).pipe(Effect.tap(() => Effect.promise(theirs)))
      }
      const plan = Plan.make(yield* registry.list(), items, { pathPrefix: "/taken/", prune: false })
      assert.deepStrictEqual(plan.changes.map((change) => change._tag), ["Update", "Create"])
      return yield* Effect.either(Apply.apply(racing, plan, "taken.yaml"))
    }).pipe(Effect.provide(FetchHttpClient.layer), Effect.runPromise)
    assert.deepStrictEqual(result, Either.left(new Cli.SyncFailed({ failed: 2, total: 2 })))
    assert.match(
      printed.join("\n"),
      /\[2\/2\] taken\.yaml:\d+:\d+: routes\[1\]: create GET \/taken\/b: failed: 409 route_conflict: /
    )
    assert.notMatch(printed.join("\n"), /\[1\/2\].*failed/)
    assert.strictEqual((await stored(target.origin, "/taken/")).find((r) => r.id === route.id)!.handler, "mine")
  })

  it("beyond one batch's limits stops before writing, unless --split-batches", async () => {
    const many = Array.from({ length: 5_001 }, (_, i) => ({ method: "GET", path: `/many/r${i}`, handler: "h" }))
    const routes = await file("many.json", JSON.stringify({ routes: many }))
    // A host of its own, so that its 5,001 log entries are no other test's history.
    const host = await start(SERVER, HOST_ENV)
    onTestFinished(async () => {
      await host.stop()
    })
    const args = ["--url", host.origin, "--path-prefix", "/many/", routes]
    const refused = await cli(["sync", ...args])
    assert.strictEqual(refused.code, 1)
    assert.include(refused.stderr, "5001 changes")
    assert.include(refused.stderr, "beyond one batch's limits (5,000 operations, 4 MiB)")
    assert.include(refused.stderr, "--split-batches to apply it as 2 batches")
    assert.lengthOf(await stored(host.origin, "/many/"), 0)

    const split = await cli(["sync", "--split-batches", ...args])
    assert.strictEqual(split.code, 0, split.stderr)
    assert.include(split.stderr, "[5001/5001] batch 2/2: create GET /many/r")
    assert.strictEqual((await cli(["diff", "--exit-code", ...args])).code, 0)
  }, 240_000)

  it("exits 1 saying why when the registry refuses or cannot be reached", async () => {
    const routes = await file("one.yaml", "routes:\n  - method: GET\n    path: /refused\n    handler: h\n")
    const readOnly = await cli(["sync", "--url", target.origin, routes], { ROUTING_TOKEN: READER })
    assert.strictEqual(readOnly.code, 1)
    assert.include(readOnly.stderr, "failed: 403 insufficient_scope")
    assert.include(readOnly.stderr, "error: 1 of 1 changes not applied")

    const noToken = await cli(["list", "--url", target.origin], {})
    assert.strictEqual(noToken.code, 1)
    assert.include(noToken.stderr, "set ROUTING_TOKEN")

    // A port listened on, then closed: nothing answers there (a host started and stopped for it cost a process).
    const closed = Http.createServer()
    await new Promise<void>((resolve) => closed.listen(0, "127.0.0.1", resolve))
    const stopped = { origin: `http://127.0.0.1:${(closed.address() as Net.AddressInfo).port}` }
    await new Promise((resolve) => closed.close(resolve))
    const unreachable = await cli(["list", "--url", stopped.origin])
    assert.strictEqual(unreachable.code, 1)
    assert.include(unreachable.stderr, `error: cannot reach ${stopped.origin}`)
  })
})

/**
 * A proxy to `origin` that closes a kept-alive connection, unanswered, when a write arrives on it after an earlier
 * request: the race of a server's keep-alive timeout closing an idle connection as the client sends its next request
 * on it, made to happen every time. The write never reaches `origin`.
 */
const closingKeptAlive = async (origin: string) => {
  const closed: Array<string> = []
  const server = Http.createServer((req, res) => {
    const socket = req.socket as Net.Socket & { requests?: number }
    socket.requests = (socket.requests ?? 0) + 1
    if (socket.requests > 1 && req.method !== "GET") {
      closed.push(`${req.method} ${req.url}`)
      return void socket.destroy()
    }
    const upstream = Http.request(origin + req.url, { method: req.method, headers: req.headers }, (answer) => {
      res.writeHead(answer.statusCode!, answer.headers)
      answer.pipe(res)
    })
    req.pipe(upstream)
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  onTestFinished(() => {
    server.closeAllConnections()
    return new Promise<void>((resolve) => server.close(() => resolve()))
  })
  return { origin: `http://127.0.0.1:${(server.address() as Net.AddressInfo).port}`, closed }
}

describe("route-registry diff and sync with descriptions, tags, middleware configs and conditions", () => {
  const CONFIG = `{"":{"nested":[1,2]},"max":100,"per":"minute"}`
  const WHEN = `{"host":"api.example.com","headers":[{"name":"x-version","value":"2"}],"query":[{"name":"beta"}]}`
  // Written as a person would: keys in any order, a header name in capitals. The two routes differ only in `when`.
  const routesFile = (max: number, version: string) =>
    `routes:
  - method: GET
    path: /fields/users/:id
    middleware: [auth, { name: rateLimit, config: { per: minute, max: ${max}, "": { nested: [1, 2] } } }]
    handler: showUser
    description: One user, as its owner sees it
    tags: [team:accounts, public]
  - method: GET
    path: /fields/users/:userId
    handler: showUserV2
    when: { query: [{ name: beta }], headers: [{ name: X-Version, value: "${version}" }], host: api.example.com }
`

  it("a file with them creates, then matches, then updates in place, on the memory store and on Postgres", async () => {
    const postgres = await postgresHost()
    const first = await file("fields.yaml", routesFile(100, "2"))
    const changed = await file("fields-changed.yaml", routesFile(50, "3"))
    for (const host of [target, postgres]) {
      const scope = ["--url", host.origin, "--path-prefix", "/fields/"]
      const planned = await cli(["diff", "--exit-code", ...scope, first])
      assert.strictEqual(planned.code, 1, planned.stderr)
      assert.include(planned.stdout, `+ create GET /fields/users/:id  middleware [auth, rateLimit ${CONFIG}]`)
      assert.include(planned.stdout, `+ create GET /fields/users/:userId when ${WHEN}  middleware []`)
      const synced = await cli(["sync", ...scope, first])
      assert.strictEqual(synced.code, 0, synced.stderr)
      assert.include(synced.stdout, "Plan: 2 to create, 0 to update, 0 to delete, 0 unchanged.")

      // Stored as the API keeps them, in canonical form.
      const routes = await stored(host.origin, "/fields/")
      const plain = routes.find((route) => route.path === "/fields/users/:id")!
      const conditioned = routes.find((route) => route.path === "/fields/users/:userId")!
      assert.strictEqual(JSON.stringify(plain.middleware), `["auth",{"name":"rateLimit","config":${CONFIG}}]`)
      assert.deepInclude(plain as object, {
        description: "One user, as its owner sees it",
        tags: ["team:accounts", "public"]
      })
      assert.strictEqual(JSON.stringify((conditioned as Stored & { when: unknown }).when), WHEN)

      const same = await cli(["diff", "--exit-code", ...scope, first])
      assert.strictEqual(same.code, 0, same.stdout + same.stderr)
      assert.include(same.stdout, "No changes: the registry matches the file (2 routes).")
      const exported = await cli(["export", ...scope, "--format", "json"])
      assert.deepStrictEqual(JSON.parse(exported.stdout).routes, [
        {
          method: "GET",
          path: "/fields/users/:id",
          middleware: ["auth", { name: "rateLimit", config: JSON.parse(CONFIG) }],
          handler: "showUser",
          description: "One user, as its owner sees it",
          tags: ["team:accounts", "public"]
        },
        { method: "GET", path: "/fields/users/:userId", middleware: [], handler: "showUserV2", when: JSON.parse(WHEN) }
      ])

      // Another config updates the route in place; other conditions are another route, the old one pruned.
      const diff = await cli(["diff", "--exit-code", "--prune", ...scope, changed])
      assert.strictEqual(diff.code, 1, diff.stderr)
      assert.include(diff.stdout, `~ update GET /fields/users/:id  (id ${plain.id})`)
      assert.include(
        diff.stdout,
        `    middleware  [auth, rateLimit ${CONFIG}] -> [auth, rateLimit ${CONFIG.replace("100", "50")}]`
      )
      assert.include(diff.stdout, `- delete GET /fields/users/:userId when ${WHEN}  (id ${conditioned.id})`)
      assert.include(diff.stdout, `+ create GET /fields/users/:userId when ${WHEN.replace(`"2"`, `"3"`)}`)
      const resynced = await cli(["sync", "--prune", ...scope, changed])
      assert.strictEqual(resynced.code, 0, resynced.stderr)
      assert.include(resynced.stdout, "Plan: 1 to create, 1 to update, 1 to delete, 0 unchanged.")
      const after = await stored(host.origin, "/fields/")
      assert.strictEqual(after.find((route) => route.path === "/fields/users/:id")!.id, plain.id)
      assert.strictEqual((await cli(["diff", "--exit-code", "--prune", ...scope, changed])).code, 0)
    }
  })
})

describe("route-registry diff --exit-code", () => {
  it("exits 0 when the registry matches the file, 1 when it differs (as git diff --exit-code), 2 when it cannot compare", async () => {
    const exported = join(dir, "exit-code.yaml")
    assert.strictEqual((await cli(["export", "--url", source.origin, "--output", exported])).code, 0)
    const same = await cli(["diff", "--exit-code", "--url", source.origin, exported])
    assert.strictEqual(same.code, 0, same.stderr)
    assert.include(same.stdout, "No changes")
    const differing = await file(
      "exit-code-more.yaml",
      `${await readFile(exported, "utf8")}  - method: GET
    path: /shop/new-in-file
    handler: echo
`
    )
    const drift = await cli(["diff", "--exit-code", "--url", source.origin, differing])
    assert.strictEqual(drift.code, 1, drift.stderr)
    assert.include(drift.stdout, "+ create GET /shop/new-in-file")
    assert.strictEqual(drift.stderr, "")
    // Without --exit-code, a diff that ran is a success, whatever it found.
    assert.strictEqual((await cli(["diff", "--url", source.origin, differing])).code, 0)
    const unreachable = await cli(["diff", "--exit-code", "--url", "http://127.0.0.1:9", exported])
    assert.strictEqual(unreachable.code, 2)
    const broken = await file("exit-code-broken.yaml", "routes:\n  - method: get\n    path: /x\n    handler: h\n")
    const invalid = await cli(["diff", "--exit-code", "--url", source.origin, broken])
    assert.strictEqual(invalid.code, 2)
    assert.include(invalid.stderr, "use \"GET\" instead of \"get\"")
    // Nothing was written.
    assert.lengthOf(await stored(source.origin, "/shop/new-in-file"), 0)
  })
})

describe("route-registry when the server closes a kept-alive connection as a request goes out on it", () => {
  it("sync sends its batch again on a new connection, and each change is applied once", async () => {
    await create(target.origin, { method: "GET", path: "/keepalive/old", handler: "echo" })
    const kept = await create(target.origin, { method: "GET", path: "/keepalive/:id", handler: "echo" })
    const routes = await file(
      "race-keepalive.yaml",
      "routes:\n  - method: GET\n    path: /keepalive/:itemId\n    handler: echo\n" +
        "  - method: POST\n    path: /keepalive\n    handler: echo\n"
    )
    const proxy = await closingKeptAlive(target.origin)
    const before = (await historyOf(target.origin)).length
    const result = await cli(["sync", "--url", proxy.origin, "--path-prefix", "/keepalive", "--prune", routes])
    assert.strictEqual(result.code, 0, result.stderr)
    // The one write, the batch, met a closed connection at least once.
    assert.deepStrictEqual(new Set(proxy.closed.map((request) => request.split(" ")[0])), new Set(["POST"]))
    assert.deepStrictEqual(fields(await stored(target.origin, "/keepalive")).sort(byPathThenMethod), [
      { method: "POST", path: "/keepalive", middleware: [], handler: "echo" },
      { method: "GET", path: "/keepalive/:itemId", middleware: [], handler: "echo" }
    ])
    // One log entry per change: none was applied twice.
    const after = await historyOf(target.origin)
    const entries = after.slice(0, after.length - before)
    assert.deepStrictEqual(entries.map((entry) => entry.action).sort(), ["create", "delete", "update"])
    assert.strictEqual((await stored(target.origin, "/keepalive/:itemId"))[0]!.id, kept.id)
  })
})

describe("route-registry sync --wait", () => {
  it("waits for the registry's followers to apply the sync, and names those still behind", async () => {
    const edge = await follow(target.origin, READER, { name: "cli-edge" })
    onTestFinished(() => edge.close())
    // A follower that names itself and never reports: behind whatever the sync changes.
    const silent = new AbortController()
    onTestFinished(() => silent.abort())
    const stream = await fetch(`${target.origin}/v1/routing/changes`, {
      headers: { authorization: `Bearer ${READER}`, "follower-name": "cli-silent" },
      signal: silent.signal
    })
    assert.strictEqual(stream.status, 200)
    const first = await file("wait-1.yaml", "routes:\n  - method: GET\n    path: /wait/one\n    handler: h\n")
    const args = ["--url", target.origin, "--path-prefix", "/wait/"]
    const behind = await cli(["sync", ...args, "--wait", "2", first])
    assert.strictEqual(behind.code, 1, behind.stderr)
    assert.match(behind.stdout, /1 of 2 connected followers have not applied revision \d+:\n {2}cli-silent at /)
    assert.include(behind.stdout, "cli-silent at 127.0.0.1:")
    assert.include(behind.stdout, ": has not reported")
    assert.notInclude(behind.stdout, "cli-edge")
    assert.include(behind.stderr, "error: 1 follower has not applied revision")

    silent.abort()
    const second = await file(
      "wait-2.yaml",
      "routes:\n  - method: GET\n    path: /wait/one\n    handler: h\n  - method: GET\n    path: /wait/two\n    handler: h\n"
    )
    const waited = await cli(["sync", ...args, "--wait", "60", second])
    assert.strictEqual(waited.code, 0, waited.stderr)
    assert.match(waited.stdout, /Every connected follower \(1\) has applied revision \d+\.\n$/)
  })
})

describe("route-registry list and get", () => {
  it("print a table for people and the API's JSON for scripts", async () => {
    const json = await cli(["list", "--url", source.origin, "--json"])
    assert.strictEqual(json.code, 0, json.stderr)
    const listed = JSON.parse(json.stdout)
    assert.deepStrictEqual(listed, await stored(source.origin))

    const table = await cli(["list", "--url", source.origin, "--method", "GET"])
    const lines = table.stdout.trimEnd().split("\n")
    assert.match(lines[0]!, /^ID\s+METHOD\s+PATH\s+MIDDLEWARE\s+HANDLER\s+CREATED$/)
    const gets = listed.filter((route: Stored) => route.method === "GET")
    assert.lengthOf(lines, gets.length + 1)
    gets.forEach((route: Stored, i: number) => {
      assert.deepStrictEqual(lines[i + 1]!.split(/\s{2,}/).slice(0, 5), [
        route.id,
        route.method,
        route.path,
        route.middleware.length === 0 ? "-" : route.middleware.join(", "),
        route.handler
      ])
    })

    const one = listed[0] as Stored
    const got = await cli(["get", "--url", source.origin, "--json", one.id])
    assert.deepStrictEqual(JSON.parse(got.stdout), one)
    const shown = await cli(["get", "--url", source.origin, one.id])
    const response = await fetch(`${source.origin}/v1/routing/${one.id}`, {
      headers: { authorization: `Bearer ${TOKEN}` }
    })
    assert.include(shown.stdout, `path        ${one.path}\n`)
    assert.include(shown.stdout, `etag        ${response.headers.get("etag")}\n`)

    const missing = await cli(["get", "--url", source.origin, "no-such-id"])
    assert.strictEqual(missing.code, 1)
    assert.include(missing.stderr, "error: 404 route_not_found")
  })

  it("list takes the search text as --q (as docs/cli.md and the API's q say) and as -q", async () => {
    const expected = (await stored(source.origin)).filter((route) => route.handler.includes("Users#"))
    assert.isAbove(expected.length, 0)
    for (const args of [["--q", "Users#"], ["-q", "Users#"], ["--q=Users#"]]) {
      const found = await cli(["list", "--url", source.origin, "--json", ...args])
      assert.strictEqual(found.code, 0, found.stderr)
      assert.deepStrictEqual(JSON.parse(found.stdout), expected, args.join(" "))
    }
  })
})

describe("route-registry match", () => {
  it("says which route serves a request and why not the others: a field a line, or the API's JSON", async () => {
    const reader = { ROUTING_TOKEN: READER }
    const json = await cli(["match", "--url", source.origin, "--json", "HEAD", "/shop/users/42?fields=name"], reader)
    assert.strictEqual(json.code, 0, json.stderr)
    const query = new URLSearchParams({ method: "HEAD", path: "/shop/users/42?fields=name" })
    const response = await fetch(`${source.origin}/v1/routing/match?${query}`, {
      headers: { authorization: `Bearer ${READER}` }
    })
    const answer = await response.json()
    assert.deepStrictEqual(JSON.parse(json.stdout), answer)
    assert.strictEqual(answer.outcome, "route")
    assert.strictEqual(answer.route.path, "/shop/users/:id")
    assert.deepStrictEqual(answer.params, { id: "42" })

    const shown = await cli(["match", "--url", source.origin, "DELETE", "/shop/users"], reader)
    assert.strictEqual(shown.code, 0, shown.stderr)
    const post = (await stored(source.origin, "/shop/users")).find((route) => route.method === "POST")!
    assert.include(shown.stdout, "outcome  method_not_allowed\nroute    -\nparams   -\nallow    POST\n")
    assert.include(shown.stdout, `  POST /shop/users  (${post.id})\n    another method: POST, not DELETE\n`)

    const refused = await cli(["match", "--url", source.origin, "get", "/shop/users"], reader)
    assert.strictEqual(refused.code, 1)
    const relative = await cli(["match", "--url", source.origin, "GET", "shop/users"], reader)
    assert.strictEqual(relative.code, 1)
  })

  it("--key gives a split's choice for the key (handler and bucket), as the API's key= does", async () => {
    const reader = { ROUTING_TOKEN: READER }
    const route = await create(source.origin, {
      method: "GET",
      path: "/cli-split/:id",
      handler: "echo",
      split: { by: "header:x-user", targets: [{ handler: "echo2", weight: 5000 }] }
    }) as Stored & { readonly split: Split.Split }
    const key = "user-7 é"
    const expected = Split.choose(route, key)
    const shown = await cli(["match", "--url", source.origin, "--key", key, "GET", "/cli-split/1"], reader)
    assert.strictEqual(shown.code, 0, shown.stderr)
    assert.include(
      shown.stdout,
      `route    GET /cli-split/:id  (${route.id})\n` +
        `split    handler ${expected.handler} (key ${JSON.stringify(key)}, bucket ${expected.bucket})\n`
    )
    const json = await cli(["match", "--url", source.origin, "--json", "--key", key, "GET", "/cli-split/1"], reader)
    const query = new URLSearchParams({ method: "GET", path: "/cli-split/1", key })
    const response = await fetch(`${source.origin}/v1/routing/match?${query}`, {
      headers: { authorization: `Bearer ${READER}` }
    })
    const answer = await response.json()
    assert.deepStrictEqual(JSON.parse(json.stdout), answer)
    assert.deepStrictEqual(answer.split, expected)
    const keyless = await cli(["match", "--url", source.origin, "GET", "/cli-split/1"], reader)
    assert.include(keyless.stdout, "split    handler echo (no key: the route's handler; give one with --key)\n")
    // A route without a split answers as before, whatever the key.
    const plain = await cli(["match", "--url", source.origin, "--json", "--key", key, "GET", "/shop/users/42"], reader)
    assert.notProperty(JSON.parse(plain.stdout), "split")
  })

  it("exits 0 when a route (or the host) serves the request, 1 when no route matches the path, 2 when it cannot answer", async () => {
    const reader = { ROUTING_TOKEN: READER }
    // The bin's process exits with each code.
    const served = await bin(["match", "--url", source.origin, "GET", "/shop/users/42"], reader)
    assert.strictEqual(served.code, 0, served.stderr)
    const none = await bin(["match", "--url", source.origin, "GET", "/nowhere"], reader)
    assert.strictEqual(none.code, 1, none.stderr)
    assert.include(none.stdout, "outcome  not_found\n")
    assert.strictEqual(none.stderr, "")
    // Routes serve the path with other methods: an answer about routes that exist, 0 as in earlier releases.
    const other = await cli(["match", "--url", source.origin, "PUT", "/shop/users"], reader)
    assert.strictEqual(other.code, 0, other.stderr)
    assert.include(other.stdout, "outcome  method_not_allowed\n")
    // npm start serves /docs itself: the host line says so, and the request is served.
    const host = await cli(["match", "--url", source.origin, "GET", "/docs"], reader)
    assert.strictEqual(host.code, 0, host.stderr)
    assert.include(
      host.stdout,
      "outcome  not_found\nhost     serves this path itself (it declares /docs), before any stored route\n"
    )
    const unreachable = await bin(["match", "--url", "http://127.0.0.1:9", "GET", "/x"], reader)
    assert.strictEqual(unreachable.code, 2)
    assert.include(unreachable.stderr, "error: cannot reach http://127.0.0.1:9")
    const refused = await cli(["match", "--url", source.origin, "GET", "/x"], { ROUTING_TOKEN: "not-a-token" })
    assert.strictEqual(refused.code, 2)
    assert.include(refused.stderr, "401 invalid_token")
  })

  it("a lowercase method is refused with the API's hint naming the uppercase method, as a usage error", async () => {
    for (const args of [["match", "get", "/shop/users"], ["list", "--method", "get"]]) {
      const refused = await cli([...args, "--url", source.origin])
      assert.strictEqual(refused.code, 1, args.join(" "))
      assert.include(
        refused.stderr,
        "methods are case-sensitive and written in uppercase: use \"GET\" instead of \"get\""
      )
      assert.notInclude(refused.stderr, "Predicate refinement failure")
      assert.notInclude(refused.stderr, "Brand")
    }
  })
})

describe("route-registry history and restore", () => {
  it("prints the log newest first, filtered, walking pages up to --limit; restores, with --dry-run", async () => {
    const route = await create(target.origin, { method: "GET", path: "/hist/:id", handler: "v1" })
    for (const handler of ["v2", "v3", "v4"]) {
      const patched = await fetch(`${target.origin}/v1/routing/${route.id}`, {
        method: "PATCH",
        headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" },
        body: JSON.stringify({ handler })
      })
      assert.strictEqual(patched.status, 200)
    }
    const all = await historyOf(target.origin, `/${route.id}/history`)
    assert.deepStrictEqual(all.map((entry) => entry.action), ["update", "update", "update", "create"])

    const json = await cli(["history", "--url", target.origin, "--json", route.id], { ROUTING_TOKEN: READER })
    assert.strictEqual(json.code, 0, json.stderr)
    assert.deepStrictEqual(JSON.parse(json.stdout), all)

    // --limit 3 walks pages of at most 3: the newest three, whatever the page size.
    const limited = await cli(["history", "--url", target.origin, "--json", "--limit", "3", "--action", "update"])
    assert.deepStrictEqual(JSON.parse(limited.stdout), all.slice(0, 3))
    const byActor = await cli(["history", "--url", target.origin, "--json", "--actor", "nobody-at-all"])
    assert.deepStrictEqual(JSON.parse(byActor.stdout), [])

    const table = await cli(["history", "--url", target.origin, route.id])
    const lines = table.stdout.trimEnd().split("\n")
    assert.match(lines[0]!, /^REVISION\s+AT\s+ACTOR\s+ACTION\s+ROUTE\s+CHANGE$/)
    assert.lengthOf(lines, 5)
    assert.deepStrictEqual(lines[1]!.split(/\s{2,}/), [
      String(all[0]!.revision),
      all[0]!.at,
      all[0]!.actor ?? "-",
      "update",
      route.id,
      "handler v3 -> v4"
    ])
    assert.include(lines[4]!, "GET /hist/:id; handler v1")

    const firstRevision = String(all[3]!.revision)
    const dry = await cli(["restore", "--url", target.origin, "--dry-run", route.id, firstRevision])
    assert.strictEqual(dry.code, 0, dry.stderr)
    assert.include(dry.stdout, `restored route ${route.id} to revision ${firstRevision} (dry run, nothing changed)`)
    assert.include(dry.stdout, "handler     v1\n")
    assert.deepStrictEqual(await historyOf(target.origin, `/${route.id}/history`), all)
    assert.strictEqual((await stored(target.origin, "/hist/"))[0]!.handler, "v4")

    const restored = await cli(["restore", "--url", target.origin, route.id, firstRevision])
    assert.strictEqual(restored.code, 0, restored.stderr)
    const after = await historyOf(target.origin, `/${route.id}/history`)
    assert.deepInclude(after[0], { action: "restore", restoredFrom: all[3]!.revision })
    assert.include(restored.stdout, `(revision ${after[0]!.revision})`)
    assert.strictEqual((await stored(target.origin, "/hist/"))[0]!.handler, "v1")

    const refused = await cli(["restore", "--url", target.origin, route.id, "999999999"])
    assert.strictEqual(refused.code, 1)
    assert.include(refused.stderr, "error: 400 invalid_restore")
    const missing = await cli(["history", "--url", target.origin, "no-such-id"])
    assert.strictEqual(missing.code, 1)
    assert.include(missing.stderr, "error: 404 route_not_found")
  })
})

describe("route-registry help", () => {
  it("is plain text when piped, as are usage errors (exit 1)", async () => {
    const help = await bin(["--help"])
    assert.strictEqual(help.code, 0, help.stderr)
    assert.include(help.stdout, "USAGE")
    assert.notInclude(help.stdout, "\x1b[")
    const usage = await bin(["bogus"])
    assert.strictEqual(usage.code, 1)
    assert.include(usage.stderr, "Invalid subcommand")
    assert.notInclude(usage.stderr, "\x1b[")
  })

  it("lists the commands and their purpose first, a line each; the built-in options are one line at the end", async () => {
    for (const args of [["--help"], ["-h"], []]) {
      const help = await cli(args)
      assert.strictEqual(help.code, 0, help.stderr)
      const lines = help.stdout.split("\n")
      const commands = lines.indexOf("COMMANDS")
      assert.isAtMost(commands, 6, help.stdout)
      const listed = lines.slice(commands + 1, commands + 9).map((line) => line.trim().split(/\s{2,}/)[0])
      assert.deepStrictEqual(listed, ["export", "diff", "sync", "list", "get", "match", "history", "restore"])
      assert.isBelow(lines.length, 20)
      assert.notInclude(help.stdout, "--completions sh | bash")
      assert.include(help.stdout, "--help, --version, --log-level and --completions")
    }
    const list = await cli(["list", "--help"])
    assert.include(list.stdout, "-q text")
    assert.notInclude(list.stdout, "--wizard")
  })
})
