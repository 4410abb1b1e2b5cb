/**
 * The options and arguments the `route-registry` commands share, each checked as the API checks it.
 *
 * @internal
 */
import * as Args from "@effect/cli/Args"
import * as HelpDoc from "@effect/cli/HelpDoc"
import * as Options from "@effect/cli/Options"
import * as ValidationError from "@effect/cli/ValidationError"
import { Config, Either, Option, Schema } from "effect"
import * as Route from "../../Route.js"
import * as Grammar from "../route/grammar.js"

/** The origin `--url` defaults to: where `npm start` listens. */
export const DEFAULT_URL = "http://127.0.0.1:3000"

export const url = Options.text("url").pipe(
  Options.withDescription(`The origin of the registry's API; ROUTING_URL when not given, else ${DEFAULT_URL}.`),
  Options.withFallbackConfig(Config.string("ROUTING_URL")),
  Options.withDefault(DEFAULT_URL)
)

export const pathPrefix = Options.text("path-prefix").pipe(
  Options.withSchema(Schema.String.pipe(Schema.startsWith("/"), Schema.maxLength(Route.MAX_PATH_LENGTH))),
  Options.withDescription(
    "Only routes whose path starts with this, byte for byte. With diff and sync the file must stay inside it and " +
      "--prune deletes only inside it, so teams can own different prefixes of one registry."
  ),
  Options.withDefault("/")
)

export const prune = Options.boolean("prune").pipe(
  Options.withDescription("Delete the stored routes under --path-prefix that the file lacks.")
)

export const json = Options.boolean("json").pipe(
  Options.withDescription("Print JSON, as the API answers, for scripts.")
)

export const file = Args.file({ name: "file", exists: "yes" }).pipe(
  Args.withDescription("A routes file, as export writes it (YAML, or JSON when it ends in .json).")
)

export const optionalFilter = <A>(name: string, schema: Schema.Schema<A, string>, description: string) =>
  Options.text(name).pipe(
    Options.withSchema(schema),
    Options.withDescription(description),
    Options.optional,
    Options.map(Option.getOrUndefined)
  )

const decodeMethod = Schema.decodeUnknownEither(Route.HttpMethod)

// A method as the API checks it: a lowercase one is refused with the API's own hint naming the uppercase method,
// rather than a schema's failure tree.
const methodOf = (name: string) => (text: string): Either.Either<Route.HttpMethod, HelpDoc.HelpDoc> =>
  Either.mapLeft(
    decodeMethod(text),
    () => HelpDoc.p(`${name} ${JSON.stringify(text)}: ${Grammar.checkMethod(text) ?? "is not an HTTP method"}`)
  )

/** A request's method, as an argument named `name` (`METHOD`). */
export const methodArgument = (name: string): Args.Args<Route.HttpMethod> =>
  Args.text({ name }).pipe(Args.mapEffect(methodOf(name)))

/** A method, as the option `--<name>`. */
export const methodOption = (name: string): Options.Options<Route.HttpMethod> =>
  Options.text(name).pipe(
    Options.mapEffect((text) => Either.mapLeft(methodOf(`--${name}`)(text), ValidationError.invalidValue))
  )
