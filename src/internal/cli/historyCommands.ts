/**
 * The commands over the registry's change log: `history` prints it, `restore` takes a route back to a revision of it.
 *
 * @internal
 */
import * as Args from "@effect/cli/Args"
import * as Command from "@effect/cli/Command"
import * as Options from "@effect/cli/Options"
import { Effect, Option, Schema } from "effect"
import * as History from "../http/history.js"
import * as Table from "./display.js"
import { json, optionalFilter, url } from "./options.js"
import { connect, print } from "./steps.js"
import * as Usage from "./usage.js"

// The most entries `history` prints: a bound on the pages one command walks.
const MAX_HISTORY_ENTRIES = 100_000

export const historyCommand = Command.make("history", {
  url,
  json,
  limit: Options.integer("limit").pipe(
    Options.withSchema(Schema.Int.pipe(Schema.between(1, MAX_HISTORY_ENTRIES))),
    Options.withDescription(`The most entries to print, newest first (1 to ${MAX_HISTORY_ENTRIES}).`),
    Options.withDefault(History.DEFAULT_HISTORY_PAGE)
  ),
  actor: optionalFilter(
    "actor",
    Schema.String.pipe(Schema.minLength(1), Schema.maxLength(History.MAX_ACTOR_LENGTH)),
    "Only changes this principal made."
  ),
  action: Options.choice("action", ["create", "update", "delete", "restore"]).pipe(
    Options.withDescription("Only changes of this kind."),
    Options.optional,
    Options.map(Option.getOrUndefined)
  ),
  id: Args.text({ name: "id" }).pipe(
    Args.withDescription("A route's id: only its changes (a deleted route's too)."),
    Args.optional
  )
}, ({ id, json, url, ...query }) =>
  Effect.gen(function*() {
    const registry = yield* connect(url)
    const entries = yield* registry.history(query, Option.getOrUndefined(id))
    yield* print(json ? Table.historyJson(entries) : Table.history(entries))
  })).pipe(Command.withDescription(Usage.PURPOSES.history))

export const restoreCommand = Command.make("restore", {
  url,
  json,
  dryRun: Options.boolean("dry-run").pipe(Options.withDescription(
    "Ask the registry's dry run (?dryRun=true): its answer to the restore, with nothing changed."
  )),
  id: Args.text({ name: "id" }).pipe(Args.withDescription("The route's id (a deleted route's too).")),
  revision: Args.integer({ name: "revision" }).pipe(
    Args.withSchema(Schema.Int.pipe(Schema.positive())),
    Args.withDescription("The revision of the route's log to go back to (see history).")
  )
}, (options) =>
  Effect.gen(function*() {
    const registry = yield* connect(options.url)
    const { created, revision, route } = yield* registry.restore(options.id, options.revision, options.dryRun)
    if (options.json) return yield* print(Table.json(route))
    const what = created ? `route ${options.id} as new route ${route.id}` : `route ${route.id}`
    const outcome = options.dryRun ? "dry run, nothing changed" : `revision ${revision}`
    yield* print(`restored ${what} to revision ${options.revision} (${outcome})\n${Table.route(route, undefined)}`)
  })).pipe(Command.withDescription(Usage.PURPOSES.restore))
