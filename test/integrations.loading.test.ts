/**
 * Framework packages are optional peers (docs/mounting.md): a host that uses one integration never loads the others'
 * frameworks. Followed through the sources as Node loads them: every import but `import type`, which TypeScript
 * erases.
 */
import { assert, describe, it } from "@effect/vitest"
import { readFileSync } from "node:fs"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"

const SRC = fileURLToPath(new URL("../src/", import.meta.url))

// `import … from "x"` and `export … from "x"`, but not `import type … from "x"`.
const IMPORT = /^(?:import|export)\s+(?!type\s)[^;]*?from\s+"([^"]+)"|^import\s+"([^"]+)"/gm

/** The packages a module loads, itself and through the modules of this package it imports. */
const packagesLoadedBy = (entry: string): Set<string> => {
  const packages = new Set<string>()
  const visited = new Set<string>()
  const visit = (file: string) => {
    if (visited.has(file)) return
    visited.add(file)
    for (const match of readFileSync(file, "utf8").matchAll(IMPORT)) {
      const specifier = match[1] ?? match[2]!
      if (specifier.startsWith(".")) visit(join(dirname(file), specifier.replace(/\.js$/, ".ts")))
      else {packages.add(
          specifier.startsWith("@") ? specifier.split("/").slice(0, 2).join("/") : specifier.split("/")[0]!
        )}
    }
  }
  visit(join(SRC, entry))
  return packages
}

const frameworks = ["fastify", "express", "hono", "@hono/node-server"]

describe("the integrations load only their own framework", () => {
  for (
    const [entry, own] of [["Fastify.ts", []], ["Express.ts", []], ["Hono.ts", ["hono"]], ["index.ts", []]] as const
  ) {
    it(entry, () => {
      const loaded = frameworks.filter((name) => packagesLoadedBy(entry).has(name))
      assert.deepStrictEqual(loaded, [...own])
    })
  }

  // docs/observability.md: `@opentelemetry/api` is an optional peer, imported (when installed) only once a router is made.
  it("no module loads @opentelemetry/api by importing it", () => {
    for (const entry of ["index.ts", "RouterListener.ts", "RouterHttpApp.ts", "Fastify.ts", "Express.ts", "Hono.ts"]) {
      assert.isFalse(packagesLoadedBy(entry).has("@opentelemetry/api"), entry)
    }
  })

  it("the walk sees runtime imports and not type imports", () => {
    const loaded = packagesLoadedBy("internal/integrations/hono.ts")
    assert.isTrue(loaded.has("hono") && loaded.has("effect"))
    assert.isFalse(packagesLoadedBy("internal/integrations/fastify.ts").has("fastify"))
  })
})

describe("jose is loaded only by the JWT authenticator", () => {
  it("no public module loads it statically: Authenticator.jwt imports internal/auth/jwt.ts dynamically", () => {
    for (const entry of ["index.ts", "Authenticator.ts", "AdminListener.ts", "AdminWebHandler.ts", "Cli.ts"]) {
      assert.isFalse(packagesLoadedBy(entry).has("jose"), entry)
    }
    assert.isTrue(packagesLoadedBy("internal/auth/jwt.ts").has("jose"))
    assert.include(readFileSync(join(SRC, "Authenticator.ts"), "utf8"), "import(\"./internal/auth/jwt.js\")")
  })
})
