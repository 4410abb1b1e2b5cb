/**
 * What an idempotency key keeps of a change set (`BatchOptions.idempotency`), the same in every store: the batch's
 * fingerprint, its answer or its refusal as JSON, and the bytes they count.
 *
 * @internal
 */
import { Schema } from "effect"
import { createHash } from "node:crypto"
import * as Route from "../../Route.js"
import type { BatchApplied, BatchOperation } from "../../RouteRepository.js"
import { BatchRefused } from "./errors.js"

const utf8 = new TextEncoder()

// Every object's keys sorted, undefined fields left out, at every depth: one text for equal values.
const canonical = (value: unknown): unknown =>
  Array.isArray(value)
    ? value.map(canonical)
    : typeof value === "object" && value !== null
    ? Object.fromEntries(
      Object.keys(value).sort().flatMap((key) => {
        const field = (value as Record<string, unknown>)[key]
        return field === undefined ? [] : [[key, canonical(field)]]
      })
    )
    : value

/**
 * `fingerprint` of a change set (`BatchOptions.idempotency`): its operations, as validated, and its description. Never
 * equal to a create's, so one key cannot stand for both.
 *
 * @since 0.5.0
 */
export const batchFingerprint = (operations: ReadonlyArray<BatchOperation>, description: string | undefined): string =>
  createHash("sha256").update(JSON.stringify(["batch", description ?? null, canonical(operations)]), "utf8")
    .digest("base64url")

/**
 * What a store keeps of an applied batch under its key: its answer as JSON, each route as the API answers it (with its
 * revision, the result's). Its length in UTF-8 counts against the principal's byte budget with `keySize`.
 *
 * @since 0.5.0
 */
export const batchAnswerJson = ({ batch, results, revision }: BatchApplied): string =>
  `{"batch":${JSON.stringify(batch)},"revision":${revision},"results":[${
    results.map((outcome) =>
      `{"status":${outcome.status},"route":${outcome.route === null ? "null" : Route.toJson(outcome.route)},` +
      `"revision":${outcome.revision}}`
    ).join(",")
  }]}`

/** `batchAnswerJson`'s bytes in UTF-8. */
export const answerSize = (json: string): number => utf8.encode(json).byteLength

const KEPT_REASONS: ReadonlySet<string> = new Set(["RouteNotFound", "RouteConflict", "PreconditionFailed"])

/**
 * Whether a batch's refusal is kept under its key, as a create's `RouteConflict` is: one decided on the stored routes
 * alone (not found, a conflict, `ifMatch`) for every operation it names. One naming an operation outside the writer's
 * path prefixes, or the method bound, leaves the key free: the writer's prefixes and the methods stored may change,
 * and a retry with the key then runs anew.
 */
export const keepsRefusal = ({ index, reason, refusals = [{ index, reason }] }: BatchRefused): boolean =>
  refusals.every((refusal) => KEPT_REASONS.has(refusal.reason._tag))

const encodeRefusal = Schema.encodeSync(BatchRefused)
const decodeRefusal = Schema.decodeUnknownSync(BatchRefused)

/**
 * What a store keeps of a batch's refusal under its key, beside `batchAnswerJson`'s answers of applied batches, and
 * counted as they are (`answerSize`).
 */
export const batchRefusalJson = (refused: BatchRefused): string =>
  `{"refused":${JSON.stringify(encodeRefusal(refused))}}`

/** The refusal a key kept (`batchRefusalJson`) given again, marked `replayed`; `undefined` for an applied batch's. */
export const keptRefusal = (json: string): BatchRefused | undefined =>
  json.startsWith(`{"refused":`)
    ? decodeRefusal({ ...(JSON.parse(json) as { refused: object }).refused, replayed: true })
    : undefined
