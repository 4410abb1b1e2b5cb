/**
 * Route ids: UUIDs version 7 in lowercase, stamped with the stores' clock so that listing by id lists in creation
 * order. `Route` re-exports them.
 *
 * @internal
 */
import { Schema } from "effect"
import * as Uuid from "uuid"

// What `uuid`'s validate, its version 7 and lowercase say together, read character by character: it runs on every
// route a store answers with, and the regular expression and `toLowerCase` cost a create about 1% (bench/core.ts).
// It names no `RouteId`: when the schema's filter called `isRouteId`, whose type names the schema's, the schema's type
// depended on itself, and a program that met it from outside typed a route's `id` as `unknown`.
const isUuidV7 = (s: string): boolean => {
  if (s.length !== 36) return false
  for (let i = 0; i < 36; i++) {
    const c = s.charCodeAt(i)
    if (i === 8 || i === 13 || i === 18 || i === 23 ? c !== 45 : !((c >= 48 && c <= 57) || (c >= 97 && c <= 102))) {
      return false
    }
  }
  const variant = s.charCodeAt(19)
  return s.charCodeAt(14) === 55 && (variant === 56 || variant === 57 || variant === 97 || variant === 98)
}

/**
 * `true` for a UUID version 7 in lowercase canonical form, the only form the service assigns.
 */
export const isRouteId = (u: unknown): u is RouteId => typeof u === "string" && isUuidV7(u)

export const RouteId = Schema.String.pipe(
  Schema.filter((s) => isUuidV7(s) || "a route id is a lowercase UUID version 7", {
    identifier: "RouteId",
    jsonSchema: { format: "uuid" },
    examples: ["01936f1e-5f1a-7cc3-9a2b-3f4e5d6c7b8a" as never]
  }),
  Schema.brand("RouteId")
)

export type RouteId = typeof RouteId.Type

// The last id's time and counter (RFC 9562 §6.2, method 1): `uuid` keeps ids of one millisecond in order only when it
// reads the clock itself, and here the time comes from Effect's Clock.
const idState = { millis: Number.NaN, seq: 0 }

/**
 * A new UUID version 7 stamped with `millis` (taken from Effect's `Clock` by the stores). Ids made in the same
 * millisecond sort in the order they were made, so listing by id is listing in creation order.
 */
export const makeRouteId = (millis: number): RouteId => {
  if (millis === idState.millis) {
    idState.seq++
  } else {
    idState.millis = millis
    // A random start leaves 2^30 ids of room in one millisecond.
    idState.seq = Math.floor(Math.random() * 2 ** 30)
  }
  return Uuid.v7({ msecs: millis, seq: idState.seq }) as RouteId
}
