/**
 * The routes table: a page of the API's listing under the filters, more pages on demand, kept current by the change
 * stream (docs/dashboard.md, tasks 1 and 2).
 */
import { call, describe, type Route, type Session } from "./api.js"
import * as Batch from "./batch.js"
import { namesOf } from "./controls.js"
import { debounce, dialog, type Field, field, h, pathCode, replace } from "./dom.js"
import { FIELDS, middlewareText, nameOf, same } from "./fields.js"
import type { Change } from "./stream.js"

/** Routes in one page: the first rows arrive with one request. */
const PAGE_SIZE = 200

/** The listing's filters (docs/http-api.md), by query parameter. */
const FILTERS = [
  ["method", "Filter by method", "exactly, such as GET"],
  ["pathPrefix", "Filter by path prefix", "such as /users"],
  ["handler", "Filter by handler", "its exact name"],
  ["middleware", "Filter by middleware", "one name in the list"],
  ["tag", "Filter by tag", "one tag, such as beta"]
] as const

type FilterName = typeof FILTERS[number][0] | "q" | "enabled"

/** The state filter's choices: the listing's `enabled` parameter, or none. */
const STATES = [["", "All"], ["true", "Enabled"], ["false", "Disabled"]] as const

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
  /** The routes selected for an action on several at once, by id. */
  readonly #selected = new Set<string>()
  readonly #all = h("input", { type: "checkbox", "aria-label": "Select all" })
  readonly #chosen = h("span", { class: "summary", role: "status" })
  readonly #bulk: ReadonlyArray<HTMLButtonElement>
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
    const state = field("Filter by state", { name: "enabled", oninput: reload }, "enabled or disabled routes", STATES)
    this.#fields.set("enabled", state)
    filters.appendChild(state.row)
    const search = field(
      "Search",
      { type: "search", name: "q", oninput: reload },
      "path, handler, middleware, description or tags"
    )
    this.#fields.set("q", search)
    filters.appendChild(search.row)
    const writable = session.writable
    this.#all.addEventListener("change", () => {
      for (const id of this.#ids) this.#select(id, this.#all.checked)
      this.#count()
    })
    this.#bulk = [
      h("button", { type: "button", onclick: () => void this.#patchSelected({ enabled: true }, "Enabled") }, "Enable"),
      h(
        "button",
        { type: "button", onclick: () => void this.#patchSelected({ enabled: false }, "Disabled") },
        "Disable"
      ),
      h("button", { type: "button", onclick: () => this.#retag() }, "Retag"),
      h("button", {
        type: "button",
        onclick: () => {
          for (const id of [...this.#selected]) this.#select(id, false)
          this.#count()
        }
      }, "Clear selection")
    ]
    // Actions on the selected routes, each sent as one change set: all of them change, or none.
    const bulk = writable
      ? h("div", { class: "bulk", role: "group", "aria-label": "Selected routes" }, this.#chosen, ...this.#bulk)
      : null
    this.#more.addEventListener("click", () => void this.load(this.#cursor ?? undefined))
    this.element = h(
      "section",
      { class: "routes", "aria-labelledby": "routes-heading" },
      h("div", { class: "heading" }, h("h2", { id: "routes-heading" }, "Routes"), newRoute),
      filters,
      bulk,
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
              writable ? h("th", { scope: "col", class: "select" }, this.#all) : null,
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
    this.#count()
  }

  #select(id: string, on: boolean) {
    if (on) this.#selected.add(id)
    else this.#selected.delete(id)
    const box = this.#rows.get(id)?.row.querySelector<HTMLInputElement>("input[type=checkbox]")
    if (box) box.checked = on
  }

  // What is selected, said; the actions wait for a selection.
  #count() {
    const n = this.#selected.size
    this.#chosen.textContent = n === 0 ? "No route selected." : `${n} route${n === 1 ? "" : "s"} selected.`
    for (const button of this.#bulk) button.disabled = n === 0
    this.#all.checked = n > 0 && n === this.#ids.length
  }

  #selectedRoutes(): Array<Route> {
    return this.#ids.filter((id) => this.#selected.has(id)).map((id) => this.#rows.get(id)!.route)
  }

  /** The same change to every selected route, as one change set; the rows show what the registry answered. */
  async #patchSelected(patch: Record<string, unknown>, done: string) {
    const routes = this.#selectedRoutes()
    if (routes.length > Batch.MAX_OPERATIONS) {
      this.report(`Select at most ${Batch.MAX_OPERATIONS.toLocaleString("en")} routes: one change set takes no more.`)
      return
    }
    this.#chosen.textContent = `Saving ${routes.length} route${routes.length === 1 ? "" : "s"}…`
    const answer = await Batch.patchAll(this.#session, routes, patch)
    if (answer.value === undefined) {
      this.#count()
      replace(this.#problem, ...Batch.explain(answer.problem!, routes).map((line) => h("span", {}, line, h("br"))))
      return
    }
    this.#problem.textContent = ""
    for (const result of answer.value.results) if (result.route !== null) this.upsert(result.route)
    this.#count()
    this.#chosen.textContent = `${done} ${routes.length} route${routes.length === 1 ? "" : "s"} in one change set.`
  }

  // The selected routes' tags replaced by the ones given (none removes them), after the person enters them.
  #retag() {
    const n = this.#selected.size
    const tags = field(
      "Tags",
      {},
      "separated by commas; they replace each selected route's tags, and none removes them"
    )
    const element = dialog(
      `Retag ${n} route${n === 1 ? "" : "s"}`,
      h(
        "form",
        {
          onsubmit: (event: Event) => {
            event.preventDefault()
            element.close()
            void this.#patchSelected({ tags: namesOf(tags.input.value) }, "Retagged")
          }
        },
        tags.row,
        h(
          "div",
          { class: "actions" },
          h("button", { type: "submit", class: "primary" }, "Save"),
          h("button", { type: "button", onclick: () => element.close() }, "Cancel")
        )
      )
    )
    tags.input.focus()
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
    this.#selected.clear()
    this.#rows.clear()
    this.#ids = []
    this.#body.replaceChildren()
  }

  #summarise() {
    const n = this.#ids.length
    this.#summary.textContent = `${n} route${n === 1 ? "" : "s"} shown${this.#cursor === null ? "" : ", more to load"}.`
    this.#more.hidden = this.#cursor === null
    this.#count()
  }

  #row(route: Route): HTMLTableRowElement {
    const button = (name: string, action: (route: Route) => void) =>
      h("button", { type: "button", onclick: () => action(this.#rows.get(route.id)?.route ?? route) }, name)
    const writable = this.#session.writable
    const disabled = route.enabled === false
    const conditions = FIELDS.find((f) => f.name === "when")!.text(route)
    const split = FIELDS.find((f) => f.name === "split")!.text(route)
    return h(
      "tr",
      { "data-id": route.id, class: disabled ? "disabled" : null },
      writable
        ? h(
          "td",
          { class: "select" },
          h("input", {
            type: "checkbox",
            "aria-label": `Select ${route.method} ${route.path}`,
            checked: this.#selected.has(route.id),
            onchange: (event: Event) => {
              this.#select(route.id, (event.target as HTMLInputElement).checked)
              this.#count()
            }
          })
        )
        : null,
      h("td", { class: "method" }, route.method),
      h(
        "td",
        { class: "path" },
        pathCode(route.path),
        conditions === "" ? null : h("small", { class: "detail" }, `when ${conditions}`),
        route.description ? h("small", { class: "detail" }, route.description) : null,
        (route.tags ?? []).length === 0
          ? null
          : h("span", { class: "tags" }, ...(route.tags ?? []).map((tag) => h("span", { class: "tag" }, tag)))
      ),
      h("td", {}, route.middleware.map(middlewareText).join(", ")),
      h(
        "td",
        {},
        route.handler,
        split === "" ? null : h("small", { class: "detail" }, `split ${split}`),
        // Said in words, not by its colour alone: a disabled route is answered 503 route_disabled.
        disabled ? h("span", { class: "badge", title: "Disabled: its requests are answered 503" }, "disabled") : null
      ),
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
    const names = route.middleware.map(nameOf)
    if (f.middleware !== undefined && !names.includes(f.middleware)) return false
    const tags = route.tags ?? []
    if (f.tag !== undefined && !tags.includes(f.tag)) return false
    if (f.enabled !== undefined && String(route.enabled !== false) !== f.enabled) return false
    const q = f.q
    return q === undefined ||
      [route.path, route.handler, route.description ?? "", ...names, ...tags].some((text) => text.includes(q))
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
    this.#selected.delete(id)
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
