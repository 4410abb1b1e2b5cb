/**
 * The request side of the route table: the path of a request target, its normalisation (RFC 3986
 * §6.2.2 and nothing more) and the decoding of parameter values. Plain functions over strings, called once per
 * request.
 *
 * @internal
 */

// Schemes as RFC 3986 §3.1 spells them, followed by "//": the absolute form of a request target (RFC 9112 §3.2.2).
const ABSOLUTE_FORM = /^[A-Za-z][A-Za-z0-9+.-]*:\/\//

/**
 * The path of a request target, up to its first `?`, with nothing else changed. An absolute-form target
 * (`http://host/a?b`) gives the path after its authority (`/` when it has none); a target of another form (`*`,
 * `host:443`) has no path and gives `undefined`.
 */
export const pathOf = (target: string): string | undefined => {
  if (target.charCodeAt(0) === 47 /* / */) {
    const query = target.indexOf("?")
    return query === -1 ? target : target.slice(0, query)
  }
  const scheme = ABSOLUTE_FORM.exec(target)
  if (scheme === null) return undefined
  const authority = scheme[0].length
  let start = authority
  while (start < target.length && target.charCodeAt(start) !== 47 && target.charCodeAt(start) !== 63 /* ? */) start++
  const query = target.indexOf("?", start)
  const end = query === -1 ? target.length : query
  return end === start ? "/" : target.slice(start, end)
}

const hexValue = (c: number): number => {
  if (c >= 48 && c <= 57) return c - 48
  const lower = c | 0x20
  return lower >= 97 && lower <= 102 ? lower - 87 : -1
}

const HEX_DIGITS = "0123456789ABCDEF"

// Bytes that RFC 3986 calls unreserved (ALPHA / DIGIT / "-" / "." / "_" / "~"): their escapes are decoded.
const UNRESERVED = (() => {
  const table = new Uint8Array(128)
  for (let c = 0; c < 128; c++) {
    const ch = String.fromCharCode(c)
    if (/[A-Za-z0-9\-._~]/.test(ch)) table[c] = 1
  }
  return table
})()

/**
 * The path normalised as RFC 3986 §6.2.2 says: the hex digits of every percent-escape in uppercase, and the escapes
 * of unreserved characters decoded. Nothing else changes (no dot segments removed, no case folded, no slash merged
 * or stripped). A `%` not followed by two hex digits makes the path malformed: its index is returned instead.
 */
export const normalise = (path: string): string | number => {
  let escape = path.indexOf("%")
  if (escape === -1) return path
  let out = ""
  let copied = 0
  while (escape !== -1) {
    const high = escape + 2 < path.length ? hexValue(path.charCodeAt(escape + 1)) : -1
    const low = high === -1 ? -1 : hexValue(path.charCodeAt(escape + 2))
    if (low === -1) return escape
    const byte = high * 16 + low
    const canonical = byte < 128 && UNRESERVED[byte] === 1
      ? String.fromCharCode(byte)
      : "%" + HEX_DIGITS[high] + HEX_DIGITS[low]
    if (canonical !== path.slice(escape, escape + 3)) {
      out += path.slice(copied, escape) + canonical
      copied = escape + 3
    }
    escape = path.indexOf("%", escape + 3)
  }
  return copied === 0 ? path : out + path.slice(copied)
}

/**
 * Why a path is malformed, for the `%` at `index`: a phrase for a problem document.
 */
export const badEscape = (index: number): string => `"%" at index ${index} is not followed by two hex digits`

/**
 * A parameter value: `path[start, end)` of a normalised path, percent-decoded as UTF-8; `undefined` when its bytes
 * are not UTF-8 (`decodeURIComponent` refuses invalid, overlong and surrogate sequences).
 */
export const decodeSegment = (path: string, start: number, end: number): string | undefined => {
  const segment = path.slice(start, end)
  if (segment.indexOf("%") === -1) return segment
  try {
    return decodeURIComponent(segment)
  } catch {
    return undefined
  }
}

/**
 * Why a path is malformed, for a parameter value that is not UTF-8: segments count from 1.
 */
export const notUtf8 = (segment: number): string => `segment ${segment} is not UTF-8 once percent-decoded`
