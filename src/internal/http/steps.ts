/**
 * The steps of `operations.ts` that the operations kept in modules of their own (the change log's, `history.ts`; the
 * fleet's, `followers.ts`) are made of. Typed once here, so that those modules import nothing of `operations.ts`.
 *
 * @internal
 */
import type { Effect } from "effect"
import type * as Authenticator from "../../Authenticator.js"
import type * as Content from "./content.js"
import type { Request, Response } from "./exchange.js"

/** The steps every such module takes; `Operation` names what telemetry may call its operations. */
export interface Steps<Core, Operation extends string> {
  /** Runs an operation's steps to its answer; `id` names the route whose answers it may change. */
  readonly run: (core: Core, steps: Effect.Effect<Response, any>, id?: string) => Effect.Effect<Response>
  readonly authorize: (
    core: Core,
    request: Request,
    scope: Authenticator.Scope,
    refusal: Response
  ) => Effect.Effect<Authenticator.Principal, any>
  /** The operation's answer, with its telemetry when it is on: `route` is its path as telemetry names it. */
  readonly served: (
    core: Core,
    request: Request,
    route: string,
    operation: Operation | "method_not_allowed",
    build: () => Effect.Effect<Response>
  ) => Effect.Effect<Response>
  readonly limits: (core: Core) => Content.BodyLimits
}
