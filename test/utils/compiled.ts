/**
 * The sources the suites run as processes (src/ and examples/), compiled to JavaScript once for the run, so that each
 * process the tests start loads plain JavaScript instead of tsx compiling and resolving every module through its
 * loader thread: about 0.8 s of CPU instead of 1.8 s for each of the hundred or so processes of a run (the example
 * hosts, the command). Each file is compiled alone by esbuild, as tsx compiles it, into the same layout under
 * `node_modules/.cache/route-registry-test/r<run>/`, beside a package.json that maps the package's entry points to the
 * compiled sources (as the published one maps them to dist/) and a link to dashboard/ (the dashboard's page is read
 * relative to its module). globalSetup.ts makes it and removes it when the run ends; test/utils/spawned.ts runs it.
 */
import { build, transform } from "esbuild"
import { mkdir, readdir, readFile, rm, symlink, writeFile } from "node:fs/promises"
import { dirname, join } from "node:path"

const DIRECTORIES = ["src", "examples"]

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
 * Replaces the compiled `file` with one module holding it and all it imports, its dependencies included: the command
 * runs as a process of its own forty-odd times a run, and a bundle loads in about a third of the CPU time of the
 * hundreds of modules it imports. It stays where its compiled file was, so what it reads relative to itself (the
 * package.json above src/) is where it was.
 */
const bundle = async (root: string, out: string, file: string) => {
  await build({
    entryPoints: [join(root, file)],
    outfile: join(out, file.replace(/\.ts$/, ".js")),
    bundle: true,
    platform: "node",
    format: "esm",
    target: "node20",
    logLevel: "warning",
    // The CommonJS dependencies (pg) call require, which an ES module has only by createRequire.
    banner: {
      js:
        "import { createRequire as bundleRequire } from \"node:module\"; const require = bundleRequire(import.meta.url);"
    }
  })
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
  await bundle(root, directory, "src/bin.ts")
  return { directory, remove: () => rm(directory, { recursive: true, force: true }) }
}
