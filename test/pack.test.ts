/**
 * The package as a host receives it: `npm pack` (which builds dist/ through `prepare`, unless it is built already),
 * the tarball installed into a fresh application beside the Effect peers, and its entry points imported and served
 * from there, not from src/; and its `route-registry` command run there with npx.
 */
import { assert, describe, it, onTestFinished } from "@effect/vitest"
import { execFile } from "node:child_process"
import { mkdir, mkdtemp, readdir, readFile, rm, stat, symlink, writeFile } from "node:fs/promises"
import { createRequire } from "node:module"
import { tmpdir } from "node:os"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"
import { promisify } from "node:util"

const ROOT = fileURLToPath(new URL("..", import.meta.url))
const exec = promisify(execFile)

const npm = (cwd: string, args: ReadonlyArray<string>) =>
  exec("npm", [...args, "--no-audit", "--no-fund"], { cwd, maxBuffer: 16 * 1024 * 1024 })

// The application: imports every integration by its public name, serves one create, and prints what it saw.
const APP = `
import * as Http from "node:http"
import { Layer, Redacted } from "effect"
import { Authenticator, RouteRepository } from "route-registry"
import * as AdminListener from "route-registry/AdminListener"
import * as PgRouteRepository from "route-registry/PgRouteRepository"

const services = Layer.merge(
  RouteRepository.layerMemory,
  Authenticator.layerStaticTokens([{ token: Redacted.make("t"), scopes: ["routes:read", "routes:write"], id: "a" }])
)
const listener = await AdminListener.fromLayer(services)
const server = Http.createServer(listener)
await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve))
const response = await fetch(\`http://127.0.0.1:\${server.address().port}/v1/routing\`, {
  method: "POST",
  headers: { authorization: "Bearer t", "content-type": "application/json" },
  body: JSON.stringify({ method: "GET", path: "/packed", handler: "h" })
})
console.log(JSON.stringify({
  status: response.status,
  route: await response.json(),
  pgLayer: typeof PgRouteRepository.layer,
  resolved: import.meta.resolve("route-registry")
}))
server.close()
await listener.dispose()
`

// A fresh Fastify, Express and Hono app each mounting the registry by its public subpath: a route created through
// the API serves at once with the framework's own handler; prints what each answered.
const FRAMEWORKS_APP = `
import * as Http from "node:http"
import { Redacted } from "effect"
import * as Authenticator from "route-registry/Authenticator"
import fastifyRegistry from "route-registry/fastify"
import { routeRegistry as expressRegistry } from "route-registry/express"
import { routeRegistry as honoRegistry } from "route-registry/hono"
import Fastify from "fastify"
import express from "express"
import { Hono } from "hono"
import { getRequestListener } from "@hono/node-server"

const authenticator = Authenticator.layerStaticTokens([
  { token: Redacted.make("t"), scopes: ["routes:read", "routes:write"], id: "a" }
])
const listen = (server) => new Promise((resolve) => server.listen(0, "127.0.0.1", () => resolve(server)))
const exercise = async (origin) => {
  const created = await fetch(origin + "/v1/routing", {
    method: "POST",
    headers: { authorization: "Bearer t", "content-type": "application/json" },
    body: JSON.stringify({ method: "GET", path: "/hello/:name", handler: "hello" })
  })
  const served = await fetch(origin + "/hello/packed")
  return [created.status, await served.text()]
}
const seen = {}

const fastify = Fastify()
await fastify.register(fastifyRegistry, { authenticator, handlers: { hello: async (request) => "hi " + request.params.name } })
await fastify.listen({ port: 0, host: "127.0.0.1" })
seen.fastify = await exercise("http://127.0.0.1:" + fastify.server.address().port)
await fastify.close()

const app = express()
const mounted = expressRegistry({ authenticator, handlers: { hello: (req, res) => void res.send("hi " + req.params.name) } })
app.use(mounted)
const server = await listen(Http.createServer(app))
seen.express = await exercise("http://127.0.0.1:" + server.address().port)
server.close()
await mounted.close()

const registry = honoRegistry({ authenticator, handlers: { hello: (c) => c.text("hi " + c.req.param("name")) } })
const hono = new Hono().route("/", registry)
const honoServer = await listen(Http.createServer(getRequestListener(hono.fetch, { overrideGlobalObjects: false })))
seen.hono = await exercise("http://127.0.0.1:" + honoServer.address().port)
honoServer.close()
await registry.close()

console.log(JSON.stringify(seen))
`

// The targets of every `exports` entry ("types" and "default"), relative to the package.
const exportTargets = (exports: Record<string, string | Record<string, string>>): Array<string> =>
  Object.values(exports).flatMap((target) => typeof target === "string" ? [target] : Object.values(target))

// The peers come from this repository's node_modules, linked: the test needs the npm registry for the package's
// own dependencies at most, and the application holds one copy of `effect`.
const linkPeers = (app: string, peers: Record<string, string>) =>
  Promise.all(
    Object.keys(peers).map(async (name) => {
      const link = join(app, "node_modules", name)
      await mkdir(dirname(link), { recursive: true })
      await symlink(join(ROOT, "node_modules", name), link, "dir")
    })
  )

/**
 * `true` when dist/ was built after the last change to the sources it is built from (as `npm start`'s prestart
 * decides): `npm pack` then packs it as it is, instead of `prepare` building the same files again (CI builds dist/
 * just before the tests; a build is most of this test's CPU).
 */
const builtFromSources = async (): Promise<boolean> => {
  const built = await stat(join(ROOT, "dist", "index.js")).then((stats) => stats.mtimeMs, () => 0)
  for (const dir of ["src", "dashboard/src"]) {
    for (const file of await readdir(join(ROOT, dir), { recursive: true })) {
      if ((await stat(join(ROOT, dir, file))).mtimeMs > built) return false
    }
  }
  return built > 0
}

