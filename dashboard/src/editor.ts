/**
 * Creating and editing a route (docs/dashboard.md, task 3) with the API's own validation: every problem at its field, a
 * path's problems at their position, checked as the person types through dry runs. An edit sends only the fields that
 * changed, with `If-Match`; a change made meanwhile is shown beside the person's own, never overwritten silently.
 */
import {
  type Answer,
  call,
  conflictingRoute,
  describe,
  type Problem,
  type Route,
  type RouteFields,
  type Session
} from "./api.js"
import { debounce, dialog, type Field, field, h, replace } from "./dom.js"
import { changedNames, FIELDS, type Name, pick } from "./fields.js"

// "at index 7" in the grammar's messages: where in the path each problem is.
const positionsOf = (message: string): Array<number> =>
  [...message.matchAll(/at index (\d+)/g)].map((m) => Number(m[1]))

/** The path with the characters at `positions` marked, so a problem is seen where it is. */
const markedPath = (path: string, positions: ReadonlyArray<number>): HTMLElement => {
  const at = new Set(positions)
  const code = h("code", { class: "marked", "aria-hidden": "true" })
  let plain = ""
  for (let i = 0; i <= path.length; i++) {
    if (!at.has(i)) {
      plain += path[i] ?? ""
      continue
    }
    code.append(plain, h("mark", {}, path[i] ?? " "))
    plain = ""
  }
  code.append(plain)
  return code
}

/** A version of the route as the API answered it, with its `ETag`. */
interface Version {
  readonly route: Route
  readonly etag: string
}

/** Opens the form, for `route` or (undefined) a new one; resolves with the saved route, or undefined. */
export const open = async (session: Session, route: Route | undefined): Promise<Route | undefined> => {
  let editing: Version | undefined
  if (route !== undefined) {
    const current = await call<Route>(session, `/${route.id}`)
    if (current.value === undefined) {
      alertProblem(current.problem!)
      return undefined
    }
    editing = { route: current.value, etag: current.headers.get("etag") ?? "" }
  }
  return new Promise((resolve) => form(session, editing, resolve))
}

const alertProblem = (problem: Problem) => {
  const element = dialog("Could not open the route", h("p", {}, describe(problem)))
  element.append(h("button", { type: "button", onclick: () => element.close() }, "Close"))
}

const labelled = (names: Iterable<Name>) =>
  FIELDS.filter((f) => [...names].includes(f.name)).map((f) => f.label.toLowerCase()).join(", ")

