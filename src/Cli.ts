/**
 * The `route-registry` command: routes as code. `export` writes a registry's routes to a YAML or JSON file, `diff`
 * shows what `sync` would change to make a registry match such a file, `sync` does it, `list` and `get` show
 * routes to people (a table) and scripts (`--json`), and `match` says which route serves a request and why not the
 * others. It talks to a registry over HTTP through the typed client of
 * `RoutingApi`, at `--url` (or `ROUTING_URL`), with the bearer token of `ROUTING_TOKEN`.
 *
 * Routes are matched between a file and a registry by method and path shape (ids are not portable between
 * registries; the method and shape are unique in each): a file route with a renamed parameter updates the stored
 * route in place.
 *
 * The package's `route-registry` bin runs `run(process.argv)`; a host embeds `command` in a CLI of its own.
 * Needs the peers `@effect/cli` and, for the bin, `@effect/platform-node` (npm installs them with the package).
 *
 * @since 0.3.0
 */
import * as Args from "@effect/cli/Args"
import * as CliConfig from "@effect/cli/CliConfig"
import * as Command from "@effect/cli/Command"
import * as HelpDoc from "@effect/cli/HelpDoc"
import * as Options from "@effect/cli/Options"
import * as ValidationError from "@effect/cli/ValidationError"
import * as FetchHttpClient from "@effect/platform/FetchHttpClient"
import * as FileSystem from "@effect/platform/FileSystem"
import { Console, Effect, Either, Exit, Option, Schema } from "effect"
import { createRequire } from "node:module"
import * as Apply from "./internal/cli/apply.js"
import * as Table from "./internal/cli/display.js"
import {
  Differences,
  FleetBehind,
  InvalidFile,
  messageOf,
  MissingToken,
  NoRoute,
  PlanTooLarge,
  RequestFailed,
  SyncFailed,
  Unanswered
} from "./internal/cli/errors.js"
import * as Fleet from "./internal/cli/fleet.js"
import { historyCommand, restoreCommand } from "./internal/cli/historyCommands.js"
import {
  file,
  json,
  methodArgument,
  methodOption,
  optionalFilter,
  pathPrefix,
  prune,
  url
} from "./internal/cli/options.js"
import * as CliOptions from "./internal/cli/options.js"
import * as Plan from "./internal/cli/plan.js"
import * as RoutesFile from "./internal/cli/routesFile.js"
import { connect, print } from "./internal/cli/steps.js"
import * as Usage from "./internal/cli/usage.js"
import { MAX_SEARCH_LENGTH } from "./internal/limits.js"
import * as Route from "./Route.js"
import * as RoutingApi from "./RoutingApi.js"

export {
  /**
   * `diff --exit-code`: the registry differs from the file (the plan was printed); the command exits 1.
   *
   * @since 0.5.0
   */
  Differences,
  /**
   * `sync --wait`: followers were still behind the sync's last change when the wait ended (each was named).
   *
   * @since 0.4.0
   */
  FleetBehind,
  /**
   * The routes file has problems, each with its line and column; nothing was changed.
   *
   * @since 0.3.0
   */
  InvalidFile,
  /**
   * `ROUTING_TOKEN` is not set.
   *
   * @since 0.3.0
   */
  MissingToken,
  /**
   * `match`: no stored route matches the request's path (its decision was printed); the command exits 1.
   *
   * @since 0.5.0
   */
  NoRoute,
  /**
   * `sync`: the plan is beyond one batch's limits and `--split-batches` was not given; nothing was changed.
   *
   * @since 0.5.0
   */
  PlanTooLarge,
  /**
   * A call to the registry failed: its problem code and detail, or why it could not be reached.
   *
   * @since 0.3.0
   */
  RequestFailed,
  /**
   * A sync was not applied: its batch was refused whole (each refused change was reported); with `--split-batches`,
   * the batches before it were applied.
   *
   * @since 0.3.0
   */
  SyncFailed,
  /**
   * `match` or `diff --exit-code` could not answer (`cause` says why); the command exits 2, so that its 1 always means
   * the answer.
   *
   * @since 0.5.0
   */
  Unanswered
}

/**
 * The origin `--url` defaults to: where `npm start` listens.
 *
 * @since 0.3.0
 */
export const DEFAULT_URL: string = CliOptions.DEFAULT_URL

// ---------------------------------------------------------------------------------------------------------------
// Shared steps
// ---------------------------------------------------------------------------------------------------------------

// The routes of a file that lie inside the selection, or every problem of the file.
const load = (path: string, prefix: string) =>
  Effect.gen(function*() {
    const fs = yield* FileSystem.FileSystem
    const text = yield* fs.readFileString(path)
    const items = yield* Either.match(RoutesFile.parse(text), {
      onLeft: (problems) => Effect.fail(new InvalidFile({ file: path, problems })),
      onRight: Effect.succeed
    })
    const outside = Plan.outside(items, prefix)
    if (outside.length > 0) return yield* new InvalidFile({ file: path, problems: outside })
    return items
  })

