import { fileURLToPath } from "node:url"
import { defineConfig } from "vitest/config"

const src = fileURLToPath(new URL("./src/", import.meta.url))

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
    include: ["test/**/*.test.ts"],
    // The PostgreSQL server of the run: DATABASE_URL, or one started for the run when it is unset.
    globalSetup: ["test/utils/globalSetup.ts"],
    setupFiles: ["test/utils/workerSetup.ts"],
    // Postgres-backed suites share one database per run; files run one after another to keep them apart.
    fileParallelism: false,
    testTimeout: 30_000,
    hookTimeout: 60_000
  }
})
