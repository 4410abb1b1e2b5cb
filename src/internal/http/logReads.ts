/**
 * The turns of the change streams of one core that read the store's log (a stream resuming from a cursor older than
 * the ring): at most `MAX_LOG_READS` read at once, the others wait in turn, so a crowd never starves the API (nor,
 * at a relay, holds more than that many catch-up streams open to the process it follows).
 *
 * @internal
 */

/** The reads running now, and those waiting for their turn. */
export interface LogReads {
  running: number
  readonly waiting: Array<() => void>
}

export const MAX_LOG_READS = 4

export const logReads = (): LogReads => ({ running: 0, waiting: [] })

/** Runs `start` now when fewer than `MAX_LOG_READS` run, else once its turn comes. */
export const takeTurn = (reads: LogReads, start: () => void): void => {
  if (reads.running < MAX_LOG_READS) {
    reads.running++
    start()
  } else {
    reads.waiting.push(start)
  }
}

/** A read is over: the next waiting one starts in its place. */
export const endTurn = (reads: LogReads): void => {
  const next = reads.waiting.shift()
  if (next === undefined) reads.running--
  else next()
}
