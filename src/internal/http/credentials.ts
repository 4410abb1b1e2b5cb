/**
 * Reading the bearer credential of a request (RFC 6750 §2.1, RFC 9110 §11).
 *
 * @internal
 */
import { Redacted } from "effect"
import { isWellFormedToken } from "../../Authenticator.js"
import * as Answers from "./answers.js"
import type { Response } from "./exchange.js"

const isOws = (c: number) => c === 32 || c === 9

// The header value without surrounding optional whitespace: spaces and tabs only (RFC 9110 §5.6.3), not every
// Unicode space as String.prototype.trim would, so "\u00a0Bearer …" stays unauthenticated.
const trimOws = (value: string): string => {
  let start = 0
  let end = value.length
  while (start < end && isOws(value.charCodeAt(start))) start++
  while (end > start && isOws(value.charCodeAt(end - 1))) end--
  return start === 0 && end === value.length ? value : value.slice(start, end)
}

// Two Authorization headers reach the core joined by ", " (as the web `Headers` joins them, and as the Node adapters
// join `headersDistinct`). A comma followed by `scheme SP` starts a second credential; a comma inside one credential
// is followed by an auth-param (`name=`), never by a scheme and a space.
const SECOND_CREDENTIAL = /,[ \t]*[!#$%&'*+.^_`|~0-9A-Za-z-]+(?: |$)/

const BEARER = "bearer"

// `true` when `value` starts with "bearer" in any case: OR-ing 0x20 lowercases exactly the letters of "BEARER", and
// maps no other character onto one of "bearer" (nothing is allocated, as `toLowerCase` would).
const isBearer = (value: string): boolean => {
  for (let i = 0; i < 6; i++) if ((value.charCodeAt(i) | 0x20) !== BEARER.charCodeAt(i)) return false
  return true
}

// The last token an authenticator was done with at once, in its Redacted: a Redacted is an entry in Effect's registry
// of redacted values (a WeakMap), and making one per request was the library's costliest function in a CPU profile of a
// GET from memory in the core (docs/performance.md, "The read path over HTTP"), while a client sends one token request
// after request. It is lent to one request at a time (`credential` takes it, `release` gives it back), so that no two
// authenticators hold one Redacted: one that wipes its token never wipes another request's.
let idle: Redacted.Redacted<string> | undefined

// What a Redacted still holds: "" once an authenticator wiped it (`Redacted.unsafeWipe`), which no token equals.
const held = (redacted: Redacted.Redacted<string>): string => {
  try {
    return Redacted.value(redacted)
  } catch {
    return ""
  }
}

// Whether `token` is `kept`, in a time that depends on the length of `token` alone (as the static tokens are compared):
// how long a request takes does not tell how much of its token the previous request's shares.
const same = (token: string, kept: string): boolean => {
  let difference = token.length ^ kept.length
  for (let i = 0; i < token.length; i++) difference |= token.charCodeAt(i) ^ (kept.charCodeAt(i) | 0)
  return difference === 0
}

/**
 * The bearer token of an `Authorization` header, or the answer that refuses it. Several credentials are refused
 * rather than one picked: which one the client meant is unknowable.
 */
export const credential = (header: string | undefined): Redacted.Redacted<string> | Response => {
  if (header === undefined) return Answers.UNAUTHENTICATED
  const value = trimOws(header)
  if (value.includes(",") && SECOND_CREDENTIAL.test(value)) return Answers.SEVERAL_CREDENTIALS
  const space = value.indexOf(" ")
  // The scheme name is case-insensitive (RFC 9110 §11.1).
  if ((space === -1 ? value.length : space) !== 6 || !isBearer(value)) return Answers.UNAUTHENTICATED
  // Spaces only between scheme and token (RFC 9110 §11.4: 1*SP).
  let start = space + 1
  while (space !== -1 && value.charCodeAt(start) === 32) start++
  const token = space === -1 ? "" : value.slice(start)
  if (token === "") return Answers.EMPTY_CREDENTIAL
  // The idle token was well formed.
  if (idle !== undefined && same(token, held(idle))) {
    const lent = idle
    idle = undefined
    return lent
  }
  if (!isWellFormedToken(token)) return Answers.MALFORMED_CREDENTIAL
  return Redacted.make(token)
}

/** Gives back a token its authenticator is done with, for the next request that presents the same token. */
export const release = (token: Redacted.Redacted<string>): void => {
  idle = token
}
