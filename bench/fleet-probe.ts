/**
 * Preloaded (`node --import`) into the registry and relay processes of bench/fleet.ts, which otherwise run exactly
 * `npm start`'s command: answers the benchmark's probe, over the IPC channel, with the process's CPU time and memory
 * (after two full collections when asked, so that memory compares what is held, not what awaits collection), and
 * its event loop's delay since the last probe, and the bytes its HTTP answers have written (what a change stream
 * sends its followers).
 */
import { ServerResponse } from "node:http"
import { monitorEventLoopDelay } from "node:perf_hooks"

/** A probe's question. */
export interface Probe {
  readonly type: "probe"
  readonly gc: boolean
}

/** Its answer: CPU time (µs, as `process.cpuUsage`) and memory (bytes, as `process.memoryUsage`). */
export interface Probed {
  readonly type: "probed"
  readonly cpuMicros: number
  readonly rss: number
  readonly heapUsed: number
  readonly external: number
  /** The event loop's delay since the last probe, p99 and max, ms. */
  readonly loopDelay: { readonly p99: number; readonly max: number }
  /** Bytes written into HTTP answers' bodies since the process started. */
  readonly bytesSent: number
}

let bytesSent = 0
const write = ServerResponse.prototype.write
ServerResponse.prototype.write = function(this: ServerResponse, chunk: unknown, ...rest: Array<unknown>) {
  bytesSent += typeof chunk === "string" ? Buffer.byteLength(chunk) : (chunk as Uint8Array).byteLength
  return (write as (...args: Array<unknown>) => boolean).call(this, chunk, ...rest)
} as typeof write

const gc = (globalThis as { gc?: () => void }).gc
const loop = monitorEventLoopDelay({ resolution: 5 })
loop.enable()

process.on("message", (message: Probe) => {
  if (message.type !== "probe") return
  if (message.gc) {
    if (gc === undefined) throw new Error("the probe needs node --expose-gc")
    gc()
    gc()
  }
  const cpu = process.cpuUsage()
  const memory = process.memoryUsage()
  const probed: Probed = {
    type: "probed",
    cpuMicros: cpu.user + cpu.system,
    rss: memory.rss,
    heapUsed: memory.heapUsed,
    external: memory.external,
    loopDelay: { p99: loop.percentile(99) / 1e6, max: loop.max / 1e6 },
    bytesSent
  }
  loop.reset()
  process.send!(probed)
})
// The channel never keeps the host alive: its server does, and its shutdown exits.
process.channel?.unref()
