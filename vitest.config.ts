import { readdirSync, readFileSync } from "node:fs"
import { availableParallelism } from "node:os"
import { join, relative } from "node:path"
import { fileURLToPath } from "node:url"
import { configDefaults, defineConfig } from "vitest/config"
import type { TestSpecification } from "vitest/node"
import { BaseSequencer } from "vitest/node"

const root = fileURLToPath(new URL(".", import.meta.url))
const src = fileURLToPath(new URL("./src/", import.meta.url))

// What a file imports to start a process: node's own module, or the helpers that start an example, a browser or a
// PostgreSQL server of the test's own (those that stop, kill or fail over a server never touch the run's).
const SPAWNS = /from "(node:child_process|\.{1,2}\/(\.\.\/)*utils\/(spawned|browser|EmbeddedServer|PgCluster)\.js)"/

const testFiles = (dir: string): Array<string> =>
  readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name)
    if (entry.isDirectory()) return entry.name === "fixtures" ? [] : testFiles(path)
    return entry.name.endsWith(".test.ts") ? [path] : []
  })

/**
 * The suites that run whole processes (npm, tsx, vitest, linters, a browser, the example servers, PostgreSQL servers)
 * or hold the machine busy for seconds (the soak): the process files. A file that imports `node:child_process`,
 * `utils/spawned.ts`, `utils/browser.ts`, `utils/EmbeddedServer.ts` or `utils/PgCluster.ts` is one without a word; one
 * that loads the machine without spawning is named here. Every other file runs beside them.
 */
const PROCESS = [
  ...new Set([
    "test/reliability/soak.test.ts",
    // Through bench/failover.ts: PostgreSQL servers and three `npm start` hosts.
    "test/reliability/failover.test.ts",
    ...testFiles("test").filter((file) => SPAWNS.test(readFileSync(file, "utf8")))
  ])
].sort()

/**
 * Within a group, the process files start first, then the rest, each part as vitest orders it (the longest of the
 * last run first): a process file mostly waits on its children, so the unit files fill the cores meanwhile instead of
 * the longest waits coming last.
 */
class ProcessFirst extends BaseSequencer {
  override async sort(files: Array<TestSpecification>) {
    const sorted = await super.sort(files)
    const first = (spec: TestSpecification) => (PROCESS.includes(relative(root, spec.moduleId)) ? 0 : 1)
    return sorted.sort((a, b) => first(a) - first(b))
  }
}

// A bound for a hung test, far above what any takes on a loaded machine (a property run of 66 s), and above the sum
// of the deadlines any process-level test waits for (spawned.ts: 90 s for a process to start): a loaded machine makes
// a process slow to start, never wrong. A test of its own sets none lower.
const TIMEOUT = 240_000

// Most tests wait on sockets, timers and PostgreSQL rather than on a core: one process more than there are cores (two
// more leave the tests that wait on a deadline less room on a loaded machine: docs/development.md).
const WORKERS = availableParallelism() + 1

export default defineConfig({
  resolve: {
    // Tests import the package by its public name, as a host would; it resolves to the sources.
    alias: [
      { find: /^route-registry$/, replacement: `${src}index.ts` },
      // The framework integrations' subpaths are lowercase, as hosts write them; their modules are PascalCase.
      { find: /^route-registry\/fastify$/, replacement: `${src}Fastify.ts` },
      { find: /^route-registry\/express$/, replacement: `${src}Express.ts` },
      { find: /^route-registry\/hono$/, replacement: `${src}Hono.ts` },
      { find: /^route-registry\/(.*)$/, replacement: `${src}$1.ts` }
    ]
  },
  test: {
    // The PostgreSQL server of the run: DATABASE_URL, or one started for the run when it is unset. Each test process
    // works in a database of its own on it (test/utils/TestDatabase.ts), so files run in parallel.
    globalSetup: ["test/utils/globalSetup.ts"],
    setupFiles: ["test/utils/workerSetup.ts"],
    fileParallelism: true,
    // The process files start first (ProcessFirst).
    sequence: { sequencer: ProcessFirst },
    // A test process runs one file after another, loading the sources and their dependencies once (isolating each file
    // in a process of its own loads them again for each: most of the CPU of a small file). The pool runs the files of
    // one project at a time when it does not isolate them: the unit and process files are one project, so that the
    // unit files fill the cores while the process files wait on their children.
    poolOptions: { forks: { isolate: false } },
    maxWorkers: WORKERS,
    // The pool stops a process it finds idle above its minimum, and a file handed to it meanwhile fails ("Terminating
    // worker thread"): it keeps them all.
    minWorkers: WORKERS,
    testTimeout: TIMEOUT,
    hookTimeout: TIMEOUT,
    projects: [
      {
        extends: true,
        test: { name: "suite", include: ["test/**/*.test.ts"], exclude: configDefaults.exclude }
      }
    ]
  }
})
