/**
 * The parts of the routing API's OpenAPI document that the HttpApi model cannot express: each response's description
 * and headers, problem responses under application/problem+json only, the create's Idempotency-Key header, and the
 * dryRun parameter of the writes whose typed client would otherwise need it.
 *
 * @internal
 */
import * as Problem from "../../Problem.js"
import * as Limits from "../limits.js"
import { REALM } from "./answers.js"
import { COLLECTION } from "./exchange.js"
import * as Idempotency from "./idempotency.js"

/** A problem code in PascalCase, as its schema's identifier spells it (`RouteNotFoundProblem`). */
export const pascal = (code: string) => code.replace(/(^|_)([a-z])/g, (_, __, c: string) => c.toUpperCase())

interface Header {
  readonly description: string
  readonly required?: boolean
  readonly schema: Record<string, unknown>
}

const string = { type: "string" }

const ETag: Header = {
  description: "The route's version, a strong entity tag; it changes whenever the route changes, and only then.",
  required: true,
  schema: string
}

// The header of every write's answer (docs/history.md), absent on a dry run.
const revision: Record<string, Header> = {
  "Registry-Revision": {
    description: "The revision of this change in the store's change log; absent on a dry run.",
    schema: { type: "string", pattern: "^[1-9][0-9]*$" }
  }
}

const nextPage: Header = {
  description: "Present exactly when nextCursor is not null: the next page (RFC 8288), with the same filters and " +
    "limit, as a relative reference with rel=\"next\".",
  schema: string
}

// Success answers by operation: their description and headers.
const successes: Record<string, Record<string, { description: string; headers?: Record<string, Header> }>> = {
  "routing.list": {
    "200": {
      description: "A page of routes.",
      headers: { Link: nextPage }
    }
  },
  "routing.changes": {
    "200": {
      description: "The change stream, open until the client leaves (or falls too far behind and is cut off).",
      headers: {
        "Cache-Control": { description: "no-cache", required: true, schema: string },
        "X-Accel-Buffering": { description: "no: a proxy must pass events on as they come.", schema: string },
        "Follower-Stream": {
          description: "With Follower-Name: the stream's id, which the follower's reports name.",
          schema: string
        }
      }
    }
  },
  "routing.followers": {
    "200": {
      description: "The fleet: every follower of this process and where it stands, a page at a time.",
      headers: { Link: nextPage }
    }
  },
  "routing.report": { "204": { description: "The report is taken: no body." } },
  "routing.match": {
    "200": { description: "The decision of this process's route table, with every other route matching the path." }
  },
  "routing.create": {
    "201": {
      description: "The stored route.",
      headers: {
        Location: {
          description: `${COLLECTION}/{id} of the created route.`,
          required: true,
          schema: { type: "string", format: "uri-reference" }
        },
        ETag,
        ...revision,
        [Idempotency.REPLAYED_HEADER]: {
          description: "true when this is the first answer to the request's Idempotency-Key, given again.",
          schema: { type: "string", enum: ["true"] }
        }
      }
    }
  },
  "routing.batch": {
    "200": {
      description: "One result per operation, in order.",
      headers: {
        ...revision,
        [Idempotency.REPLAYED_HEADER]: {
          description: "true when this is the first answer to the request's Idempotency-Key, given again.",
          schema: { type: "string", enum: ["true"] }
        }
      }
    }
  },
  "routing.history": { "200": { description: "A page of the change log, newest first.", headers: { Link: nextPage } } },
  "routing.routeHistory": {
    "200": { description: "A page of the route's change log, newest first.", headers: { Link: nextPage } }
  },
  "routing.restore": {
    "200": { description: "The route, as it was right after that revision.", headers: { ETag, ...revision } },
    "201": {
      description: "The deleted route, created again with a new id and createdAt.",
      headers: {
        Location: { description: `${COLLECTION}/{id} of the route.`, required: true, schema: string },
        ETag,
        ...revision
      }
    }
  },
  "routing.get": {
    "200": { description: "The stored route.", headers: { ETag } },
    "304": { description: "If-None-Match names the route's current ETag: no body.", headers: { ETag } }
  },
  "routing.update": { "200": { description: "The updated route.", headers: { ETag, ...revision } } },
  "routing.delete": { "204": { description: "The route is deleted: no body.", headers: revision } }
}

// The request header of a create and of a batch (the HttpApi model would make the typed client's callers pass it).
const idempotencyKey = {
  name: Idempotency.HEADER,
  in: "header",
  required: false,
  description:
    "Makes the create or the batch safe to retry (draft-ietf-httpapi-idempotency-key-header): a key of 1 to " +
    `${Idempotency.MAX_KEY_LENGTH} printable ASCII characters as a Structured Field string, such as ` +
    `${Idempotency.EXAMPLE} (a bare token is accepted too). The first answer (a create's 201 or 409 route_conflict, a batch's 200) is ` +
    `remembered for the principal for ${
      Limits.DEFAULT_IDEMPOTENCY_KEY_EXPIRY_SECONDS / 3600
    } hours by default: the same key ` +
    "with the same body gets it again, marked Idempotency-Replayed: true; with another body the answer is 422 " +
    "idempotency_key_reused, and while the first request is running 409 idempotency_key_in_use. A client holds at " +
    `most ${Limits.DEFAULT_IDEMPOTENCY_KEYS_PER_PRINCIPAL.toLocaleString("en-US")} keys (${
      Limits.describeBytes(Limits.DEFAULT_IDEMPOTENCY_KEY_BYTES_PER_PRINCIPAL)
    }) at once by default: a new key past that is 429 too_many_idempotency_keys, with Retry-After.`,
  schema: { type: "string", minLength: 1, maxLength: 2 * Idempotency.MAX_KEY_LENGTH + 2 },
  example: Idempotency.EXAMPLE
}

