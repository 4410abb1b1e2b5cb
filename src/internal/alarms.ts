/**
 * Deadlines waited for on Effect's `Clock` (the TestClock under a test), cheaply enough for every request and every
 * query: `after(runtime, millis, ring)` calls `ring` once `millis` have passed on the clock of `runtime`, unless the
 * function it returns is called first.
 *
 * A fiber for each deadline (`Effect.sleep`, `Effect.timeout`) costs a fork, measured at 20–40 µs of CPU on this
 * project's loaded machine against 1–2 µs for a Node timer (docs/performance.md, "Waiting through Effect"): more than
 * a create in the HTTP core costs. So the deadlines of one length on one clock share one fiber: being of one length,
 * they fall due in the order they were set, so they wait in a queue and the fiber sleeps until the first of them that
 * still counts, rings it, and goes on. Setting a deadline is a push, cancelling it a mark. When no deadline is left
 * the fiber is interrupted, so no timer holds the process; the next deadline starts another.
 *
 * @internal
 */
import { Clock, Context, DefaultServices, Effect, type Fiber, FiberId, FiberRefs, Runtime } from "effect"

interface Entry {
  readonly due: number
  ring: (() => void) | undefined
}

interface Queue {
  readonly clock: Clock.Clock
  readonly millis: number
  readonly entries: Array<Entry>
  head: number
  /** Entries set and neither rung nor cancelled. */
  live: number
  /** The fiber waiting for the entries, while any is live. */
  fiber: Fiber.RuntimeFiber<void> | undefined
  /** Stands for that fiber from its start (it is forked after it is asked for): a fiber no longer the queue's stops. */
  turn: object | undefined
}

// The queues of each clock by deadline length: a clock of a test goes with its test.
const queues = new WeakMap<Clock.Clock, Map<number, Queue>>()
const MAX_IDLE_QUEUES = 256

/** The clock a runtime's effects read. */
export const clockOf = (runtime: Runtime.Runtime<never>): Clock.Clock =>
  Context.get(FiberRefs.getOrDefault(runtime.fiberRefs, DefaultServices.currentServices), Clock.Clock)

const queueOf = (clock: Clock.Clock, millis: number): Queue => {
  let byLength = queues.get(clock)
  if (byLength === undefined) queues.set(clock, byLength = new Map())
  let queue = byLength.get(millis)
  if (queue === undefined) {
    // Deadlines of many lengths (a grouped write's is what its group left it, a stream's its credential's life) leave
    // idle queues behind: past a bound they are dropped, none holding a deadline or a fiber.
    if (byLength.size >= MAX_IDLE_QUEUES) {
      for (const [length, idle] of byLength) if (idle.turn === undefined && idle.live === 0) byLength.delete(length)
    }
    byLength.set(millis, queue = { clock, millis, entries: [], head: 0, live: 0, fiber: undefined, turn: undefined })
  }
  return queue
}

// Rings what fell due and sleeps until the next; ends when nothing is left to wait for.
const run = (queue: Queue, turn: object) =>
  Effect.gen(function*() {
    for (;;) {
      if (queue.turn !== turn) return
      const { entries } = queue
      while (queue.head < entries.length && entries[queue.head]!.ring === undefined) queue.head++
      if (queue.head === entries.length) return reset(queue)
      const entry = entries[queue.head]!
      const wait = entry.due - queue.clock.unsafeCurrentTimeMillis()
      if (wait > 0) {
        yield* Effect.sleep(wait)
        continue
      }
      queue.head++
      const ring = entry.ring!
      entry.ring = undefined
      queue.live--
      // A ring that throws is reported; the deadlines after it still ring.
      yield* Effect.catchAllDefect(Effect.sync(ring), (defect) => Effect.logError("a deadline's action failed", defect))
    }
  })

const reset = (queue: Queue) => {
  queue.fiber = undefined
  queue.turn = undefined
  queue.entries.length = 0
  queue.head = 0
  queue.live = 0
}

const cancel = (queue: Queue, entry: Entry) => {
  if (entry.ring === undefined) return
  entry.ring = undefined
  if (--queue.live > 0) {
    // Drop what the fiber has passed, now and then, rather than on every ring.
    if (queue.head > 1024 && queue.head * 2 > queue.entries.length) {
      queue.entries.splice(0, queue.head)
      queue.head = 0
    }
    return
  }
  const fiber = queue.fiber
  reset(queue)
  fiber?.unsafeInterruptAsFork(FiberId.none)
}

/** Calls `ring` once `millis` have passed on `runtime`'s clock, unless the function returned is called first. */
export const after = (runtime: Runtime.Runtime<never>, millis: number, ring: () => void): () => void => {
  const clock = clockOf(runtime)
  const queue = queueOf(clock, millis)
  const entry: Entry = { due: clock.unsafeCurrentTimeMillis() + millis, ring }
  queue.entries.push(entry)
  queue.live++
  if (queue.turn === undefined) {
    const turn = queue.turn = {}
    queue.fiber = Runtime.runFork(runtime)(run(queue, turn))
  }
  return () => cancel(queue, entry)
}
