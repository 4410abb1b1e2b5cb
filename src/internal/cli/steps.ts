/**
 * The steps every command of `route-registry` shares: printing its output, and connecting to the registry with the
 * token of `ROUTING_TOKEN`.
 *
 * @internal
 */
import { Config, Console, Effect } from "effect"
import * as Urls from "../urls.js"
import * as Registry from "./apiClient.js"
import { MissingToken } from "./errors.js"

// The command's own output on stdout: `text` ends with its newline, which console.log would double.
export const print = (text: string) => Console.log(text.endsWith("\n") ? text.slice(0, -1) : text)

// Warned on stderr, before the token is first sent: stdout is the command's output.
export const connect = (origin: string) =>
  Config.redacted("ROUTING_TOKEN").pipe(
    Effect.mapError(() => new MissingToken()),
    Effect.tap(() => {
      const cleartext = Urls.cleartextWarning(origin, "the registry's URL")
      return cleartext === undefined ? Effect.void : Console.error(`warning: ${cleartext}`)
    }),
    Effect.flatMap((token) => Registry.make(origin, token))
  )
