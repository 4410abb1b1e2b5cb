/**
 * A route's history (docs/dashboard.md task 5, over `GET /v1/routing/{id}/history` and `POST …/restore`): who changed
 * it, when, from what to what, side by side; any revision restored after confirming.
 */
import { call, describe, type Route, type Session } from "./api.js"
import { confirm, dialog, h } from "./dom.js"

interface Entry {
  readonly revision: number
  readonly at: string
  readonly actor: string | null
  readonly action: "create" | "update" | "delete" | "restore"
  readonly routeId: string
  readonly before: Route | null
  readonly after: Route | null
  readonly restoredFrom?: number
}

interface Page {
  readonly items: ReadonlyArray<Entry>
  readonly nextCursor: string | null
}

const FIELDS = ["method", "path", "middleware", "handler"] as const

const text = (route: Route | null, name: typeof FIELDS[number]) =>
  route === null ? "—" : name === "middleware" ? route.middleware.join(", ") || "(none)" : route[name]

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
      ...FIELDS.map((name) => {
        const before = text(entry.before, name)
        const after = text(entry.after, name)
        return h(
          "tr",
          { class: before === after ? "" : "changed" },
          h("th", { scope: "row" }, name),
          h("td", {}, before),
          h("td", {}, after)
        )
      })
    )
  )

export const open = (session: Session, route: Route): void => {
  const list = h("ol", { class: "history" })
  const status = h("p", { role: "status" })
  const more = h("button", { type: "button", hidden: true }, "Load more")
  let cursor: string | null = null
  const element = dialog(
    `History of ${route.method} ${route.path}`,
    status,
    list,
    more,
    h("div", { class: "actions" }, h("button", { type: "button", onclick: () => element.close() }, "Close"))
  )

  const restore = async (entry: Entry) => {
    const yes = await confirm(
      "Restore this revision?",
      `${route.method} ${route.path} becomes what it was after revision ${entry.revision}.`
    )
    if (!yes) return
    const answer = await call<Route>(session, `/${route.id}/restore`, {
      method: "POST",
      body: { revision: entry.revision }
    })
    status.textContent = answer.value === undefined
      ? describe(answer.problem!)
      : `Restored revision ${entry.revision} as revision ${answer.headers.get("registry-revision") ?? "(new)"}.`
    if (answer.value !== undefined) void load(undefined)
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
        h("time", { datetime: entry.at }, entry.at)
      ),
      sideBySide(entry),
      session.writable && entry.after !== null
        ? h("button", { type: "button", onclick: () => void restore(entry) }, "Restore")
        : null
    )

  const load = async (after: string | undefined) => {
    const answer = await call<Page>(session, `/${route.id}/history`, { query: { cursor: after } })
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
