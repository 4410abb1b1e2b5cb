/**
 * A split's choice for a request, read the same way by every router form and integration (docs/router.md: disabled routes and splits): the key from
 * a header, a cookie or a query parameter, and the override header. A route without a split costs one property read.
 *
 * @internal
 */
import type * as Route from "../../Route.js"
import * as Split from "../route/split.js"

/** A request's headers, by lowercase name, as the server gives them (each byte of a value one character). */
export type Headers = (name: string) => string | ReadonlyArray<string> | null | undefined

// What a split reads, worked out once per split: the key's source and name (a header's lowercase), the override's.
interface Reading {
  readonly source: Split.Source
  readonly name: string
  readonly override: string | undefined
}

const readings = new WeakMap<Split.Split, Reading>()

const readingOf = (split: Split.Split): Reading => {
  let reading = readings.get(split)
  if (reading === undefined) {
    const colon = split.by.indexOf(":")
    const source = split.by.slice(0, colon) as Split.Source
    const name = split.by.slice(colon + 1)
    reading = { source, name: source === "header" ? name.toLowerCase() : name, override: split.override?.toLowerCase() }
    readings.set(split, reading)
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

/** A cookie's value as sent (not percent-decoded), from a `Cookie` header; the first of that name. */
export const cookieValue = (header: string, name: string): string | undefined => {
  let start = 0
  while (start < header.length) {
    let end = header.indexOf(";", start)
    if (end < 0) end = header.length
    const eq = header.indexOf("=", start)
    if (eq >= 0 && eq < end && header.slice(start, eq).trim() === name) return header.slice(eq + 1, end).trim()
    start = end + 1
  }
  return undefined
}

/** A query parameter's value decoded as `URLSearchParams` decodes it, from a request target; the first of that name. */
export const queryValue = (target: string, name: string): string | undefined => {
  const q = target.indexOf("?")
  if (q < 0) return undefined
  const hash = target.indexOf("#", q)
  return new URLSearchParams(target.slice(q + 1, hash < 0 ? undefined : hash)).get(name) ?? undefined
}

/** The key of `split` in a request. */
export const keyOf = (split: Split.Split, headers: Headers, target: string): string | undefined => {
  const { name, source } = readingOf(split)
  switch (source) {
    case "header": {
      const value = single(headers(name))
      return value === undefined ? undefined : headerText(value)
    }
    case "cookie": {
      const cookie = single(headers("cookie"))
      return cookie === undefined ? undefined : cookieValue(cookie, name)
    }
    case "query":
      return queryValue(target, name)
  }
}

/** The choice of `route`'s split for a request, or `undefined` when the route has no split. */
export const choiceOf = (route: Route.Route, headers: Headers, target: string): Split.Choice | undefined => {
  const split = route.split
  if (split === undefined) return undefined
  const overrideName = readingOf(split).override
  const override = overrideName === undefined ? undefined : single(headers(overrideName))
  return Split.choose(split, route.id, route.handler, keyOf(split, headers, target), override)
}
