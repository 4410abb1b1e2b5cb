/**
 * Runs in every test process before each of its files (a process runs several: vitest.config.ts).
 *
 * When the run's main process is gone (a Ctrl-C sent to it alone, a crash) this process loses its channel to it, and
 * ends too instead of running its files to the end with no one to report to. It ends by a signal: vitest replaces
 * `process.exit` in test processes with a function that throws. The processes it started are stopped by their own
 * listeners for the same event (spawned.ts), which run first. One listener for the process, however many files.
 *
 * @effect/vitest's `layer(...)` assigns its own `effect`, `scoped` and `layer` to the `it` every file imports (its
 * runtime, without the test services when `excludeTestServices`): each file starts with the `it` the package made.
 */
import { it } from "@effect/vitest"

const KEY = Symbol.for("route-registry-test/worker")
const state = globalThis as { [KEY]?: Pick<typeof it, "effect" | "scoped" | "layer" | "prop" | "flakyTest"> }

if (state[KEY] === undefined) {
  state[KEY] = { effect: it.effect, scoped: it.scoped, layer: it.layer, prop: it.prop, flakyTest: it.flakyTest }
  if (process.connected) process.once("disconnect", () => process.nextTick(() => process.kill(process.pid, "SIGKILL")))
}
Object.assign(it, state[KEY])
