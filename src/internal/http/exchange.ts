/**
 * What the request core takes and gives, and where it is served: the types every adapter translates to and from.
 * `RoutingHandler` exports them; they live here so that the core's own files and telemetry need not import it.
 *
 * @internal
 */
import type { Effect } from "effect"
import type * as Problem from "../../Problem.js"
import { ROUTING_API_PATH } from "../route/grammar.js"

/** The collection path; a route lives at `${COLLECTION}/{id}`. */
export const COLLECTION = ROUTING_API_PATH

/** The prefix of one route's path: the collection and a slash. */
export const ITEM_PREFIX = `${COLLECTION}/`

/** Why a body could not be read in full. */
export type BodyFailure =
  /** More bytes arrived than the limit allows. */
  | "TooLarge"
  /** The client stopped sending before the body was complete. */
  | "Incomplete"
  /** The whole body did not arrive within the time allowed. */
  | "Timeout"
  /** Something else read the body first (a body parser mounted before the API): the host is misconfigured. */
  | "Consumed"

/** Reads a whole body under a size limit and a time limit. */
export type BodyReader = (maxBytes: number, timeoutMillis: number) => Effect.Effect<Uint8Array, BodyFailure>

/** What the core needs of a request. */
export interface Request {
  readonly method: string
  /** The path without the query string, as received (not decoded). */
  readonly path: string
  /** The query string, without the `?`, as received (empty when there is none). */
  readonly query: string
  /**
   * The path the API is mounted under (`"/admin"` for Express's `app.use("/admin", …)`), without a trailing slash;
   * `undefined` or `""` at the origin's root. `Location` and `Link` carry it, so they name what a client requests.
   */
  readonly base?: string | undefined
  /**
   * A header's value by lowercase name; `undefined` when absent. Several lines of one header come joined by ", ",
   * as the web `Headers` joins them (so two `Authorization` headers are seen, and refused).
   */
  readonly header: (name: string) => string | undefined
  /** The client's address (`host:port`) when the adapter knows it: what the fleet lists for a follower. */
  readonly remoteAddress?: string | undefined
  /**
   * Reads the whole body, failing with `"TooLarge"` as soon as more than `maxBytes` have arrived, and with
   * `"Timeout"` if it is not complete within `timeoutMillis`.
   */
  readonly body: BodyReader
}

/**
 * The connection an open answer writes into, as an adapter gives it. Every call is synchronous: the stream writes as
 * changes happen, and never waits on a write.
 */
export interface Sink {
  /**
   * Queues `chunk` on the connection. Bytes may be written into many connections at once: a transport never changes
   * them, and copies them before it hands them to code that might.
   */
  readonly write: (chunk: string | Uint8Array) => void
  /** Bytes written and not yet sent: what the connection holds for a client reading slower than it is written to. */
  readonly buffered: () => number
  /** Calls `resume` once, when the connection has sent (most of) what it holds. */
  readonly drained: (resume: () => void) => void
  /** Closes the connection at once, dropping what it holds. */
  readonly close: () => void
}

/**
 * The body of an answer that stays open (the change stream). The adapter writes the head, then calls `open` once
 * with its connection; `open` returns the function the adapter calls when the connection is gone (the client left,
 * or the server closes), after which nothing is written.
 */
export interface OpenBody {
  readonly open: (sink: Sink) => () => void
}

/**
 * What the core answers. `headers` holds lowercase names; `body` is JSON text (empty for none: 204 and 304). An
 * answer with `stream` has no `body` and no length: it is written by the stream for as long as the connection lasts.
 */
export interface Response {
  readonly status: number
  readonly headers: Readonly<Record<string, string>>
  readonly body: string
  /** The problem code of a problem document, so that no one has to parse the body to learn it. */
  readonly problem?: Problem.Code | undefined
  /** The body of an answer that stays open, written into the connection as it goes. */
  readonly stream?: OpenBody | undefined
}
