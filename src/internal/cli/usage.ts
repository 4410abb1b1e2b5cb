/**
 * What the `route-registry` command says about itself: its help (each command and its purpose first), how it reads
 * its arguments, its exit codes, and its styling, which only a terminal gets.
 *
 * @internal
 */
import { Cause, Console, Effect, Exit, Option } from "effect"
import { Unanswered } from "./errors.js"
import { DEFAULT_URL } from "./options.js"

/** What the command is for. */
export const PURPOSE = "Routes as code: export a registry's routes to a file, diff and sync them back."

/** What each command is for, in one line: its help's description, and its line in the command's own help. */
export const PURPOSES = {
  export: "Write every route (or those under --path-prefix) to a routes file, in a stable order.",
  diff: "Show what sync would change to make the registry match the file; change nothing.",
  sync: "Make the registry match the file: print the plan, then create, update and (with --prune) delete routes.",
  list: "List the routes, in creation order: a table, or JSON with --json.",
  get: "Show one route: a field a line with its ETag, or JSON with --json.",
  match: "Which stored route serves a request, its parameters, and why the others matching the path do not; exits 1 " +
    "when none does.",
  history: "The change log, newest first: who changed which route, when, and what changed; a table, or JSON with " +
    "--json.",
  restore: "Make a route what it was right after the change at a revision of its log; a deleted route comes back " +
    "with a new id."
} as const

/** Below the commands in the help: where the rest is, and the built-in options every command takes. */
export const FOOTER =
  "Run route-registry <command> --help for a command's options and arguments. Every command also takes " +
  "--help, --version, --log-level and --completions. The registry's token is ROUTING_TOKEN; its URL --url, else " +
  "ROUTING_URL (default " + DEFAULT_URL + "). Exit codes: docs/cli.md."

/**
 * The command's own help (no command, `--help` or `-h`): each command and its purpose, a line each, then the footer.
 * @effect/cli's lists its built-in options first, and each command's whole usage beside its purpose.
 */
export const help = (version: string): string => {
  const width = Math.max(...Object.keys(PURPOSES).map((name) => name.length))
  return [
    `route-registry ${version}`,
    PURPOSE,
    "",
    "USAGE",
    "  route-registry <command> [options]",
    "",
    "COMMANDS",
    ...Object.entries(PURPOSES).map(([name, purpose]) => `  ${name.padEnd(width)}  ${purpose}`),
    "",
    FOOTER,
    ""
  ].join("\n")
}

/** Whether `args` (after node and the script) ask for the command's own help. */
export const asksForHelp = (args: ReadonlyArray<string>): boolean =>
  args.length === 0 || (args.length === 1 && (args[0] === "--help" || args[0] === "-h"))

/**
 * `argv` with `--q text` and `--q=text` read as `-q text`: @effect/cli spells a one-letter option `-q` only, while the
 * API's parameter is `q`, and `--q` is what people type.
 */
export const shortQ = (argv: ReadonlyArray<string>): Array<string> =>
  argv.flatMap((arg, i) =>
    i < 2 || !(arg === "--q" || arg.startsWith("--q=")) ? [arg] : arg === "--q" ? ["-q"] : ["-q", arg.slice(4)]
  )

/**
 * `match`'s and `diff --exit-code`'s answer ("no route", "differences") fails as itself, exiting 1; anything else that
 * keeps them from answering is `Unanswered`, exiting 2.
 */
export const answering = <A, E, R>(answer: abstract new(...args: any) => unknown) => (effect: Effect.Effect<A, E, R>) =>
  Effect.mapError(effect, (error) => error instanceof answer ? error : new Unanswered({ cause: error }))

/**
 * The exit code of a run of `Cli.run` (docs/cli.md, "Exit codes"): 0 when it succeeded; 1 when it failed (a usage error
 * included, as in earlier releases), and when `match` found no route or `diff --exit-code` a difference; 2 when `match`
 * or `diff --exit-code` could not answer, so that their 1 means the answer; 130 when it was interrupted (Ctrl-C).
 */
export const exitCode = (exit: Exit.Exit<unknown, unknown>): number => {
  if (Exit.isSuccess(exit)) return 0
  if (Cause.isInterruptedOnly(exit.cause)) return 130
  return Option.getOrUndefined(Cause.failureOption(exit.cause)) instanceof Unanswered ? 2 : 1
}

// Escape sequences that style text (SGR): @effect/cli writes help and usage errors with them.
const STYLE = /\x1b\[[0-9;]*m/g

const plain = (stream: NodeJS.WriteStream) =>
  process.env.NO_COLOR !== undefined && process.env.NO_COLOR !== "" || stream.isTTY !== true

const unstyled = (args: ReadonlyArray<unknown>) =>
  args.map((arg) => (typeof arg === "string" ? arg.replace(STYLE, "") : arg))

/**
 * Styling only on a terminal: piped into a file, a pager or CI logs, help and errors are plain text (and NO_COLOR,
 * no-color.org, turns it off everywhere).
 */
export const plainUnlessTerminal = <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  Console.consoleWith((console) =>
    Console.withConsole(effect, {
      ...console,
      log: (...args) => console.log(...(plain(process.stdout) ? unstyled(args) : args)),
      error: (...args) => console.error(...(plain(process.stderr) ? unstyled(args) : args))
    })
  )
