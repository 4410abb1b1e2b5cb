/**
 * What the library says about a URL it was given: the URL as it may be shown (never with its password), and the
 * warning owed when a bearer token would cross the network in clear text.
 *
 * @internal
 */

// This machine: a token sent here over http:// never crosses a network.
const LOOPBACK = /^(localhost|127(\.\d{1,3}){3}|\[::1\])$/i

const isLoopback = (hostname: string): boolean => LOOPBACK.test(hostname) || hostname.endsWith(".localhost")

/** `url` with its password, if it holds one, shown as `***`: for every log line and error message. */
export const redacted = (url: string): string => {
  if (!URL.canParse(url)) return url
  const parsed = new URL(url)
  if (parsed.password === "") return url
  parsed.password = "***"
  return parsed.href
}

/**
 * Hides the password of `url` wherever a text quotes the URL (an error message of the platform's): its `:password@`
 * shown as `:***@`; `text` unchanged when `url` holds none.
 */
export const hidingPassword = (url: string) => (text: string): string => {
  const password = URL.canParse(url) ? new URL(url).password : ""
  if (password === "") return text
  return text.replaceAll(`:${password}@`, ":***@").replaceAll(`:${decodeURIComponent(password)}@`, ":***@")
}

/**
 * The warning for a bearer token sent to `url` over plain `http://` to a host other than this machine (anyone on the
 * path can read the token and use it); `undefined` when none is owed. `what` names where the URL came from.
 */
export const cleartextWarning = (url: string, what: string): string | undefined => {
  if (!URL.canParse(url)) return undefined
  const parsed = new URL(url)
  if (parsed.protocol !== "http:" || isLoopback(parsed.hostname)) return undefined
  return `${what} ${redacted(url)} is plain http:// to another host: the bearer token crosses the network ` +
    "unencrypted, readable by anyone on the way; use https://"
}