const planFor = (
  options: { readonly url: string; readonly file: string; readonly pathPrefix: string; readonly prune: boolean }
) =>
  Effect.gen(function*() {
    const items = yield* load(options.file, options.pathPrefix)
    const registry = yield* connect(options.url)
    const stored = yield* registry.list()
    const plan = Plan.make(stored, items, options)
    yield* print(Plan.render(plan))
    return { registry, plan }
  })

// ---------------------------------------------------------------------------------------------------------------
// Commands
// ---------------------------------------------------------------------------------------------------------------

const exportCommand = Command.make("export", {
  url,
  pathPrefix,
  format: Options.choice("format", RoutesFile.FORMATS).pipe(
    Options.withDescription("yaml or json; by default the --output file's extension says, else yaml."),
    Options.optional
  ),
  output: Options.file("output").pipe(
    Options.withAlias("o"),
    Options.withDescription("Write to this file instead of stdout."),
    Options.optional
  )
}, (options) =>
  Effect.gen(function*() {
    const registry = yield* connect(options.url)
    const routes = yield* registry.list({ pathPrefix: options.pathPrefix })
    const format = Option.getOrElse(
      Option.orElse(options.format, () => Option.flatMapNullable(options.output, RoutesFile.formatOf)),
      () => RoutesFile.FORMATS[0]
    )
    const text = RoutesFile.render(routes, format)
    if (Option.isNone(options.output)) return yield* print(text)
    const fs = yield* FileSystem.FileSystem
    yield* fs.writeFileString(options.output.value, text)
    yield* Console.error(`wrote ${routes.length} routes to ${options.output.value}`)
  })).pipe(
    Command.withDescription(Usage.PURPOSES.export)
  )

const diffCommand = Command.make("diff", {
  url,
  pathPrefix,
  prune,
  exitCode: Options.boolean("exit-code").pipe(Options.withDescription(
    "Exit 1 when the registry differs from the file, 0 when it matches (as git diff --exit-code); 2 when the " +
      "registry cannot be compared (unreachable, a refused token, a file with problems)."
  )),
  file
}, ({ exitCode, ...options }) =>
  exitCode
    ? planFor(options).pipe(
      Effect.flatMap(({ plan }) =>
        plan.changes.length === 0 ? Effect.void : Effect.fail(new Differences({ changes: plan.changes.length }))
      ),
      Usage.answering(Differences)
    )
    : Effect.asVoid(planFor(options))).pipe(
    Command.withDescription(Usage.PURPOSES.diff)
  )

const syncCommand = Command.make("sync", {
  url,
  pathPrefix,
  prune,
  dryRun: Options.boolean("dry-run").pipe(Options.withDescription(
    "Print the plan and send it as the registry's dry run of the batch (?dryRun=true): it answers as it would the " +
      "batch (conflicts, invalid routes, scopes, preconditions) and changes nothing. Exits 1 if it would fail."
  )),
  splitBatches: Options.boolean("split-batches").pipe(Options.withDescription(
    "Apply a plan beyond one batch's limits (5,000 changes, 4 MiB) as several batches in plan order (deletes, " +
      "updates, creates), each all or nothing; a refused batch stops the sync with the batches before it applied. " +
      "Without it, such a plan is refused before anything is written."
  )),
  wait: Options.integer("wait").pipe(
    Options.withDescription(
      "After applying, wait up to this many seconds for every follower of the registry (GET /v1/routing/followers) " +
        "to apply the last change, then say which, if any, are still behind. Exits 1 if any are."
    ),
    Options.filterMap(
      (seconds) => seconds >= 0 ? Option.some(seconds) : Option.none(),
      "--wait must be whole seconds, 0 or more"
    ),
    Options.optional
  ),
  file
}, (options) =>
  Effect.gen(function*() {
    const { plan, registry } = yield* planFor(options)
    if (plan.changes.length === 0) return
    const revision = yield* Apply.apply(registry, plan, options.file, {
      dryRun: options.dryRun,
      split: options.splitBatches
    })
    const changes = `${plan.changes.length} change${plan.changes.length === 1 ? "" : "s"}`
    yield* print(
      options.dryRun ? `Dry run: the registry would apply ${changes}; nothing changed.\n` : `Applied ${changes}.\n`
    )
    if (Option.isSome(options.wait) && revision !== undefined) {
      yield* Fleet.wait(registry, revision, options.wait.value)
    }
  })).pipe(Command.withDescription(Usage.PURPOSES.sync))

const listCommand = Command.make("list", {
  url,
  json,
  pathPrefix: Options.text("path-prefix").pipe(
    Options.withDescription("Only routes whose path starts with this, byte for byte."),
    Options.optional,
    Options.map(Option.getOrUndefined)
  ),
  method: methodOption("method").pipe(
    Options.withDescription("Only routes with exactly this method (methods are case-sensitive: GET, not get)."),
    Options.optional,
    Options.map(Option.getOrUndefined)
  ),
  handler: optionalFilter("handler", Route.HandlerName, "Only routes with exactly this handler."),
  middleware: optionalFilter("middleware", Route.MiddlewareName, "Only routes whose middleware includes this name."),
  q: optionalFilter(
    "q",
    Schema.String.pipe(Schema.minLength(1), Schema.maxLength(MAX_SEARCH_LENGTH)),
    "Only routes whose path, handler or a middleware name contains this text, byte for byte (-q or --q)."
  )
}, ({ json, url, ...filters }) =>
  Effect.gen(function*() {
    const registry = yield* connect(url)
    const routes = yield* registry.list(filters)
    yield* print(json ? Table.json(routes) : Table.routes(routes))
  })).pipe(Command.withDescription(Usage.PURPOSES.list))

