/**
 * Why internal/pg/batch.ts is hand-written rather than @effect/sql's SqlResolver: SqlResolver batches through
 * Effect's RequestResolver, which gathers the requests of one fiber's batched composition only. Fifty HTTP
 * requests creating at once are fifty fibers, and a resolver runs once for each of them.
 *
 * Run: node --import tsx bench/batching.ts (prints {"independentFibers":50,"oneFiberBatched":1} on Effect 3.22).
 */
import { Effect, Request, RequestResolver } from "effect"
interface Create extends Request.Request<number> {
  readonly _tag: "Create"
  readonly n: number
}
const Create = Request.tagged<Create>("Create")
let runs = 0
const resolver = RequestResolver.makeBatched((requests: ReadonlyArray<Create>) => {
  runs++
  return Effect.forEach(requests, (r) => Request.succeed(r, r.n), { discard: true })
})
const call = (n: number) => Effect.request(Create({ n }), resolver)
const main = Effect.gen(function*() {
  // 50 callers as 50 HTTP requests make them: each in a fiber of its own.
  const fibers = yield* Effect.forEach(Array.from({ length: 50 }, (_, i) => i), (i) => Effect.fork(call(i)))
  yield* Effect.forEach(fibers, (f) => f.await)
  const independent = runs
  runs = 0
  yield* Effect.forEach(Array.from({ length: 50 }, (_, i) => i), call, { batching: true, concurrency: "unbounded" })
  console.log(JSON.stringify({ independentFibers: independent, oneFiberBatched: runs }))
})
Effect.runPromise(main)
