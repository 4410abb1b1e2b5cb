/**
 * @internal
 */

/** The path of a request target, without its query; absolute-form targets (RFC 9112 §3.2.2) included. */
export const pathOf = (target: string): string => {
  const path = target.charCodeAt(0) === 47 /* / */ ? target : new URL(target, "http://localhost").pathname
  const query = path.indexOf("?")
  return query === -1 ? path : path.slice(0, query)
}
