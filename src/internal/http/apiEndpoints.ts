/**
 * The routing API's `HttpApi` endpoints as the endpoint table declares them (`endpoints.ts`): each one's name, method
 * and path, and the problems it answers, typed for the typed client; `RoutingApi` adds what only a document says.
 *
 * @internal
 */
import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import type * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import type { Schema } from "effect"
import { PROBLEMS } from "./apiProblems.js"
import { ENDPOINTS, EVERY_ENDPOINT, type Name } from "./endpoints.js"

type Problems = typeof PROBLEMS

/** What the typed client decodes a problem of `Code` into. */
type ProblemOf<Code> = Code extends keyof Problems ? Schema.Schema.Type<Problems[Code]> : never

/** An endpoint of the table, as `HttpApi` names it: its path's `{id}` is `:id`. */
export const endpoint = <N extends Name>(name: N) =>
  HttpApiEndpoint.make(ENDPOINTS[name].method)(name, ENDPOINTS[name].path.replace("{id}", ":id") as `/${string}`)

const schemaOf = (code: string): Schema.Schema.Any => {
  const schema = (PROBLEMS as Record<string, Schema.Schema.Any>)[code]
  if (schema === undefined) throw new Error(`the problem ${code} has no schema in apiProblems.ts`)
  return schema
}

/** Adds the problems the table lists for endpoint `name`, in its order. */
export const problems = <N extends Name>(name: N) =>
<E extends HttpApiEndpoint.HttpApiEndpoint.Any>(
  endpoint: E
): HttpApiEndpoint.HttpApiEndpoint.AddError<E, ProblemOf<(typeof ENDPOINTS)[N]["problems"][number]>, never> =>
  ENDPOINTS[name].problems.reduce((added: any, code) => added.addError(schemaOf(code)), endpoint)

/** Adds the problems every endpoint may answer. */
export const everyEndpoint = <Id extends string, Endpoints extends HttpApiEndpoint.HttpApiEndpoint.Any, Error, R>(
  group: HttpApiGroup.HttpApiGroup<Id, Endpoints, Error, R>
): HttpApiGroup.HttpApiGroup<Id, Endpoints, Error | ProblemOf<(typeof EVERY_ENDPOINT)[number]>, R> =>
  EVERY_ENDPOINT.reduce((added: any, code) => added.addError(schemaOf(code)), group)
