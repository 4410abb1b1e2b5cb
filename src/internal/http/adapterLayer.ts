/**
 * What every adapter of the routing API does in `fromLayer`: refuse its options before building anything, then build
 * the services of the layer now and the adapter over them (`internal/disposable.ts`).
 *
 * @internal
 */
import type { Layer } from "effect"
import { Effect } from "effect"
import type { InvalidOption } from "../../InvalidOption.js"
import * as RoutingHandler from "../../RoutingHandler.js"
import * as Disposable from "../disposable.js"

/** The adapter `make` builds over the services of `layer`, with `dispose`; rejects with `InvalidOption` first. */
export const fromLayer = <A extends object, E>(
  layer: Layer.Layer<RoutingHandler.Services, E>,
  options: RoutingHandler.Options,
  make: (options: RoutingHandler.Options) => Effect.Effect<A, InvalidOption, RoutingHandler.Services>
): Promise<A & { readonly dispose: () => Promise<void> }> => {
  const invalid = RoutingHandler.checkOptions(options)
  return invalid === undefined
    ? Disposable.fromLayer(layer, Effect.orDie(make(options))).then(closingStreamsFirst)
    : Promise.reject(invalid)
}

// An adapter serving change streams ends them before its services are released: their followers resume elsewhere,
// and a server closing meanwhile does not wait for them.
const closingStreamsFirst = <A extends { readonly dispose: () => Promise<void> }>(adapter: A): A => {
  const closeStreams = (adapter as { readonly closeStreams?: () => void }).closeStreams
  if (closeStreams === undefined) return adapter
  const dispose = adapter.dispose
  return Object.assign(adapter, {
    dispose: () => {
      closeStreams()
      return dispose()
    }
  })
}
