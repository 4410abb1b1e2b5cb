/**
 * Content negotiation and reading a JSON body, in the contract's order: content type (415), size (413), JSON (400).
 *
 * @internal
 */
import { Effect, Either } from "effect"
import * as Answers from "./answers.js"
import { type Refusal, refuse } from "./answers.js"
import type { BodyFailure, Request, Response } from "./exchange.js"

/** The media types a body may be sent as: JSON for a create, JSON or JSON merge patch (RFC 7396) for an update. */
export const CREATE_TYPES: ReadonlyArray<string> = ["application/json"]
export const PATCH_TYPES: ReadonlyArray<string> = ["application/json", "application/merge-patch+json"]

// One of `accepted`, with any parameters; a charset other than UTF-8 is refused since the body is read as UTF-8.
const isAccepted = (contentType: string | undefined, accepted: ReadonlyArray<string>): boolean => {
  if (contentType === undefined) return false
  const semicolon = contentType.indexOf(";")
  const type = (semicolon === -1 ? contentType : contentType.slice(0, semicolon)).trim().toLowerCase()
  if (!accepted.includes(type)) return false
  if (semicolon === -1) return true
  const charset = /(?:^|;)\s*charset\s*=\s*"?([^";\s]*)/i.exec(contentType.slice(semicolon))
  return charset === null || /^utf-?8$/i.test(charset[1]!)
}

const decoder = new TextDecoder("utf-8", { fatal: true })

const parseJson = (bytes: Uint8Array): Either.Either<unknown, string> => {
  if (bytes.length === 0) return Either.left("The body is empty: send a JSON object describing the route.")
  try {
    return Either.right(JSON.parse(decoder.decode(bytes)))
  } catch (error) {
    const reason = error instanceof SyntaxError ? error.message : "the body is not UTF-8 text"
    return Either.left(`The body is not valid JSON (${reason}): send a JSON object describing the route.`)
  }
}

/** The limits a body is read under, with their answers built once. */
export interface BodyLimits {
  readonly maxBodyBytes: number
  readonly bodyTimeoutMillis: number
  readonly tooLarge: Response
  readonly timedOut: Response
}

export const bodyLimits = (maxBodyBytes: number, bodyTimeoutMillis: number): BodyLimits => ({
  maxBodyBytes,
  bodyTimeoutMillis,
  tooLarge: Answers.tooLarge(maxBodyBytes),
  timedOut: Answers.timedOut(bodyTimeoutMillis)
})

const CONSUMED_LOG = "route-registry: the request body was read before the routing API could read it: mount the " +
  "routing API before any body parser (express.json(), body-parser, a framework's content-type parsers)"

// The answer to a body that could not be read; a body read before the API could is the host's misconfiguration, logged.
const refused = (failure: BodyFailure, limits: BodyLimits): Effect.Effect<never, Refusal> =>
  failure === "Consumed"
    ? Effect.zipRight(Effect.logError(CONSUMED_LOG), refuse(Answers.BODY_CONSUMED))
    : refuse(failure === "TooLarge" ? limits.tooLarge : failure === "Timeout" ? limits.timedOut : Answers.INCOMPLETE)

/**
 * The parsed JSON body of `request`, or the answer that refuses it. A `Content-Length` over the limit is refused
 * before anything is read. Called inside an operation's `Effect.gen`, so a body reader that throws is a defect there.
 */
export const readJson = (
  request: Request,
  accepted: ReadonlyArray<string>,
  limits: BodyLimits
): Effect.Effect<unknown, Refusal> => {
  const contentType = request.header("content-type")
  if (!isAccepted(contentType, accepted)) {
    return refuse(Answers.unsupportedMediaType(contentType, accepted.join("\" or \"Content-Type: ")))
  }
  const declared = request.header("content-length")
  if (declared !== undefined && Number(declared) > limits.maxBodyBytes) return refuse(limits.tooLarge)
  return request.body(limits.maxBodyBytes, limits.bodyTimeoutMillis).pipe(
    Effect.catchAll((failure) => refused(failure, limits)),
    Effect.flatMap((bytes) =>
      Either.match(parseJson(bytes), {
        onLeft: (detail) => refuse(Answers.malformedJson(detail)),
        onRight: Effect.succeed
      })
    )
  )
}