const form = (session: Session, initial: Version | undefined, resolve: (route: Route | undefined) => void) => {
  // The person's changes are the fields that differ from `base`, the version they started from; a save names
  // `against` in If-Match. The two are one version until a conflict shows a newer one and the person applies their
  // changes to it: then only their own fields are sent, and what someone else changed meanwhile stays.
  let base = initial
  let against = initial
  let saved: Route | undefined
  const fields = new Map<Name, Field>(FIELDS.map((f) => [f.name, field(f.label, f.props, f.hint)]))
  const input = (name: Name) => fields.get(name)!.input
  const valuesOf = (): RouteFields =>
    Object.fromEntries(FIELDS.map((f) => [f.name, f.read(input(f.name).value)])) as unknown as RouteFields
  const fill = (route: RouteFields) => {
    for (const f of FIELDS) input(f.name).value = f.text(route)
  }
  if (base !== undefined) fill(base.route)
  const pathMarks = h("div", { class: "path-marks" })
  const status = h("p", { class: "status-line", role: "status" })
  const general = h("div", { class: "problem", role: "alert" })
  const conflict = h("div", { class: "conflict" })
  const save = h("button", { type: "submit", class: "primary" }, "Save")
  const element = dialog(
    base === undefined ? "New route" : "Edit route",
    h(
      "form",
      {
        novalidate: true,
        onsubmit: (event: Event) => {
          event.preventDefault()
          void submit(false)
        }
      },
      // A path's problems are marked in it, under its field.
      ...FIELDS.flatMap((f) => f.name === "path" ? [fields.get(f.name)!.row, pathMarks] : [fields.get(f.name)!.row]),
      general,
      conflict,
      status,
      h(
        "div",
        { class: "actions" },
        save,
        h("button", { type: "button", onclick: () => element.close() }, "Cancel")
      )
    )
  )
  element.addEventListener("close", () => resolve(saved))

  const clear = () => {
    for (const f of fields.values()) {
      f.problem.textContent = ""
      f.input.removeAttribute("aria-invalid")
    }
    general.textContent = ""
    pathMarks.replaceChildren()
  }

  // Each problem at its field; a path's at its position too. What names no field is shown under the form.
  const show = (problem: Problem) => {
    clear()
    const issues = problem.errors ?? []
    for (const issue of issues) {
      const name = FIELDS.find((f) => issue.path === f.name || issue.path.startsWith(`${f.name}[`))?.name
      const f = name === undefined ? undefined : fields.get(name)
      if (f === undefined) {
        general.append(h("p", {}, `${issue.path}: ${issue.message}`))
        continue
      }
      f.problem.append(h("p", {}, issue.message))
      f.input.setAttribute("aria-invalid", "true")
      if (name === "path") {
        const positions = positionsOf(issue.message)
        if (positions.length > 0) pathMarks.replaceChildren(markedPath(f.input.value, positions))
      }
    }
    if (problem.code === "route_conflict") {
      const f = fields.get("path")!
      const line = h("p", {}, problem.detail)
      f.problem.append(line)
      f.input.setAttribute("aria-invalid", "true")
      // The problem names the other route by id: its method and path say which one it is.
      void conflictingRoute(session, problem).then((other) => {
        if (other !== undefined && line.isConnected) line.after(h("p", {}, other))
      })
    } else if (issues.length === 0) {
      general.append(h("p", {}, describe(problem)))
    }
  }

  const request = (dryRun: boolean): Promise<Answer<Route>> | undefined => {
    const values = valuesOf()
    const query = dryRun ? { dryRun: "true" } : {}
    if (base === undefined || against === undefined) {
      return call<Route>(session, "", { method: "POST", body: values, query })
    }
    const names = changedNames(base.route, values)
    if (names.length === 0) return undefined
    return call<Route>(session, `/${against.route.id}`, {
      method: "PATCH",
      body: pick(values, names),
      query,
      headers: { "if-match": against.etag }
    })
  }

  // Both versions side by side, each change marked: the person takes the current one, or applies theirs on top of it.
  const showConflict = async () => {
    const current = await call<Route>(session, `/${against!.route.id}`)
    if (current.value === undefined) return show(current.problem!)
    const theirs: Version = { route: current.value, etag: current.headers.get("etag") ?? "" }
    const mine = valuesOf()
    const yours = new Set(changedNames(base!.route, mine))
    const meanwhile = new Set(changedNames(base!.route, theirs.route))
    const both = [...yours].filter((name) => meanwhile.has(name))
    const column = (title: string, route: RouteFields, marked: ReadonlySet<Name>, mark: string) =>
      h(
        "div",
        {},
        h("h3", {}, title),
        h(
          "dl",
          {},
          ...FIELDS.flatMap((f) => [
            h("dt", {}, f.label),
            h(
              "dd",
              { class: marked.has(f.name) ? "changed" : null },
              f.text(route) || "(none)",
              marked.has(f.name) ? h("small", {}, ` (${mark})`) : null
            )
          ])
        )
      )
    replace(
      conflict,
      h("p", { role: "alert" }, "This route was changed by someone else while you edited it. Nothing was saved."),
      h(
        "div",
        { class: "versions" },
        column("Your version", mine, yours, "your change"),
        column("Current version", theirs.route, meanwhile, "changed meanwhile")
      ),
      h(
        "p",
        {},
        `"Apply my changes" sets ${labelled(yours)} on the current version and keeps the rest of it`,
        both.length === 0 ? "." : `; ${labelled(both)} changed on both sides, and yours replaces theirs.`
      ),
      h(
        "div",
        { class: "actions" },
        h("button", {
          type: "button",
          onclick: () => {
            base = against = theirs
            fill(theirs.route)
            clear()
            conflict.replaceChildren()
          }
        }, "Use current version"),
        h("button", {
          type: "button",
          onclick: () => {
            // Shown again if the route changes once more before this arrives.
            against = theirs
            conflict.replaceChildren()
            void submit(false)
          }
        }, "Apply my changes")
      )
    )
  }

  let checking = 0
  const submit = async (dryRun: boolean) => {
    const ticket = ++checking
    const pending = request(dryRun)
    if (pending === undefined) {
      if (!dryRun) {
        // Nothing changed: nothing is sent.
        status.textContent = "Nothing changed."
        element.close()
      }
      return
    }
    if (!dryRun) status.textContent = "Saving…"
    const answer = await pending
    if (dryRun && ticket !== checking) return
    if (answer.value !== undefined || answer.status === 200 || answer.status === 201) {
      clear()
      if (dryRun) {
        status.textContent = "Looks good."
        return
      }
      saved = answer.value
      element.close()
      return
    }
    status.textContent = ""
    if (answer.status === 412) {
      if (!dryRun) return showConflict()
      clear()
      status.textContent = "Someone else changed this route meanwhile: Save shows both versions."
      return
    }
    show(answer.problem!)
  }

  // Checked as the person types by dry runs, which the API that serves this page takes on every write.
  const check = debounce(300, () => void submit(true))
  for (const f of fields.values()) f.input.addEventListener("input", check)
  input(FIELDS[0]!.name).focus()
}
