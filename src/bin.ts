#!/usr/bin/env node
/**
 * The `route-registry` executable: runs the command of `Cli` on Node and exits with its `Cli.exitCode` (a failure is
 * already printed). Its Effect packages are peers of the library: npm installs them with it, and where a package
 * manager did not, the host is told what to install instead of shown a stack trace.
 *
 * @since 0.3.0
 */
import { createRequire } from "node:module"

const PEERS = ["@effect/cli", "@effect/platform-node"] as const

const modules = await Promise.all([
  import("effect/Effect"),
  import("@effect/platform-node/NodeContext"),
  import("@effect/platform-node/NodeRuntime"),
  import("./Cli.js")
]).catch((error: unknown) => {
  const message = error instanceof Error ? error.message : ""
  if (!PEERS.some((peer) => message.includes(`'${peer}'`))) throw error
  const manifest = createRequire(import.meta.url)("../package.json") as {
    readonly peerDependencies: Record<string, string>
  }
  const specs = PEERS.map((peer) => `${peer}@${manifest.peerDependencies[peer]}`).join(" ")
  console.error(`error: the route-registry command needs ${PEERS.join(" and ")}: npm install ${specs}`)
  return process.exit(1)
})

const [Effect, NodeContext, NodeRuntime, Cli] = modules
Cli.run(process.argv).pipe(
  Effect.provide(NodeContext.layer),
  NodeRuntime.runMain({ disableErrorReporting: true, teardown: (exit, onExit) => onExit(Cli.exitCode(exit)) })
)
