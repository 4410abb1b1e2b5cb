import { availableParallelism } from "node:os"
import { basename } from "node:path"
import { fileURLToPath } from "node:url"
import { configDefaults, defineConfig } from "vitest/config"

const src = fileURLToPath(new URL("./src/", import.meta.url))

/**
 * The suites that run whole processes (npm, tsx, vitest, linters, the example servers) or load the machine for
 * seconds (the soak): the "process" project, which runs after the fast tests so that neither starves the other. A
 * new test file belongs here when it spawns a process or holds the machine busy; every other file is "unit".
 */
const PROCESS = [
  "test/pack.test.ts",
  "test/readme.test.ts",
  "test/RoutingApi.lint.test.ts",
  "test/Cli.test.ts",
  "test/PgRouteRepository.log.test.ts",
  "test/examples/server.test.ts",
  "test/examples/direct.test.ts",
  "test/transport.test.ts",
  "test/reliability/interrupted.test.ts",
  "test/reliability/races.test.ts",
  "test/reliability/shutdown.test.ts",
  "test/reliability/soak.test.ts"
]

/**
 * The suites that stop and start the PostgreSQL server: each runs alone, last, when no other test uses the server.
 */
const RESTARTING = ["test/reliability/faults.test.ts", "test/reliability/processes.test.ts"]

// Above the sum of the deadlines any process-level test waits for (spawned.ts: 90 s for a process to start): a loaded
// machine makes a process slow to start, never wrong. Their tests set no timeout of their own.
const PROCESS_TIMEOUT = 240_000

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
    // Most tests wait on sockets, timers and PostgreSQL rather than on a core: one process more than there are cores.
    maxWorkers: availableParallelism() + 1,
    // A bound for a hung test, far above what any takes on a loaded machine (a property run of 66 s, 1,050 creates
    // one after another on PostgreSQL): a test of its own sets none lower.
    testTimeout: 180_000,
    hookTimeout: 180_000,
    projects: [
      {
        extends: true,
        test: {
          name: "unit",
          include: ["test/**/*.test.ts"],
          exclude: [...configDefaults.exclude, ...PROCESS, ...RESTARTING]
        }
      },
      {
        extends: true,
        test: {
          name: "process",
          include: PROCESS,
          sequence: { groupOrder: 1 },
          testTimeout: PROCESS_TIMEOUT,
          hookTimeout: PROCESS_TIMEOUT
        }
      },
      // Groups run one after another, and a group of one file runs alone.
      ...RESTARTING.map((file, i) => ({
        extends: true as const,
        test: {
          name: `restarting: ${basename(file, ".test.ts")}`,
          include: [file],
          sequence: { groupOrder: 2 + i },
          testTimeout: PROCESS_TIMEOUT,
          hookTimeout: PROCESS_TIMEOUT
        }
      }))
    ]
  }
})
