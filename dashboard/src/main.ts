/**
 * The dashboard: a thin client of the routing API with no state of its own (docs/dashboard.md). Signing in keeps the token
 * in memory for the tab's life; signing out forgets it and everything read with it.
 */
import "./style.css"
import { call, describe, probe, type Route, routeName, Session } from "./api.js"
import * as Copy from "./copy.js"
import { confirm, field, h, replace } from "./dom.js"
import * as Editor from "./editor.js"
import { fleet } from "./fleet.js"
import * as History from "./history.js"
import { recentChanges } from "./recent.js"
import { RouteList } from "./routes.js"
import { follow } from "./stream.js"
import { tester } from "./tester.js"

const root = h("div", { class: "app" })
document.body.appendChild(root)

const signIn = (notice?: string) => {
  const token = field(
    "Token",
    { class: "secret", autofocus: true },
    "a bearer token with routes:read, and routes:write to edit"
  )
  const problem = h("p", { class: "problem", role: "alert" }, notice ?? "")
  const submit = async (event: Event) => {
    event.preventDefault()
    const value = token.input.value.trim()
    if (value === "") {
      problem.textContent = "Enter a token."
      return token.input.focus()
    }
    problem.textContent = "Signing in…"
    const session = new Session(value)
    // The first page doubles as the check of the token: its rows are shown as soon as they come.
    const [first] = await Promise.all([call<unknown>(session, "", { query: { limit: "1" } }), probe(session)])
    if (first.problem !== undefined) {
      problem.textContent = describe(first.problem)
      return token.input.focus()
    }
    token.input.value = ""
    signedIn(session)
  }
  replace(
    root,
    h("header", { class: "bar" }, h("h1", {}, "Route registry")),
    h(
      "main",
      { class: "sign-in" },
      h(
        "form",
        { onsubmit: submit, "aria-labelledby": "sign-in-heading" },
        h("h2", { id: "sign-in-heading" }, "Sign in"),
        token.row,
        problem,
        h("button", { type: "submit", class: "primary" }, "Sign in")
      )
    )
  )
  token.input.focus()
}

const signedIn = (session: Session) => {
  const stop = new AbortController()
  const live = h("span", { role: "status", class: "live", "aria-live": "polite" }, "connecting")
  const notice = h("p", { class: "notice", role: "status" })
  const edit = async (route: Route | undefined) => {
    const saved = await Editor.open(session, route)
    if (saved !== undefined) list.upsert(saved)
  }
  const remove = async (route: Route) => {
    if (!(await confirm("Delete this route?", `${routeName(route)} stops being served at once.`))) return
    const answer = await call(session, `/${route.id}`, { method: "DELETE" })
    if (answer.status === 204 || answer.status === 404) list.remove(route.id)
    notice.textContent = answer.status === 204
      ? `Deleted ${routeName(route)}: Recent changes can restore it.`
      : describe(answer.problem!)
  }
  const newRoute = session.writable
    ? h("button", { type: "button", class: "primary", onclick: () => void edit(undefined) }, "New route")
    : null
  const list = new RouteList(
    session,
    {
      edit: (route) => void edit(route),
      remove: (route) => void remove(route),
      history: (route) => History.open(session, route),
      copy: Copy.open
    },
    newRoute
  )
  const followers = fleet(session, stop.signal)
  const changes = recentChanges(session)
  const signOut = (notice?: string) => {
    stop.abort()
    document.querySelectorAll("dialog").forEach((open) => open.close())
    signIn(notice)
  }
  replace(
    root,
    h(
      "header",
      { class: "bar" },
      h("h1", {}, "Route registry"),
      h("span", { class: "mode" }, session.writable ? "" : "read-only"),
      live,
      h("button", { type: "button", onclick: () => signOut() }, "Sign out")
    ),
    h("main", { class: "main" }, notice, list.element),
    h("aside", { class: "side", "aria-label": "Tools" }, tester(session), followers.element, changes.element)
  )
  void followers.refresh()
  // The stream starts once the first rows are shown: its first event is every route, which the page need not wait for.
  void list.load().then(() =>
    follow(session, {
      change: (change) => {
        list.apply(change)
        void followers.refresh()
        changes.refresh()
      },
      snapshot: (routes) => {
        list.reconcile(routes)
        changes.refresh()
      },
      status: (status) => {
        live.textContent = status
      },
      refused: () => signOut(),
      expired: () => signOut("Your session expired: sign in again with a fresh token.")
    }, stop.signal)
  )
}

signIn()
