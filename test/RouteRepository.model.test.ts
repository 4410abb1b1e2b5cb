/**
 * Model-based test of the stores: random sequences of create, findById, update, remove and list run against each
 * store and against a plain model (a Map and the conflict rule of docs/http-api.md, "Route rules"), which must agree at every step:
 * results, error tags, conflicting ids, pages. Small alphabets make conflicts, no-ops, stale preconditions and filter
 * hits frequent.
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { Clock, Effect, Either, Layer, ManagedRuntime, Option } from "effect"
import * as fc from "fast-check"
import * as Route from "route-registry/Route"
import * as RouteRepository from "route-registry/RouteRepository"
import { type Operation, type Preconditioned, repositoryOperations } from "./utils/arbitraries.js"
import * as TestDatabase from "./utils/TestDatabase.js"

// ---------------------------------------------------------------------------------------------------------------
// The model
// ---------------------------------------------------------------------------------------------------------------

/** A route as both sides report it, so results compare as plain data. */
interface Plain {
  readonly id: string
  readonly method: string
  readonly path: string
  readonly middleware: ReadonlyArray<Route.MiddlewareEntry>
  readonly handler: string
  readonly createdAt: string
  readonly revision: number
}

const plain = (route: Route.StoredRoute): Plain => ({
  id: route.id,
  method: route.method,
  path: route.path,
  middleware: [...route.middleware],
  handler: route.handler,
  createdAt: route.createdAt.toISOString(),
  revision: route.revision
})

/** An error as plain data: its tag and the fields a caller acts on. */
const plainError = (error: { readonly _tag: string }): Record<string, unknown> => {
  const { _tag, ...fields } = error as unknown as Record<string, unknown>
  const { cause: _, ...rest } = fields
  return { _tag, ...rest }
}

// The conflict rule, written here from the contract: the shape is the path with every parameter name removed.
const shape = (path: string) => path.split("/").map((segment) => segment.startsWith(":") ? ":" : segment).join("/")

const sameNames = (a: ReadonlyArray<string>, b: ReadonlyArray<string>) =>
  a.length === b.length && a.every((name, i) => name === b[i])

class Model {
  readonly routes = new Map<string, Plain>()
  /** Every id a create returned, removed routes included: the targets of later operations and cursors. */
  readonly known: Array<string> = []
  /** The highest revision seen: every change must go past it. */
  latest = 0

  holder(method: string, path: string, except?: string): Plain | undefined {
    for (const route of this.routes.values()) {
      if (route.id !== except && route.method === method && shape(route.path) === shape(path)) return route
    }
    return undefined
  }

  gate(id: string, precondition: RouteRepository.Precondition | undefined) {
    const route = this.routes.get(id)
    if (route === undefined) return Either.left({ _tag: "RouteNotFound", id })
    if (precondition?.ifMatch !== undefined && !precondition.ifMatch.includes(route.revision)) {
      return Either.left({ _tag: "PreconditionFailed", id, revision: route.revision })
    }
    return Either.right(route)
  }

