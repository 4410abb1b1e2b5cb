/**
 * The routes table: a page of the API's listing under the filters, more pages on demand, kept current by the change
 * stream (docs/dashboard.md, tasks 1 and 2).
 */
import { call, describe, type Route, type Session } from "./api.js"
import { debounce, type Field, field, h, pathCode, replace } from "./dom.js"
import { FIELDS, nameOf, same } from "./fields.js"
import type { Change } from "./stream.js"

/** Routes in one page: the first rows arrive with one request. */
const PAGE_SIZE = 200

/** The listing's filters (docs/http-api.md), by query parameter. */
const FILTERS = [
  ["method", "Filter by method", "exactly, such as GET"],
  ["pathPrefix", "Filter by path prefix", "such as /users"],
  ["handler", "Filter by handler", "its exact name"],
  ["middleware", "Filter by middleware", "one name in the list"]
] as const

type FilterName = typeof FILTERS[number][0] | "q"

export interface RowActions {
  readonly edit: (route: Route) => void
  readonly remove: (route: Route) => void
  readonly history: (route: Route) => void
  readonly copy: (route: Route) => void
}

interface Page {
  readonly items: ReadonlyArray<Route>
  readonly nextCursor: string | null
}

export class RouteList {
  readonly element: HTMLElement
  readonly #session: Session
  readonly #actions: RowActions
  readonly #fields = new Map<FilterName, Field>()
  readonly #body = h("tbody")
  readonly #summary = h("p", { class: "summary", "aria-live": "polite" })
  readonly #more = h("button", { type: "button", hidden: true }, "Load more")
  readonly #problem = h("p", { class: "problem", role: "alert" })
  /** The rows shown, by id, and their ids in the listing's order. */
  readonly #rows = new Map<string, { route: Route; row: HTMLTableRowElement }>()
  #ids: Array<string> = []
  #cursor: string | null = null
  #loading: AbortController | undefined

  constructor(session: Session, actions: RowActions, newRoute: HTMLElement | null) {
    this.#session = session
    this.#actions = actions
    const reload = debounce(150, () => void this.load())
    const filters = h("div", { class: "filters", role: "group", "aria-label": "Filters" })
    for (const [name, label, hint] of FILTERS) {
      const f = field(label, { name, oninput: reload }, hint)
      this.#fields.set(name, f)
      filters.appendChild(f.row)
    }
    const search = field("Search", { type: "search", name: "q", oninput: reload }, "path, handler or middleware")
    this.#fields.set("q", search)
    filters.appendChild(search.row)
    this.#more.addEventListener("click", () => void this.load(this.#cursor ?? undefined))
    this.element = h(
      "section",
      { class: "routes", "aria-labelledby": "routes-heading" },
      h("div", { class: "heading" }, h("h2", { id: "routes-heading" }, "Routes"), newRoute),
      filters,
      this.#problem,
      // On a narrow screen the table scrolls sideways in its own box, not the page (its buttons take the focus).
      h(
        "div",
        { class: "scroll" },
        h(
          "table",
          { "aria-label": "Routes" },
          h(
            "thead",
            {},
            h(
              "tr",
              {},
              h("th", { scope: "col" }, "Method"),
              h("th", { scope: "col" }, "Path"),
              h("th", { scope: "col" }, "Middleware"),
              h("th", { scope: "col" }, "Handler"),
              h("th", { scope: "col" }, "Actions")
            )
          ),
          this.#body
        )
      ),
      this.#summary,
      this.#more
    )
  }

  #filters(): Partial<Record<FilterName, string>> {
    const values: Partial<Record<FilterName, string>> = {}
    for (const [name, f] of this.#fields) if (f.input.value !== "") values[name] = f.input.value
    return values
  }

