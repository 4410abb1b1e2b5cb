/**
 * A route's history (docs/dashboard.md task 5, over `GET /v1/routing/{id}/history` and `POST …/restore`): who changed
 * it, when, from what to what, side by side; any revision restored after confirming.
 */
import { call, describe, type Entry, type EntryPage, explain, type Route, routeName, type Session } from "./api.js"
import { confirm, dialog, h, time } from "./dom.js"
import { type RouteField, shownFields } from "./fields.js"

const text = (route: Route | null, field: RouteField) => route === null ? "—" : field.text(route) || "(none)"

// Before and after, field by field; a field that changed is marked.
const sideBySide = (entry: Entry) =>
  h(
    "table",
    { class: "diff", "aria-label": `Revision ${entry.revision}: before and after` },
    h(
      "thead",
      {},
      h(
        "tr",
        {},
        h("th", { scope: "col" }, "Field"),
        h("th", { scope: "col" }, "Before"),
        h("th", { scope: "col" }, "After")
      )
    ),
    h(
      "tbody",
      {},
      ...shownFields(entry.before, entry.after).map((field) => {
        const before = text(entry.before, field)
        const after = text(entry.after, field)
        return h(
          "tr",
          { class: before === after ? "" : "changed" },
          h("th", { scope: "row" }, field.label),
          h("td", {}, before),
          h("td", {}, after)
        )
      })
    )
  )

/**
 * Makes route `routeId` what it was right after `revision`, once the person confirms; resolves with the sentence
 * saying what happened, or undefined when they did not confirm. A deleted route comes back under a new id.
 */
export const restore = async (
  session: Session,
  routeId: string,
  revision: number,
  question: { readonly title: string; readonly text: string }
): Promise<string | undefined> => {
  if (!(await confirm(question.title, question.text))) return undefined
  const answer = await call<Route>(session, `/${routeId}/restore`, { method: "POST", body: { revision } })
  if (answer.value === undefined) return explain(session, answer.problem!)
  const as = answer.headers.get("registry-revision") ?? "(new)"
  return answer.status === 201
    ? `Restored revision ${revision} as revision ${as}: ${routeName(answer.value)} is stored again, under a new id.`
    : `Restored revision ${revision} as revision ${as}: ${routeName(answer.value)} is as it was then.`
}

export const open = (session: Session, route: Route): void => {
  const list = h("ol", { class: "history" })
  const status = h("p", { role: "status" })
  const more = h("button", { type: "button", hidden: true }, "Load more")
  let cursor: string | null = null
  const element = dialog(
    `History of ${routeName(route)}`,
    status,
    list,
    more,
    h("div", { class: "actions" }, h("button", { type: "button", onclick: () => element.close() }, "Close"))
  )

  const restoreEntry = async (entry: Entry) => {
    const said = await restore(session, route.id, entry.revision, {
      title: "Restore this revision?",
      text: `${routeName(route)} becomes what it was after revision ${entry.revision}.`
    })
    if (said === undefined) return
    status.textContent = said
    void load(undefined)
  }

  const item = (entry: Entry) =>
    h(
      "li",
      {},
      h(
        "p",
        { class: "entry" },
        h("strong", {}, `Revision ${entry.revision}`),
        ` · ${entry.action}`,
        entry.restoredFrom === undefined ? "" : ` of revision ${entry.restoredFrom}`,
        " · by ",
        entry.actor ?? "(code)",
        " · ",
        time(entry.at)
      ),
      sideBySide(entry),
      session.writable && entry.after !== null
        ? h("button", { type: "button", onclick: () => void restoreEntry(entry) }, "Restore")
        : null
    )

  const load = async (after: string | undefined) => {
    const answer = await call<EntryPage>(session, `/${route.id}/history`, { query: { cursor: after } })
    if (answer.value === undefined) {
      status.textContent = describe(answer.problem!)
      return
    }
    if (after === undefined) list.replaceChildren()
    for (const entry of answer.value.items) list.appendChild(item(entry))
    cursor = answer.value.nextCursor
    more.hidden = cursor === null
  }
  more.addEventListener("click", () => void load(cursor ?? undefined))
  void load(undefined)
}
