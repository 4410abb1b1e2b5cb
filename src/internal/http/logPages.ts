/**
 * The store's log as the change streams of one process read it: a page read once for every stream that asks for the
 * same one. After a registry restarts, its followers come back holding a handful of cursors between them (every
 * follower that was current holds the same one), and each would otherwise read the same page from the store in turn.
 *
 * A page with entries is kept (the last few, newest asked for first): the entries after a revision, up to the page's
 * last one, are every change between the two, and stay so, since revisions are taken in commit order. A page with no
 * entries is not kept (the log grows past it), nor is a read that failed.
 *
 * @internal
 */
import type { LogRead } from "../../RouteRepository.js"
import type { ReadLog } from "./changeStream.js"

export type { ReadLog }

/** How many pages are kept: each cohort of followers resuming at once holds one cursor. */
export const KEPT_PAGES = 8

/** `read`, with each page read once while it is kept. */
export const shared = (read: ReadLog, kept = KEPT_PAGES): ReadLog => {
  const pages = new Map<string, Promise<LogRead>>()
  const forget = (key: string, page: Promise<LogRead>) => {
    if (pages.get(key) === page) pages.delete(key)
  }
  return (revision, limit) => {
    const key = `${revision}/${limit}`
    const found = pages.get(key)
    if (found !== undefined) {
      // Asked for again: the last to be dropped.
      pages.delete(key)
      pages.set(key, found)
      return found
    }
    const page = read(revision, limit)
    pages.set(key, page)
    if (pages.size > kept) pages.delete(pages.keys().next().value!)
    page.then((read) => read.entries.length === 0 && forget(key, page), () => forget(key, page))
    return page
  }
}
