/**
 * A split's choice for a request, read the same way by every router form and integration (docs/router.md: disabled routes and splits): the key from
 * a header, a cookie or a query parameter, and the override header. A route without a split costs one property read.
 *
 * @internal
 */
import type * as Route from "../../Route.js"
import * as Split from "../route/split.js"

/**
 * How a router form reads a request of its kind: a header's value by lowercase name, as the server gives it (each byte
 * of a value one character), and the request's target (a path or a URL, with its query string). A module-level
 * constant per form, so that a request pays for no closure.
 */
export interface Reader<Q> {
  readonly header: (request: Q, name: string) => string | ReadonlyArray<string> | null | undefined
  readonly target: (request: Q) => string
}

/** The reader of Node's requests (and of every request with Node's `headers` and `url`: Express, Fastify, Effect's). */
export const incoming: Reader<
  { readonly headers: Readonly<Record<string, unknown>>; readonly url?: string | undefined }
> = {
  header: (request, name) => request.headers[name] as string | ReadonlyArray<string> | undefined,
  target: (request) => request.url ?? "/"
}

// What a route's split reads, worked out once per route version: the key's source and name (a header's lowercase),
// the override's, and the split prepared for its buckets.
interface Reading {
  readonly source: Split.Source
  readonly name: string
  readonly override: string | undefined
  readonly prepared: Split.Prepared
}

// By route, not by split: a split without a group hashes in its route's id. A route is immutable, each version a new
// object, so a change of the split is a new entry and the old one goes with its route.
const readings = new WeakMap<Route.Route, Reading>()

const readingOf = (route: Route.Route, split: Split.Split): Reading => {
  let reading = readings.get(route)
  if (reading === undefined) {
    const colon = split.by.indexOf(":")
    const source = split.by.slice(0, colon) as Split.Source
    const name = split.by.slice(colon + 1)
    reading = {
      source,
      name: source === "header" ? name.toLowerCase() : name,
      override: split.override?.toLowerCase(),
      prepared: Split.prepare(split, route.id, route.handler)
    }
    readings.set(route, reading)
  }
  return reading
}

const utf8 = new TextDecoder("utf-8", { fatal: true })

/**
 * A header's value as docs/router.md reads it: its bytes as UTF-8 where valid, else as Latin-1. Servers give each byte as one
 * character (Latin-1); an ASCII value is returned as it is.
 */
export const headerText = (value: string): string => {
  for (let i = 0; i < value.length; i++) {
    if (value.charCodeAt(i) > 0x7f) {
      if (value.charCodeAt(i) > 0xff) return value // already text (a server that decoded it)
      try {
        return utf8.decode(Buffer.from(value, "latin1"))
      } catch {
        return value
      }
    }
  }
  return value
}

const single = (value: string | ReadonlyArray<string> | null | undefined): string | undefined =>
  value == null ? undefined : typeof value === "string" ? value : value.join(", ")

const isSpace = (c: number): boolean => c === 32 || c === 9

/**
 * A cookie's value as sent (not percent-decoded, its surrounding spaces trimmed), from a `Cookie` header; the first of
 * that name. Names are compared in place: only the value found is cut out.
 */
export const cookieValue = (header: string, name: string): string | undefined => {
  let start = 0
  while (start < header.length) {
    let end = header.indexOf(";", start)
    if (end < 0) end = header.length
    while (start < end && isSpace(header.charCodeAt(start))) start++
    if (header.startsWith(name, start)) {
      let eq = start + name.length
      while (eq < end && isSpace(header.charCodeAt(eq))) eq++
      if (header.charCodeAt(eq) === 61 /* = */ && eq < end) return header.slice(eq + 1, end).trim()
    }
    start = end + 1
  }
  return undefined
}

// A name or value of a query needs decoding when it holds "%" or "+".
const ENCODED = /[%+]/

/**
 * A query parameter's value decoded as `URLSearchParams` decodes it, from a request target; the first of that name.
 * A pair whose name and value need no decoding is read in place; any other is decoded by `URLSearchParams` itself.
 */
export const queryValue = (target: string, name: string): string | undefined => {
  const q = target.indexOf("?")
  if (q < 0) return undefined
  let end = target.indexOf("#", q)
  if (end < 0) end = target.length
  // As `new URLSearchParams(query)`, which drops a leading "?".
  let start = target.charCodeAt(q + 1) === 63 /* ? */ ? q + 2 : q + 1
  while (start < end) {
    let stop = target.indexOf("&", start)
    if (stop < 0 || stop > end) stop = end
    let eq = target.indexOf("=", start)
    if (eq < 0 || eq > stop) eq = stop
    const plain = eq - start === name.length && target.startsWith(name, start)
    if (plain || (eq > start && ENCODED.test(target.slice(start, eq)))) {
      const pair = target.slice(start, stop)
      if (plain && !ENCODED.test(pair)) return target.slice(Math.min(eq + 1, stop), stop)
      const params = new URLSearchParams(pair)
      if (params.has(name)) return params.get(name)!
    }
    start = stop + 1
  }
  return undefined
}

// The key a reading names in a request.
const keyOf = <Q>(reading: Reading, request: Q, reader: Reader<Q>): string | undefined => {
  switch (reading.source) {
    case "header": {
      const value = single(reader.header(request, reading.name))
      return value === undefined ? undefined : headerText(value)
    }
    case "cookie": {
      const cookie = single(reader.header(request, "cookie"))
      return cookie === undefined ? undefined : cookieValue(cookie, reading.name)
    }
    case "query":
      return queryValue(reader.target(request), reading.name)
  }
}

/**
 * The choice of `route`'s split for `request`, or `undefined` when the route has no split: then nothing of the request
 * is read and nothing made (one property read).
 */
export const choiceOf = <Q>(route: Route.Route, request: Q, reader: Reader<Q>): Split.Choice | undefined => {
  const split = route.split
  if (split === undefined) return undefined
  const reading = readingOf(route, split)
  const override = reading.override === undefined ? undefined : single(reader.header(request, reading.override))
  return Split.chooseWith(reading.prepared, keyOf(reading, request, reader), override)
}