  page(query: RouteRepository.ListQuery) {
    const selected = [...this.routes.values()]
      .filter((route) =>
        (query.after === undefined || route.id > query.after) &&
        (query.method === undefined || route.method === query.method) &&
        (query.handler === undefined || route.handler === query.handler) &&
        (query.middleware === undefined ||
          route.middleware.map(Route.middlewareName).includes(query.middleware as Route.MiddlewareName)) &&
        (query.pathPrefix === undefined || route.path.startsWith(query.pathPrefix))
      )
      .sort((a, b) => a.id < b.id ? -1 : a.id > b.id ? 1 : 0)
    return { items: selected.slice(0, query.limit), hasMore: selected.length > query.limit }
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Running a sequence
// ---------------------------------------------------------------------------------------------------------------

// An id no store ever assigns (its time is 1970) and a string that is no id at all, each one target in 16.
const NEVER = Route.makeRouteId(0)
const targetOf = (model: Model, target: number) =>
  target % 16 === 15 ? "not-an-id" : target % 16 === 14 || model.known.length === 0
    ? NEVER
    : model.known[target % model.known.length]!

const preconditionOf = (model: Model, id: string, kind: Preconditioned["precondition"]) => {
  const current = model.routes.get(id)?.revision ?? 1
  switch (kind) {
    case "none":
      return undefined
    case "current":
      return { ifMatch: [current] }
    case "stale":
      return { ifMatch: [current - 1] }
    case "empty":
      return { ifMatch: [] }
    case "several":
      return { ifMatch: [current + 1, current, current - 1] }
  }
}

const START = Date.parse("2026-11-21T09:30:12.345Z")

/** A clock that reads `time.now`, so the model knows every createdAt (TestClock's setTime costs milliseconds). */
const steppedClock = (time: { now: number }): Clock.Clock => {
  const live = Clock.make()
  return {
    [Clock.ClockTypeId]: Clock.ClockTypeId,
    unsafeCurrentTimeMillis: () => time.now,
    currentTimeMillis: Effect.sync(() => time.now),
    unsafeCurrentTimeNanos: () => BigInt(time.now) * 1_000_000n,
    currentTimeNanos: Effect.sync(() => BigInt(time.now) * 1_000_000n),
    sleep: (duration) => live.sleep(duration)
  }
}

/** Runs the operations on the store in context and on a fresh model, asserting at each step that they agree. */
const agree = (operations: ReadonlyArray<Operation>) => {
  const time = { now: START }
  return Effect.gen(function*() {
    const repo = yield* RouteRepository.RouteRepository
    const memoryRead = Option.getOrUndefined(yield* Effect.serviceOption(RouteRepository.MemoryRead))
    const model = new Model()
    const steps: Array<string> = []
    const check = (actual: unknown, expected: unknown) =>
      assert.deepStrictEqual(actual, expected, `after:\n${steps.join("\n")}`)
    // A change must take a revision past every one seen; it becomes the latest.
    const changed = (route: Plain) => {
      assert.isAbove(route.revision, model.latest, `after:\n${steps.join("\n")}`)
      model.latest = route.revision
    }
    for (const [step, operation] of operations.entries()) {
      time.now = START + step
      switch (operation.kind) {
        case "create": {
          const { kind: _, ...input } = operation
          steps.push(`create ${JSON.stringify(input)}`)
          const result = yield* Effect.either(repo.create(input as Route.CreateRoute))
          const holder = model.holder(input.method, input.path)
          if (holder !== undefined) {
            check(
              Either.map(Either.mapLeft(result, plainError), plain),
              Either.left({
                _tag: "RouteConflict",
                method: input.method,
                path: input.path,
                conflictingRouteId: holder.id
              })
            )
            break
          }
          if (Either.isLeft(result)) return assert.fail(`create failed: ${JSON.stringify(plainError(result.left))}`)
          const created = plain(result.right)
          assert.isTrue(Route.isRouteId(created.id) && !model.known.includes(created.id), created.id)
          check(created, {
            id: created.id,
            ...input,
            middleware: [...input.middleware],
            createdAt: new Date(START + step).toISOString(),
            revision: created.revision
          })
          changed(created)
          model.routes.set(created.id, created)
          model.known.push(created.id)
          break
        }
        case "findById": {
          const id = targetOf(model, operation.target)
          steps.push(`findById ${id}`)
          const result = yield* Effect.either(repo.findById(id))
          const expected = model.routes.get(id)
          check(
            Either.map(Either.mapLeft(result, plainError), plain),
            expected === undefined ? Either.left({ _tag: "RouteNotFound", id }) : Either.right(expected)
          )
          if (memoryRead !== undefined) {
            const found = memoryRead.unsafeFindById(id)
            check(found === undefined ? undefined : plain(found), expected)
          }
          break
        }
        case "update": {
          const id = targetOf(model, operation.target)
          const precondition = preconditionOf(model, id, operation.precondition)
          steps.push(`update ${id} ${JSON.stringify(operation.patch)} ${JSON.stringify(precondition)}`)
          const result = yield* Effect.either(repo.update(id, operation.patch as Route.RoutePatch, precondition))
          const actual = Either.map(Either.mapLeft(result, plainError), plain)
          const gate = model.gate(id, precondition)
          if (Either.isLeft(gate)) {
            check(actual, gate)
            break
          }
          const current = gate.right
          const { patch } = operation
          const next = {
            ...current,
            method: patch.method ?? current.method,
            path: patch.path ?? current.path,
            middleware: patch.middleware === undefined ? current.middleware : [...patch.middleware],
            handler: patch.handler ?? current.handler
          }
          const same = next.method === current.method && next.path === current.path &&
            sameNames(next.middleware as ReadonlyArray<string>, current.middleware as ReadonlyArray<string>) &&
            next.handler === current.handler
          const holder = same ? undefined : model.holder(next.method, next.path, id)
          if (same) check(actual, Either.right(current))
          else if (holder !== undefined) {
            check(
              actual,
              Either.left({
                _tag: "RouteConflict",
                method: next.method,
                path: next.path,
                conflictingRouteId: holder.id
              })
            )
          } else {
            if (Either.isLeft(actual)) return assert.fail(`update failed: ${JSON.stringify(actual.left)}`)
            check(actual.right, { ...next, revision: actual.right.revision })
            changed(actual.right)
            model.routes.set(id, actual.right)
          }
          break
        }
        case "remove": {
          const id = targetOf(model, operation.target)
          const precondition = preconditionOf(model, id, operation.precondition)
          steps.push(`remove ${id} ${JSON.stringify(precondition)}`)
          const result = yield* Effect.either(repo.remove(id, precondition))
          const gate = model.gate(id, precondition)
          // A removal gives its revision, a positive integer; the model knows only whether it happened.
          if (Either.isRight(result)) assert.isTrue(Number.isSafeInteger(result.right) && result.right > 0)
          check(Either.map(Either.mapLeft(result, plainError), () => undefined), Either.map(gate, () => undefined))
          if (Either.isRight(gate)) model.routes.delete(id)
          break
        }
        case "list": {
          const { after, ...filters } = operation.query
          const query: RouteRepository.ListQuery = {
            ...filters,
            after: after === undefined
              ? undefined
              : typeof after === "string"
              ? after
              : model.known.length === 0
              ? undefined
              : model.known[after % model.known.length]
          }
          steps.push(`list ${JSON.stringify(query)}`)
          const page = yield* repo.list(query)
          check({ items: page.items.map(plain), hasMore: page.hasMore }, model.page(query))
          break
        }
      }
    }
  }).pipe(Effect.withClock(steppedClock(time)))
}

// ---------------------------------------------------------------------------------------------------------------
// Each store
// ---------------------------------------------------------------------------------------------------------------

const modelSuite = <R>(
  name: string,
  client: Layer.Layer<R, unknown>,
  store: Layer.Layer<RouteRepository.RouteRepository, unknown, R>,
  numRuns: number
) =>
  describe(`RouteRepository model: ${name}`, () => {
    let runtime: ManagedRuntime.ManagedRuntime<R, unknown>
    beforeAll(async () => {
      runtime = ManagedRuntime.make(client)
      await runtime.runPromise(Effect.void)
    })
    afterAll(() => runtime.dispose())

    it("agrees with the model at every step of random operation sequences", async () => {
      await fc.assert(
        fc.asyncProperty(repositoryOperations, (operations) =>
          runtime.runPromise(Effect.provide(agree(operations), store))),
        { numRuns }
      )
    })
  })

modelSuite("memory store", Layer.empty, RouteRepository.layerMemory, 500)
// A fresh table for every sequence; the client (and its pool) is shared by the runs.
modelSuite("postgres store", TestDatabase.layer(), TestDatabase.storeLayer(), 40)
