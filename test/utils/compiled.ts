/**
 * The sources the suites run as processes (src/, examples/ and the fixtures started as hosts), compiled to JavaScript once for the run, so that each
 * process the tests start loads plain JavaScript instead of tsx compiling and resolving every module through its
 * loader thread: about 0.8 s of CPU instead of 1.8 s for each of the hundred or so processes of a run (the example
 * hosts, the command). Each file is compiled alone by esbuild, as tsx compiles it, into the same layout under
 * `node_modules/.cache/route-registry-test/r<run>/`, beside a package.json that maps the package's entry points to the
 * compiled sources (as the published one maps them to dist/) and a link to dashboard/ (the dashboard's page is read
 * relative to its module); the two entry points started most often are then bundled in place (`bundle`).
 * globalSetup.ts makes it and removes it when the run ends; test/utils/spawned.ts runs it.
 */
import { build, type Plugin, transform } from "esbuild"
import { mkdir, readdir, readFile, rm, symlink, writeFile } from "node:fs/promises"
import { dirname, join } from "node:path"
import { pathToFileURL } from "node:url"

const DIRECTORIES = ["src", "examples"]

/** The fixtures the suites start as processes, a dozen times a run each: the OpenTelemetry hosts. */
const FIXTURES = ["test/fixtures/otelHost.ts"]

/** The entry points the suites start most often, bundled (see `bundle`). */
const BUNDLED = ["src/bin.js", "examples/server.js"]

type Exports = Record<string, string | { readonly types: string; readonly default: string }>

const compileFile = async (root: string, out: string, file: string) => {
  const source = join(root, file)
  const { code } = await transform(await readFile(source, "utf8"), {
    loader: "ts",
    format: "esm",
    target: "node20",
    sourcefile: source
  })
  const target = join(out, file.replace(/\.ts$/, ".js"))
  await mkdir(dirname(target), { recursive: true })
  await writeFile(target, code)
}

/**
 * Each module keeps its own `import.meta.url` in a bundle, as it had when loaded alone: what it reads relative to
 * itself (the dashboard's page, the package.json above src/) stays where it was, and the entry's is the bundle's own.
 */
const ownUrls: Plugin = {
  name: "own-import-meta-url",
  setup: (build) =>
    build.onLoad({ filter: /\.[cm]?js$/ }, async ({ path }) => {
      const contents = await readFile(path, "utf8")
      if (!contents.includes("import.meta.url")) return undefined
      return {
        contents: contents.replaceAll("import.meta.url", JSON.stringify(pathToFileURL(path).href)),
        loader: "js"
      }
    })
}

/**
 * Replaces the compiled `file` with one module holding it and all it imports, the dependencies included: the command
 * and `npm start`'s host run as processes of their own some hundred times a run, and a bundle loads in about 0.5 s
 * of CPU where the hundreds of modules it holds take 1.6 s.
 */
const bundle = async (out: string, file: string) => {
  const path = join(out, file)
  const { outputFiles } = await build({
    entryPoints: [path],
    write: false,
    outfile: path,
    allowOverwrite: true,
    bundle: true,
    platform: "node",
    format: "esm",
    target: "node20",
    logLevel: "warning",
    plugins: [ownUrls],
    // The CommonJS dependencies (pg) call require, which an ES module has only by createRequire.
    banner: {
      js:
        "import { createRequire as bundleRequire } from \"node:module\"; const require = bundleRequire(import.meta.url);"
    }
  })
  await writeFile(path, outputFiles[0]!.contents)
}

/**
 * Compiles src/ and examples/ of `root` into a directory of the run's own; `remove` deletes it. Removes first the
 * directories of runs no longer running (`alive` tells by process id), which a killed run leaves.
 */
export const compile = async (
  root: string,
  alive: (pid: number) => boolean
): Promise<{ readonly directory: string; readonly remove: () => Promise<void> }> => {
  const runs = join(root, "node_modules", ".cache", "route-registry-test")
  await mkdir(runs, { recursive: true })
  for (const run of await readdir(runs)) {
    if (!alive(parseInt(run.slice(1), 36))) await rm(join(runs, run), { recursive: true, force: true })
  }
  const directory = join(runs, `r${process.pid.toString(36)}`)
  await rm(directory, { recursive: true, force: true })
  for (const dir of DIRECTORIES) {
    const files = (await readdir(join(root, dir), { recursive: true })).filter((file) => file.endsWith(".ts"))
    await Promise.all(files.map((file) => compileFile(root, directory, join(dir, file))))
  }
  await Promise.all(FIXTURES.map((file) => compileFile(root, directory, file)))
  const manifest = JSON.parse(await readFile(join(root, "package.json"), "utf8")) as {
    readonly name: string
    readonly version: string
    readonly exports: Exports
  }
  const exports = Object.fromEntries(
    Object.entries(manifest.exports).map(([entry, target]) => [
      entry,
      typeof target === "string" ? target : target.default.replace(/^\.\/dist\//, "./src/")
    ])
  )
  await writeFile(
    join(directory, "package.json"),
    JSON.stringify({ name: manifest.name, version: manifest.version, type: "module", exports })
  )
  await symlink(join(root, "dashboard"), join(directory, "dashboard"), "dir")
  await Promise.all(BUNDLED.map((file) => bundle(directory, file)))
  return { directory, remove: () => rm(directory, { recursive: true, force: true }) }
}
