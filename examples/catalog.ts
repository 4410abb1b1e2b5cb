/**
 * The demo catalog of `npm start` (README's quick start): the handlers `echo` and `echo2` (which answer alike, each naming
 * itself, so a split can be watched from curl), the middleware `requestId` and `timing`, and `setHeader`, which takes a
 * config (`{ "name": <header name>, "value": <text up to 256 characters> }`) and sets that response header, as
 * Connect-style functions for the Node router. A host registers its own functions the same way.
 */
import { Schema } from "effect"
import { randomUUID } from "node:crypto"
import type { IncomingMessage, ServerResponse } from "node:http"
import * as Catalog from "route-registry/Catalog"
import * as Route from "route-registry/Route"
import * as RouterListener from "route-registry/RouterListener"

// The names of the middleware that ran for a request, in order, for `echo` to report.
const ran = new WeakMap<IncomingMessage, Array<string>>()

const record = (req: IncomingMessage, name: string) => {
  const names = ran.get(req)
  if (names === undefined) ran.set(req, [name])
  else names.push(name)
}

/** Sets `X-Request-Id`: the client's own when it sent a sane one, else a fresh UUID. */
const requestId: RouterListener.RouteFunction = (req, res, next) => {
  record(req, "requestId")
  const sent = req.headers["x-request-id"]
  res.setHeader("x-request-id", typeof sent === "string" && /^[\w.:-]{1,128}$/.test(sent) ? sent : randomUUID())
  next()
}

/** Sets `Server-Timing` with the time from this middleware to the answer's headers. */
const timing: RouterListener.RouteFunction = (req, res, next) => {
  record(req, "timing")
  const start = process.hrtime.bigint()
  const writeHead = res.writeHead.bind(res) as (...args: Array<unknown>) => ServerResponse
  res.writeHead = ((...args: Array<unknown>) => {
    const millis = Number(process.hrtime.bigint() - start) / 1e6
    res.setHeader("server-timing", `app;dur=${millis.toFixed(3)}`)
    return writeHead(...args)
  }) as typeof res.writeHead
  next()
}

/** The config of `setHeader`: an HTTP header name (RFC 9110 token) and a value of at most 256 characters of text. */
export const SetHeaderConfig = Schema.Struct({
  name: Schema.String.pipe(Schema.pattern(/^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,128}$/, {
    message: () => "must be a header name such as \"X-Team\" (letters, digits and !#$%&'*+.^_`|~-)"
  })),
  value: Schema.String.pipe(
    Schema.maxLength(256),
    Schema.pattern(/^[^\u0000-\u0008\u000a-\u001f\u007f]*$/, { message: () => "must be text without line breaks" })
  )
})

/** Sets the response header its config names, with its value. */
const setHeader = RouterListener.configured(SetHeaderConfig, (req, res, next, config) => {
  record(req, "setHeader")
  res.setHeader(config.name, config.value)
  next()
})

/**
 * A handler named `name` that answers 200 with the stored route, the request's parameters, the middleware that ran,
 * its own name as `handler`, and, for a route with a split, the split's choice (handler, key and bucket).
 */
const echoing = (name: string): RouterListener.RouteFunction => (req, res) => {
  const match = RouterListener.matchOf(req)!
  const split = match.split === undefined ? "" : `,"split":${JSON.stringify(match.split)}`
  const body = `{"route":${Route.toJson(match.route)},"params":${JSON.stringify(match.params)},"middleware":${
    JSON.stringify(ran.get(req) ?? [])
  },"handler":${JSON.stringify(name)}${split}}`
  res.writeHead(200, { "content-type": "application/json", "content-length": Buffer.byteLength(body) })
  res.end(body)
}

/** The functions, by name. */
export const functions: RouterListener.Functions = {
  handlers: { echo: echoing("echo"), echo2: echoing("echo2") },
  middleware: { requestId, timing, setHeader }
}

/** Their names and config schemas, for catalog checking (`ROUTER_STRICT=1`). */
export const names: Catalog.Names = Catalog.namesOf(functions)
