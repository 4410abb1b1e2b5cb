/**
 * Idempotent creates: the `Idempotency-Key` request header (draft-ietf-httpapi-idempotency-key-header), what the
 * HTTP core checks of it, and its answers. The stores remember the keys (`RouteRepository.createIdempotent`).
 *
 * @internal
 */
import { Effect, Either } from "effect"
import { IdempotencyKeyInUse } from "../../RouteRepository.js"
import * as Answers from "./answers.js"
import { type Refusal, refuse } from "./answers.js"
import type { Response } from "./exchange.js"

/** The request header, by its lowercase name. */
export const HEADER = "idempotency-key"

/** The response header that marks a replayed first answer. */
export const REPLAYED_HEADER = "idempotency-replayed"

/** Longest key, in characters. */
export const MAX_KEY_LENGTH = 255

/** An example key, as the header carries it. */
export const EXAMPLE = "\"8e03978e-40d5-43e8-bc93-6894a57f9324\""

// RFC 9651 §3.3.3: the characters of an sf-string besides `"` and `\`, which must be escaped.
const isStringChar = (code: number) => code >= 0x20 && code <= 0x7e

// A bare key, for clients that send it unquoted: the characters of an sf-token (tchar, ":" and "/").
const BARE_KEY = /^[A-Za-z0-9!#$%&'*+\-.^_`|~:/]+$/

const checked = (key: string): Either.Either<string, string> =>
  key.length === 0
    ? Either.left("is empty")
    : key.length > MAX_KEY_LENGTH
    ? Either.left(`is ${key.length} characters long, more than ${MAX_KEY_LENGTH}`)
    : Either.right(key)

/**
 * The key a header value carries, or why it carries none: a Structured Field string (RFC 9651 §4.2.5, the form the
 * draft specifies), or a bare key of token characters meaning the same key. Parameters, several keys (several
 * header lines arrive joined by ", ") and anything else are refused.
 */
export const parse = (value: string): Either.Either<string, string> => {
  const text = value.trim()
  if (!text.startsWith("\"")) {
    return BARE_KEY.test(text) || text === "" ? checked(text) : Either.left("is neither a quoted string nor a token")
  }
  let key = ""
  for (let i = 1; i < text.length; i++) {
    const char = text[i]!
    if (char === "\"") {
      return i === text.length - 1
        ? checked(key)
        : Either.left("has text after the closing quote (a second key, or parameters, which are not accepted)")
    }
    if (char === "\\") {
      const next = text[++i]
      if (next !== "\"" && next !== "\\") return Either.left("has a backslash that escapes neither \" nor \\")
      key += next
    } else if (isStringChar(char.charCodeAt(0))) {
      key += char
    } else {
      return Either.left("holds a character that is not printable ASCII")
    }
  }
  return Either.left("has no closing quote")
}

const invalidKey = (reason: string): Response =>
  Answers.problem(
    "invalid_idempotency_key",
    `The Idempotency-Key header ${reason}: send one key of 1 to ${MAX_KEY_LENGTH} printable ASCII characters as a ` +
      `quoted string, such as Idempotency-Key: ${EXAMPLE}.`
  )

/** The key of a create request under its principal, when it sent one. */
export interface RequestKey {
  readonly key: string
  readonly principal: string
  /** The key under its principal, one string: what the requests in flight in this process are known by. */
  readonly slot: string
}

/** The request's key (`undefined` without the header), or its 400 when the header is malformed. */
export const requestKey = (
  header: string | undefined,
  principal: string
): Effect.Effect<RequestKey | undefined, Refusal> => {
  if (header === undefined) return Effect.succeed(undefined)
  return Either.match(parse(header), {
    onLeft: (reason) => refuse(invalidKey(reason)),
    onRight: (key) => Effect.succeed({ key, principal, slot: JSON.stringify([principal, key]) })
  })
}

/**
 * Runs `create` unless a create with the same key and principal is running in this process: then it fails with
 * `IdempotencyKeyInUse` at once, without asking the store (which decides across processes). The key is held from the
 * check until `create` ends in any way, interruption included.
 */
export const exclusive = <A, E>(
  inFlight: Set<string>,
  { key, slot }: RequestKey,
  create: () => Effect.Effect<A, E>
): Effect.Effect<A, E | IdempotencyKeyInUse> =>
  Effect.uninterruptibleMask((restore) =>
    Effect.suspend((): Effect.Effect<A, E | IdempotencyKeyInUse> => {
      if (inFlight.has(slot)) return Effect.fail(new IdempotencyKeyInUse({ key }, true))
      inFlight.add(slot)
      return Effect.ensuring(restore(Effect.suspend(create)), Effect.sync(() => inFlight.delete(slot)))
    })
  )

/** The answer marked as a replay of the first one, when it is. */
export const replay = (response: Response, replayed: boolean): Response =>
  replayed ? { ...response, headers: { ...response.headers, [REPLAYED_HEADER]: "true" } } : response

export const keyReused = (key: string): Response =>
  Answers.problem(
    "idempotency_key_reused",
    `The Idempotency-Key ${JSON.stringify(key)} was first used with a different body, and nothing was created: ` +
      "repeat the first request's body exactly to get its answer again, or send a new key for a new route."
  )

export const keyInUse = (key: string): Response =>
  Answers.problem(
    "idempotency_key_in_use",
    `A request with the Idempotency-Key ${JSON.stringify(key)} is still being answered: ` +
      "retry with the same key once it has finished, and get its answer."
  )
