/**
 * An answer's stream as a web `ReadableStream` of bytes, for the adapters whose transport reads one (the fetch
 * handler, Hono, and the Effect `HttpApp` through `Stream.fromReadableStream`).
 *
 * @internal
 */
import type { OpenBody } from "../http/exchange.js"

// The queue's high-water mark: the stream is pulled (and a catching-up stream resumes writing) below it.
const HIGH_WATER_BYTES = 64 * 1024

const encoder = new TextEncoder()

/** Where the stream runs: the request's signal, aborted when its client leaves; told when the stream closes it. */
export interface Options {
  readonly signal?: AbortSignal | undefined
  readonly closed?: (() => void) | undefined
}

/**
 * The stream's bytes. What the queue holds unread is what the connection holds unsent (the transport reads as fast as
 * it sends); closing errors the stream, which drops what it holds and makes the transport close the connection; a
 * transport that cancels it, or a request signal that aborts (its client left), stops the stream.
 */
export const readable = (body: OpenBody, { closed, signal }: Options = {}): ReadableStream<Uint8Array> => {
  let stop: (() => void) | undefined
  let waiting: (() => void) | undefined
  return new ReadableStream<Uint8Array>({
    start(controller) {
      if (signal?.aborted) return controller.error(signal.reason)
      signal?.addEventListener("abort", () => {
        stop?.()
        controller.error(signal.reason)
      }, { once: true })
      stop = body.open({
        // The reader owns what it reads (it may transfer it), so shared bytes are copied.
        write: (chunk) => controller.enqueue(typeof chunk === "string" ? encoder.encode(chunk) : chunk.slice()),
        buffered: () => HIGH_WATER_BYTES - (controller.desiredSize ?? 0),
        drained: (resume) => {
          waiting = resume
        },
        close: () => {
          controller.error(new Error("the change stream's client fell too far behind: closed"))
          closed?.()
        }
      })
    },
    pull() {
      const resume = waiting
      waiting = undefined
      resume?.()
    },
    cancel() {
      stop?.()
    }
  }, { highWaterMark: HIGH_WATER_BYTES, size: (chunk) => chunk.byteLength })
}