// Error answers by status: the headers they carry (the Allow of a 405 is added per path).
const errorHeaders: Record<string, Record<string, Header>> = {
  "400": {
    "WWW-Authenticate": {
      description: `With invalid_request only: ${REALM}, error="invalid_request".`,
      schema: string
    }
  },
  "401": {
    "WWW-Authenticate": {
      description: `${REALM}, with error="invalid_token" for invalid_token.`,
      required: true,
      schema: string
    }
  },
  "403": {
    "WWW-Authenticate": {
      description: `${REALM}, error="insufficient_scope", with the scope needed.`,
      required: true,
      schema: string
    }
  },
  "408": { Connection: { description: "close: the rest of the body is not read.", required: true, schema: string } },
  "413": { Connection: { description: "close: the rest of the body is not read.", required: true, schema: string } },
  "429": {
    "Retry-After": {
      description: "Seconds until the client's oldest Idempotency-Key expires, freeing a place for a new one.",
      required: true,
      schema: { type: "integer", minimum: 1 }
    }
  },
  "503": {
    "Retry-After": {
      description: "Seconds to wait before retrying.",
      required: true,
      schema: { type: "integer", minimum: 0 }
    }
  }
}

const codeOf = (ref: string) =>
  (Object.keys(Problem.codes) as Array<Problem.Code>).find((code) => ref.endsWith(`/${pascal(code)}Problem`))

// A problem response: its codes, one line each, under application/problem+json only (the model falls back to
// application/json for unions, and lists the stock HttpApiDecodeError, which this API never sends).
const problemResponse = (response: Record<string, any>, status: string, allow: string) => {
  const schema = Object.values<Record<string, any>>(response.content ?? {})[0]?.schema ?? {}
  const refs: Array<string> = (schema.anyOf ?? [schema]).map((s: { $ref: string }) => s.$ref)
    .filter((ref: string) => codeOf(ref) !== undefined)
  response.content = {
    [Problem.CONTENT_TYPE]: {
      schema: refs.length === 1 ? { $ref: refs[0] } : { anyOf: refs.map(($ref) => ({ $ref })) }
    }
  }
  response.description = refs.map((ref) => `${codeOf(ref)}: ${Problem.descriptions[codeOf(ref)!]}`).join("\n")
  const headers = status === "405"
    ? {
      Allow: {
        description: "The methods served on this path.",
        required: true,
        schema: { type: "string", enum: [allow] }
      }
    }
    : errorHeaders[status]
  if (headers !== undefined) response.headers = headers
}

// `?dryRun=true` on a write, as the restore declares it in the HttpApi model (`DryRunParams`); the other writes get it
// here, since in their model the typed client's callers would have to pass it.
const dryRun = (spec: Record<string, any>) =>
  spec.paths[`${COLLECTION}/{id}/restore`].post.parameters.find((parameter: { name: string }) =>
    parameter.name === "dryRun"
  )

// Completes the generated document: license, contact and servers, each response's description and headers, and
// problem responses under application/problem+json only. A 405's Allow lists the path's operations, in the order
// the group declares them.
export const transform = (spec: Record<string, any>): Record<string, any> => {
  spec.info.license = { name: "MIT", identifier: "MIT" }
  spec.info.contact = { name: "route-registry", url: "https://github.com/route-registry/route-registry" }
  spec.servers = [{ url: "/", description: "The origin of the host that mounts the API." }]
  for (const item of Object.values<Record<string, any>>(spec.paths)) {
    const allow = Object.keys(item).map((method) => method.toUpperCase()).join(", ")
    for (const operation of Object.values<Record<string, any>>(item)) {
      for (const [status, response] of Object.entries<Record<string, any>>(operation.responses)) {
        const success = successes[operation.operationId]?.[status]
        if (success !== undefined) Object.assign(response, success)
        else problemResponse(response, status, allow)
      }
      if (operation.operationId === "routing.create") operation.parameters = [idempotencyKey, dryRun(spec)]
      if (operation.operationId === "routing.batch") operation.parameters = [idempotencyKey, ...operation.parameters]
      if (operation.operationId === "routing.update" || operation.operationId === "routing.delete") {
        operation.parameters = [...(operation.parameters ?? []), dryRun(spec)]
      }
      // A patch body is also accepted as JSON Merge Patch (RFC 7396), the same schema; the client sends JSON.
      if (operation.operationId === "routing.update") {
        const content = operation.requestBody.content
        content["application/merge-patch+json"] = content["application/json"]
      }
    }
  }
  delete spec.components.schemas.HttpApiDecodeError
  delete spec.components.schemas.Issue
  delete spec.components.schemas.PropertyKey
  return spec
}
