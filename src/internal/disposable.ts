/**
 * @internal
 */
import type { Effect, Layer } from "effect"
import { Cause, ConfigError, ManagedRuntime, Runtime } from "effect"

// A configuration error as a sentence: which variable, and what is wrong with it. A redacted value's message says
// only "<redacted>", which names nothing.
const describeConfig = (error: ConfigError.ConfigError): string => {
  const at = (path: ReadonlyArray<string>) => path.join(".")
  const detail = (message: string) => (message === "<redacted>" ? "" : ` (${message})`)
  switch (error._op) {
    case "MissingData":
      return `${at(error.path)} is not set${detail(error.message)}`
    case "InvalidData":
      return `${at(error.path)} is invalid: ${error.message}`
    case "SourceUnavailable":
    case "Unsupported":
      return `${at(error.path)}: ${error.message}`
    case "And":
      return `${describeConfig(error.left)}; ${describeConfig(error.right)}`
    case "Or":
      return `${describeConfig(error.left)}, or ${describeConfig(error.right)}`
  }
}

const describe = (error: unknown): string => {
  if (ConfigError.isConfigError(error)) return describeConfig(error)
  if (typeof error !== "object" || error === null || !("message" in error)) return String(error)
  const tag = "_tag" in error && typeof error._tag === "string" ? `${error._tag}: ` : ""
  return tag + String(error.message)
}

/**
 * What building the services failed with, as an `Error` whose message a person can act on (with the error behind it
 * as its `cause` when that is an `Error`), instead of a `FiberFailure` that Node prints as a dump of Effect's
 * internals.
 */
const startupError = (error: unknown): Error => {
  if (!Runtime.isFiberFailure(error)) return error instanceof Error ? error : new Error(String(error))
  const reason = Cause.squash(error[Runtime.FiberFailureCauseId])
  const message = `route-registry: could not build the services: ${describe(reason)}`
  return reason instanceof Error ? new Error(message, { cause: reason }) : new Error(message)
}

/**
 * Builds `layer` now and runs `make` on it, so a bad configuration fails here rather than on the first request; the
 * result gains `dispose`, which releases the layer. If `make` fails, what was built is released before rejecting with
 * an `Error` that says why.
 */
export const fromLayer = async <A extends object, R, E>(
  layer: Layer.Layer<R, E>,
  make: Effect.Effect<A, never, R>
): Promise<A & { readonly dispose: () => Promise<void> }> => {
  const runtime = ManagedRuntime.make(layer)
  try {
    return Object.assign(await runtime.runPromise(make), { dispose: () => runtime.dispose() })
  } catch (error) {
    await runtime.dispose()
    throw startupError(error)
  }
}
