/**
 * The registry's recent changes (docs/dashboard.md, over `GET /v1/routing/history`): every route's changes, newest
 * first, a page at a time, each with who made it and when, and "Restore", which brings a deleted route back too.
 */
import { call, describe, type Entry, type EntryPage, routeName, type Session } from "./api.js"
import { debounce, h, pathCode, time } from "./dom.js"
import { changedNames } from "./fields.js"
import { restore } from "./history.js"

/** Entries in one page. */
const PAGE_SIZE = 25

/** A burst of changes (a sync of many routes) reads the newest page once. */
const REFRESH_PAUSE_MILLIS = 250

// A create has no `before`, a delete no `after`: every entry has one of them.
const routeOf = (entry: Entry) => (entry.after ?? entry.before)!

const actionOf = (entry: Entry): string => {
  if (entry.action === "restore") return `restore of revision ${entry.restoredFrom}`
  if (entry.before === null || entry.after === null) return entry.action
  return `${entry.action} (${changedNames(entry.before, entry.after).join(", ")})`
}

/**
 * The revision a deleted route had when it was deleted: the newest change of its log before the delete (a delete
 * itself cannot be restored: it is what left nothing), or the problem that says why there is none.
 */
const revisionBefore = async (session: Session, deleted: Entry): Promise<number | string> => {
  let cursor: string | undefined
  do {
    const answer = await call<EntryPage>(session, `/${deleted.routeId}/history`, { query: { cursor } })
    if (answer.value === undefined) return describe(answer.problem!)
    const found = answer.value.items.find((entry) => entry.revision < deleted.revision && entry.after !== null)
    if (found !== undefined) return found.revision
    cursor = answer.value.nextCursor ?? undefined
  } while (cursor !== undefined)
  return `The log no longer holds ${routeName(routeOf(deleted))} as it was before revision ${deleted.revision}.`
}

// What the person is asked before `revision` of the entry's route is restored.
const question = (entry: Entry, revision: number) =>
  entry.after === null
    ? {
      title: "Restore this deleted route?",
      text: `${
        routeName(entry.before!)
      } is stored again as it was when it was deleted (revision ${revision}), under a new id.`
    }
    : {
      title: "Restore this revision?",
      text: `${routeName(entry.after)} becomes what it was after revision ${revision}.`
    }

export const recentChanges = (session: Session): { element: HTMLElement; refresh: () => void } => {
  const body = h("tbody")
  const status = h("p", { role: "status" })
  const older = h("button", { type: "button", hidden: true }, "Older changes")
  const empty = h("p", { class: "summary" }, "No changes yet.")
  let cursor: string | null = null
  let newest = 0

  const restoreEntry = async (entry: Entry) => {
    const revision = entry.after === null ? await revisionBefore(session, entry) : entry.revision
    if (typeof revision === "string") {
      status.textContent = revision
      return
    }
    const said = await restore(session, entry.routeId, revision, question(entry, revision))
    if (said === undefined) return
    status.textContent = said
    refresh()
  }

  // Who and when go under what changed: four columns fit the side of a laptop's screen.
  const row = (entry: Entry) =>
    h(
      "tr",
      {},
      h("td", {}, String(entry.revision)),
      h(
        "td",
        { class: "change" },
        actionOf(entry),
        h("br"),
        h("small", {}, `by ${entry.actor ?? "(code)"}, `, time(entry.at))
      ),
      h("td", {}, pathCode(routeName(routeOf(entry)))),
      h(
        "td",
        { class: "row-actions" },
        session.writable ? h("button", { type: "button", onclick: () => void restoreEntry(entry) }, "Restore") : null
      )
    )

  const read = async (after: string | undefined): Promise<EntryPage | undefined> => {
    const answer = await call<EntryPage>(session, "/history", { query: { limit: String(PAGE_SIZE), cursor: after } })
    if (answer.value === undefined) status.textContent = describe(answer.problem!)
    return answer.value
  }

  const show = (page: EntryPage, rows: ReadonlyArray<Entry>, at: "start" | "end") => {
    const fragment = document.createDocumentFragment()
    for (const entry of rows) fragment.appendChild(row(entry))
    if (at === "start") body.prepend(fragment)
    else body.appendChild(fragment)
    newest = Math.max(newest, rows[0]?.revision ?? 0)
    if (at === "end") cursor = page.nextCursor
    older.hidden = cursor === null
    empty.hidden = body.rows.length > 0
  }

  // The newest page: its entries newer than those shown go on top, or, when the whole page is newer (a gap may
  // follow it), it replaces them.
  const newer = async () => {
    const page = await read(undefined)
    if (page === undefined) return
    const fresh = page.items.filter((entry) => entry.revision > newest)
    if (fresh.length === page.items.length) {
      body.replaceChildren()
      newest = 0
      cursor = null
      return show(page, page.items, "end")
    }
    show(page, fresh, "start")
  }
  const refresh = debounce(REFRESH_PAUSE_MILLIS, () => void newer())

  older.addEventListener("click", async () => {
    const page = await read(cursor ?? undefined)
    if (page !== undefined) show(page, page.items, "end")
  })
  void newer()

  const element = h(
    "section",
    { class: "changes" },
    h("h2", {}, "Recent changes"),
    status,
    // The region is the table's scrolling box, which the keyboard can reach: on a phone the table scrolls sideways.
    h(
      "div",
      { class: "scroll", tabindex: "0", role: "region", "aria-label": "Recent changes" },
      h(
        "table",
        { "aria-label": "Recent changes" },
        h(
          "thead",
          {},
          h(
            "tr",
            {},
            ...["Revision", "Change", "Route", "Actions"].map((name) => h("th", { scope: "col" }, name))
          )
        ),
        body
      )
    ),
    empty,
    older
  )
  return { element, refresh }
}
