/**
 * The OpenAPI document passes both common linters with no error and no warning: Redocly's recommended rules and
 * Spectral's `spectral:oas` (the ruleset is .spectral.yaml at the root). Each runs on the document written to a
 * temporary file, as a CI job would run it.
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { execFile } from "node:child_process"
import { mkdtemp, rm, writeFile } from "node:fs/promises"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import * as RoutingApi from "route-registry/RoutingApi"

const root = fileURLToPath(new URL("..", import.meta.url))
const bin = (name: string) => join(root, "node_modules", ".bin", name)

const run = (command: string, args: ReadonlyArray<string>): Promise<string> =>
  new Promise((resolve) => {
    execFile(command, args, {
      cwd: root,
      env: { ...process.env, REDOCLY_TELEMETRY: "off", REDOCLY_SUPPRESS_UPDATE_NOTICE: "true", NO_COLOR: "1" }
    }, (_error, stdout) => resolve(stdout)) // both exit non-zero on problems: the report says which
  })

interface Finding {
  readonly rule: string
  readonly where: string
  readonly message: string
}

const redocly = async (file: string): Promise<Array<Finding>> => {
  const report = JSON.parse(await run(bin("redocly"), ["lint", "--extends=recommended", "--format=json", file]))
  return report.problems.map((p: any) => ({
    rule: p.ruleId,
    where: p.location?.[0]?.pointer ?? "",
    message: p.message
  }))
}

const spectral = async (file: string): Promise<Array<Finding>> => {
  const report = JSON.parse(
    await run(bin("spectral"), ["lint", "--quiet", "-r", join(root, ".spectral.yaml"), "-f", "json", file])
  )
  return report.map((p: any) => ({ rule: p.code, where: p.path.join("/"), message: p.message }))
}

let dir: string
const write = async (name: string, document: unknown) => {
  const file = join(dir, name)
  await writeFile(file, JSON.stringify(document, null, 2))
  return file
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "route-registry-openapi-"))
})
afterAll(() => rm(dir, { recursive: true, force: true }))

describe("the OpenAPI document, linted", () => {
  it("Redocly (recommended rules): no error, no warning", async () => {
    assert.deepStrictEqual(await redocly(await write("redocly.json", RoutingApi.openApi)), [])
  })

  it("Spectral (spectral:oas): no error, no warning", async () => {
    assert.deepStrictEqual(await spectral(await write("spectral.json", RoutingApi.openApi)), [])
  })

  it("lints the fleet's operations with the rest: they are in the document linted", () => {
    const fleet = (RoutingApi.openApi as any).paths["/v1/routing/followers"]
    assert.deepStrictEqual(Object.keys(fleet), ["get", "post"])
    assert.includeMembers(Object.keys(fleet.post.responses), ["204", "400", "404", "413", "415", "429"])
  })

  // The two above pass only if the linters run and report: a document missing its license and servers must fail.
  it("both linters report a document that breaks their rules", async () => {
    const { info: { license: _, ...info }, servers: __, ...rest } = RoutingApi.openApi as any
    const file = await write("broken.json", { ...rest, info })
    assert.includeMembers((await redocly(file)).map((f) => f.rule), ["info-license", "no-empty-servers"])
    assert.includeMembers((await spectral(file)).map((f) => f.rule), ["oas3-api-servers"])
  })
})
