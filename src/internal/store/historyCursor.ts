/**
 * The cursor of a page of the change log: the last revision of the page, as base64url of its decimal digits, opaque
 * to clients and cheap to check. The HTTP core issues and reads it; a follower passes its own readers' cursors on to
 * the registry it follows, whose revisions they are.
 *
 * @internal
 */

export const encodeCursor = (revision: number): string => btoa(String(revision)).replace(/=+$/, "")

/** The revision of a cursor this API issued, else `undefined`. */
export const decodeCursor = (cursor: string): number | undefined => {
  if (!/^[A-Za-z0-9_-]+$/.test(cursor) || cursor.length % 4 === 1) return undefined
  const digits = atob(cursor.replace(/-/g, "+").replace(/_/g, "/"))
  const revision = Number(digits)
  return /^[1-9][0-9]{0,15}$/.test(digits) && Number.isSafeInteger(revision) && encodeCursor(revision) === cursor
    ? revision
    : undefined
}