  /** The first page under the filters, or the page after `cursor`. */
  load(cursor?: string): Promise<void> {
    this.#loading?.abort()
    const loading = (this.#loading = new AbortController())
    return this.#fetch(cursor, loading.signal).catch((error: unknown) => {
      if ((error as Error).name !== "AbortError") throw error
    })
  }

  async #fetch(cursor: string | undefined, signal: AbortSignal): Promise<void> {
    const answer = await call<Page>(this.#session, "", {
      query: { ...this.#filters(), limit: String(PAGE_SIZE), cursor },
      signal
    })
    if (signal.aborted) return
    for (const f of this.#fields.values()) {
      f.problem.textContent = ""
      f.input.removeAttribute("aria-invalid")
    }
    this.#problem.textContent = ""
    if (answer.value === undefined) {
      const problem = answer.problem!
      let shown = false
      for (const issue of problem.errors ?? []) {
        const f = this.#fields.get(issue.path as FilterName)
        if (f === undefined) continue
        f.problem.textContent = issue.message
        f.input.setAttribute("aria-invalid", "true")
        shown = true
      }
      if (!shown) this.#problem.textContent = describe(problem)
      return
    }
    if (cursor === undefined) this.#clear()
    const rows = document.createDocumentFragment()
    for (const route of answer.value.items) {
      if (this.#rows.has(route.id)) continue
      const row = this.#row(route)
      this.#rows.set(route.id, { route, row })
      this.#ids.push(route.id)
      rows.appendChild(row)
    }
    this.#body.appendChild(rows)
    this.#cursor = answer.value.nextCursor
    this.#summarise()
  }

  #clear() {
    this.#rows.clear()
    this.#ids = []
    this.#body.replaceChildren()
  }

  #summarise() {
    const n = this.#ids.length
    this.#summary.textContent = `${n} route${n === 1 ? "" : "s"} shown${this.#cursor === null ? "" : ", more to load"}.`
    this.#more.hidden = this.#cursor === null
  }

  #row(route: Route): HTMLTableRowElement {
    const button = (name: string, action: (route: Route) => void) =>
      h("button", { type: "button", onclick: () => action(this.#rows.get(route.id)?.route ?? route) }, name)
    const writable = this.#session.writable
    return h(
      "tr",
      { "data-id": route.id },
      h("td", { class: "method" }, route.method),
      h("td", { class: "path" }, pathCode(route.path)),
      h("td", {}, route.middleware.map(nameOf).join(", ")),
      h("td", {}, route.handler),
      h(
        "td",
        { class: "row-actions" },
        writable ? button("Edit", this.#actions.edit) : null,
        writable ? button("Delete", this.#actions.remove) : null,
        button("History", this.#actions.history),
        button("Copy as curl", this.#actions.copy)
      )
    )
  }

  // Whether a route belongs in the table under the current filters (the listing's rules, docs/http-api.md).
  #matches(route: Route): boolean {
    const f = this.#filters()
    if (f.method !== undefined && route.method !== f.method) return false
    if (f.pathPrefix !== undefined && !route.path.startsWith(f.pathPrefix)) return false
    if (f.handler !== undefined && route.handler !== f.handler) return false
    if (f.middleware !== undefined && !route.middleware.some((entry) => nameOf(entry) === f.middleware)) return false
    const q = f.q
    if (
      q !== undefined &&
      !(route.path.includes(q) || route.handler.includes(q) ||
        route.middleware.some((entry) => nameOf(entry).includes(q)))
    ) {
      return false
    }
    return true
  }

  /** A route created or changed here or elsewhere: shown where the listing would show it, or taken out. */
  upsert(route: Route) {
    const shown = this.#rows.get(route.id)
    if (!this.#matches(route)) return shown === undefined ? undefined : this.remove(route.id)
    if (shown !== undefined) {
      const row = this.#row(route)
      shown.row.replaceWith(row)
      this.#rows.set(route.id, { route, row })
      return
    }
    // Ids are in creation order: a route past the last one loaded comes with a later page.
    const last = this.#ids[this.#ids.length - 1]
    if (this.#cursor !== null && last !== undefined && route.id > last) return
    let at = this.#ids.length
    while (at > 0 && this.#ids[at - 1]! > route.id) at--
    const row = this.#row(route)
    this.#body.insertBefore(row, this.#rows.get(this.#ids[at]!)?.row ?? null)
    this.#ids.splice(at, 0, route.id)
    this.#rows.set(route.id, { route, row })
    this.#summarise()
  }

  remove(id: string) {
    const shown = this.#rows.get(id)
    if (shown === undefined) return
    shown.row.remove()
    this.#rows.delete(id)
    this.#ids.splice(this.#ids.indexOf(id), 1)
    this.#summarise()
  }

  apply(change: Change) {
    if (change._tag === "upsert") this.upsert(change.route)
    else this.remove(change.id)
  }

  /** Every route as the stream sent it: rows gone meanwhile leave, changed ones are redrawn, new ones come in. */
  reconcile(routes: ReadonlyMap<string, Route>) {
    for (const id of [...this.#ids]) if (!routes.has(id)) this.remove(id)
    // Past the last row loaded, routes come with a later page: of 10,000 routes, only the loaded few are looked at.
    const last = this.#cursor === null ? undefined : this.#ids[this.#ids.length - 1]
    for (const route of routes.values()) {
      if (last !== undefined && route.id > last) continue
      const shown = this.#rows.get(route.id)
      if (shown === undefined || !FIELDS.every((field) => same(shown.route, route, field.name))) this.upsert(route)
    }
  }

  /** Shows a problem above the table. */
  report(text: string) {
    replace(this.#problem, text)
  }
}