describe("the packed package", () => {
  it("installs from its tarball and serves from dist/ in a fresh application", async () => {
    const temp = await mkdtemp(join(tmpdir(), "route-registry-pack-"))
    onTestFinished(() => rm(temp, { recursive: true, force: true }))
    const scripts = await builtFromSources() ? ["--ignore-scripts"] : []
    const packed = await npm(ROOT, ["pack", "--json", "--pack-destination", temp, ...scripts])
    const tarball = join(temp, JSON.parse(packed.stdout)[0].filename)
    const app = join(temp, "app")
    await mkdir(app)
    await writeFile(join(app, "package.json"), JSON.stringify({ name: "app", private: true, type: "module" }))
    // Peers are linked below rather than installed, so npm must not try to install them.
    await npm(app, ["install", "--prefer-offline", "--legacy-peer-deps", "--ignore-scripts", tarball])
    const installed = join(app, "node_modules", "route-registry")
    const manifest = JSON.parse(await readFile(join(installed, "package.json"), "utf8"))
    // The frameworks are optional peers; the Hono app also takes the Node server of Hono's own.
    await linkPeers(app, { ...manifest.peerDependencies, "@hono/node-server": "" })

    // The public modules by their names since 0.4.0: the admin API's adapters and the router's forms.
    for (const module of ["AdminListener", "AdminWebHandler", "AdminHttpApp", "RouterListener", "RouterHttpApp"]) {
      assert.property(manifest.exports, `./${module}`)
    }
    for (const target of exportTargets(manifest.exports)) {
      await readFile(join(installed, target)).catch(() => assert.fail(`the package lacks ${target}`))
    }
    await readFile(join(installed, "LICENSE")).catch(() => assert.fail("the package lacks its LICENSE"))

    await writeFile(join(app, "main.mjs"), APP)
    await writeFile(join(app, "frameworks.mjs"), FRAMEWORKS_APP)
    // Both applications in one process, one after the other, each printing its line: a process loads the package
    // and Effect, most of what each costs.
    const both = await exec(process.execPath, [
      "--input-type=module",
      "--eval",
      "await import(\"./main.mjs\"); await import(\"./frameworks.mjs\")"
    ], { cwd: app })
    const [ran, frameworks, ...more] = both.stdout.trim().split("\n").map((line) => JSON.parse(line))
    assert.deepStrictEqual(more, [])
    assert.strictEqual(ran.status, 201)
    assert.strictEqual(ran.route.path, "/packed")
    assert.strictEqual(ran.pgLayer, "function")
    assert.strictEqual(fileURLToPath(ran.resolved), join(installed, "dist", "index.js"))
    assert.deepStrictEqual(frameworks, {
      fastify: [201, "hi packed"],
      express: [201, "hi packed"],
      hono: [201, "hi packed"]
    })

    // The package's command, as the host's scripts run it.
    const help = await exec("npx", ["--no-install", "route-registry", "--help"], { cwd: app })
    for (const command of ["export", "diff", "sync", "list", "get"]) assert.include(help.stdout, command)
  })
})

// Node's own version ranges, as npm checks a package's `engines` (npm warns EBADENGINE, or refuses with engine-strict).
const Semver = createRequire(import.meta.url)("semver") as {
  readonly satisfies: (version: string, range: string) => boolean
  readonly minVersion: (range: string) => { readonly version: string } | null
}

interface Locked {
  readonly version?: string
  readonly dev?: boolean
  readonly engines?: { readonly node?: string } | ReadonlyArray<string>
}

describe("the Node versions the package and the clone state", () => {
  it("every locked package accepts them: no EBADENGINE on a fresh clone or in a host's install", async () => {
    const manifest = JSON.parse(await readFile(join(ROOT, "package.json"), "utf8"))
    const lock = JSON.parse(await readFile(join(ROOT, "package-lock.json"), "utf8"))
    const readme = await readFile(join(ROOT, "README.md"), "utf8")
    const development = await readFile(join(ROOT, "docs/development.md"), "utf8")
    // The clone (npm install, npm test, npm start) needs what README and docs/development.md say; a host installing the
    // package needs what package.json's engines say, for the packages it installs (the dependencies, not the dev tools).
    const clone = /On a fresh clone, with Node (\d+(?:\.\d+)*) or later/.exec(readme)?.[1]
    assert.isDefined(clone, "README states the Node version of a fresh clone")
    assert.include(development, `On a fresh clone, with Node ${clone} or later`)
    const cloneVersion = Semver.minVersion(clone!)!.version
    const hostVersion = Semver.minVersion(manifest.engines.node)!.version
    assert.isTrue(Semver.satisfies(cloneVersion, manifest.engines.node))
    const refused: Array<string> = []
    for (const [path, entry] of Object.entries(lock.packages as Record<string, Locked>)) {
      const range = Array.isArray(entry.engines) ? undefined : (entry.engines as { node?: string } | undefined)?.node
      if (path === "" || range === undefined) continue
      for (const [who, version] of [["a clone", cloneVersion], ["this machine", process.versions.node]] as const) {
        if (!Semver.satisfies(version, range)) {
          refused.push(`${path}@${entry.version} needs node ${range} (${who}: ${version})`)
        }
      }
      if (entry.dev !== true && !Semver.satisfies(hostVersion, range)) {
        refused.push(`${path}@${entry.version} needs node ${range} (a host: ${hostVersion})`)
      }
    }
    assert.deepStrictEqual(refused, [])
  })
})