const getCommand = Command.make("get", {
  url,
  json,
  id: Args.text({ name: "id" }).pipe(Args.withDescription("The route's id."))
}, (options) =>
  Effect.gen(function*() {
    const registry = yield* connect(options.url)
    const { etag, route } = yield* registry.get(options.id)
    yield* print(options.json ? Table.json(route) : Table.route(route, etag))
  })).pipe(Command.withDescription(Usage.PURPOSES.get))

const matchCommand = Command.make("match", {
  url,
  json,
  method: methodArgument("METHOD").pipe(
    Args.withDescription("The request's method, such as GET (methods are case-sensitive).")
  ),
  path: Args.text({ name: "path" }).pipe(
    Args.withSchema(RoutingApi.MatchParams.fields.path),
    Args.withDescription("The request target as the router receives it, such as /users/42?fields=name.")
  ),
  host: Options.text("host").pipe(
    Options.withDescription("The request's Host, for routes with a host condition, such as api.example.com."),
    Options.optional
  ),
  header: Options.text("header").pipe(
    Options.withDescription("A request header as name:value, such as x-version:2; repeat it for each header."),
    Options.repeated
  ),
  key: Options.text("key").pipe(
    Options.withDescription(
      "The key a route's split reads from the request (its header's, cookie's or query parameter's value): the " +
        "answer then says which handler and bucket the split gives it."
    ),
    Options.optional
  )
}, (options) =>
  Effect.gen(function*() {
    const registry = yield* connect(options.url)
    const answer = yield* registry.match(
      options.method,
      options.path,
      Option.getOrUndefined(options.host),
      options.header,
      Option.getOrUndefined(options.key)
    )
    yield* print(options.json ? Table.matchJson(answer) : Table.match(answer))
    // Routes that serve the path with other methods are an answer about routes that exist: only a path no stored
    // route matches (or a bad one) is "no route".
    if ((answer.outcome === "not_found" || answer.outcome === "bad_path") && answer.servedByHost === undefined) {
      return yield* new NoRoute({ outcome: answer.outcome })
    }
  }).pipe(Usage.answering(NoRoute))).pipe(Command.withDescription(Usage.PURPOSES.match))

/**
 * The `route-registry` command and its subcommands, for a host that embeds it in a CLI of its own. Its handlers need
 * an `HttpClient` (and the `FileSystem` of `CliApp.Environment`).
 *
 * @since 0.3.0
 */
export const command = Command.make("route-registry").pipe(
  Command.withDescription(Usage.PURPOSE),
  Command.withSubcommands([
    exportCommand,
    diffCommand,
    syncCommand,
    listCommand,
    getCommand,
    matchCommand,
    historyCommand,
    restoreCommand
  ])
)

// The package's version, from the manifest beside dist/ and src/ alike.
const version = (): string =>
  (createRequire(import.meta.url)("../package.json") as { readonly version: string }).version

/**
 * Runs the command with `argv` as `process.argv` holds it (the first two entries are skipped). A failure is printed
 * on stderr as `error: …` (usage errors with the help; `match`'s "no route" and `diff --exit-code`'s differences were
 * printed as its output) and fails the effect, so the process can exit with `exitCode`. HTTP calls go through `fetch`.
 *
 * @since 0.3.0
 */
export const run = (argv: ReadonlyArray<string>) =>
  (Usage.asksForHelp(argv.slice(2)) ? print(Usage.help(version())) : Command.run(command, {
    name: "route-registry",
    version: version(),
    footer: HelpDoc.p(Usage.FOOTER)
  })(Usage.shortQ(argv)))
    .pipe(
      Effect.tapError((error) =>
        ValidationError.isValidationError(error) || error instanceof NoRoute || error instanceof Differences
          ? Effect.void
          : Console.error(`error: ${messageOf(error)}`)
      ),
      Effect.provide(FetchHttpClient.layer),
      // The commands and their purpose first in the help, not under some 50 lines of built-in options.
      Effect.provide(CliConfig.layer({ showBuiltIns: false })),
      Usage.plainUnlessTerminal
    )

/**
 * The exit code of a run of `run` (docs/cli.md, "Exit codes"): 0 when it succeeded; 1 when it failed (a usage error
 * included), and when `match` found no route or `diff --exit-code` a difference; 2 when `match` or `diff --exit-code`
 * could not answer; 130 when it was interrupted (Ctrl-C).
 *
 * @since 0.5.0
 */
export const exitCode: (exit: Exit.Exit<unknown, unknown>) => number = Usage.exitCode
