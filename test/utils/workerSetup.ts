/**
 * Runs in every test process before its file. When the run's main process is gone (a Ctrl-C sent to it alone, a
 * crash) this process loses its channel to it, and ends too instead of running its file to the end with no one to
 * report to. It ends by a signal: vitest replaces `process.exit` in test processes with a function that throws. The
 * processes it started are stopped by their own listeners for the same event (spawned.ts), which run first.
 */
if (process.connected) process.once("disconnect", () => process.nextTick(() => process.kill(process.pid, "SIGKILL")))
