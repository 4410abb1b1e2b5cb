/**
 * @internal
 */
import type { Effect, Layer } from "effect"
import { ManagedRuntime } from "effect"

/**
 * Builds `layer` now and runs `make` on it, so a bad configuration fails here rather than on the first request; the
 * result gains `dispose`, which releases the layer. If `make` fails, what was built is released before rethrowing.
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
    throw error
  }
}
