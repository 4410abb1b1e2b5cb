/**
 * Creating and editing a route (docs/dashboard.md, task 3) with the API's own validation: every problem at its field, a
 * path's problems at their position, checked as the person types through dry runs. An edit sends only the fields that
 * changed, with `If-Match`; a change made meanwhile is shown beside the person's own, never overwritten silently.
 */
import { type Answer, call, describe, type Problem, type Route, type RouteFields, type Session } from "./api.js"
import { debounce, dialog, type Field, field, h, replace } from "./dom.js"

type Name = keyof RouteFields

const NAMES: ReadonlyArray<Name> = ["method", "path", "middleware", "handler"]

/** The names of a "Middleware" field: separated by commas, spaces around them ignored, empty entries dropped. */
const namesOf = (text: string): Array<string> =>
  text.split(",").map((name) => name.trim()).filter((name) => name !== "")

const valuesOf = (fields: ReadonlyMap<Name, Field>): RouteFields => ({
  method: fields.get("method")!.input.value.trim(),
  path: fields.get("path")!.input.value,
  middleware: namesOf(fields.get("middleware")!.input.value),
  handler: fields.get("handler")!.input.value.trim()
})

/** The fields that differ from the route as it was loaded: what an edit sends. */
const changed = (before: RouteFields, after: RouteFields): Partial<RouteFields> => {
  const patch: Record<string, unknown> = {}
  if (after.method !== before.method) patch.method = after.method
  if (after.path !== before.path) patch.path = after.path
  if (after.handler !== before.handler) patch.handler = after.handler
  if (after.middleware.join("\u0000") !== before.middleware.join("\u0000")) patch.middleware = after.middleware
  return patch as Partial<RouteFields>
}

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

interface Editing {
  readonly route: Route
  readonly etag: string
}

/** Opens the form, for `route` or (undefined) a new one; resolves with the saved route, or undefined. */
export const open = async (session: Session, route: Route | undefined): Promise<Route | undefined> => {
  let editing: Editing | undefined
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

const form = (session: Session, initial: Editing | undefined, resolve: (route: Route | undefined) => void) => {
  let editing = initial
  let saved: Route | undefined
  const fields = new Map<Name, Field>([
    ["method", field("Method", { required: true, autocapitalize: "characters" }, "such as GET, POST or PROPFIND")],
    ["path", field("Path", { required: true }, "such as /users/:id")],
    ["middleware", field("Middleware", {}, "names separated by commas")],
    ["handler", field("Handler", { required: true })]
  ])
  const fill = (route: RouteFields) => {
    fields.get("method")!.input.value = route.method
    fields.get("path")!.input.value = route.path
    fields.get("middleware")!.input.value = route.middleware.join(", ")
    fields.get("handler")!.input.value = route.handler
  }
  if (editing !== undefined) fill(editing.route)
  const pathMarks = h("div", { class: "path-marks" })
  const status = h("p", { class: "status-line", role: "status" })
  const general = h("div", { class: "problem", role: "alert" })
  const conflict = h("div", { class: "conflict" })
  const save = h("button", { type: "submit", class: "primary" }, "Save")
  const element = dialog(
    editing === undefined ? "New route" : "Edit route",
    h(
      "form",
      {
        novalidate: true,
        onsubmit: (event: Event) => {
          event.preventDefault()
          void submit(false)
        }
      },
      fields.get("method")!.row,
      fields.get("path")!.row,
      pathMarks,
      fields.get("middleware")!.row,
      fields.get("handler")!.row,
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
      const name = NAMES.find((n) => issue.path === n || issue.path.startsWith(`${n}[`))
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
      f.problem.append(h("p", {}, problem.detail))
      f.input.setAttribute("aria-invalid", "true")
    } else if (issues.length === 0) {
      general.append(h("p", {}, describe(problem)))
    }
  }

  const request = (dryRun: boolean, etag?: string): Promise<Answer<Route>> | undefined => {
    const values = valuesOf(fields)
    const query = dryRun ? { dryRun: "true" } : {}
    if (editing === undefined) return call<Route>(session, "", { method: "POST", body: values, query })
    const patch = changed(editing.route, values)
    if (Object.keys(patch).length === 0) return undefined
    return call<Route>(session, `/${editing.route.id}`, {
      method: "PATCH",
      body: patch,
      query,
      headers: { "if-match": etag ?? editing.etag }
    })
  }

  // Both versions side by side: the person's and the one stored meanwhile, to take one or re-apply theirs on it.
  const showConflict = async () => {
    const current = await call<Route>(session, `/${editing!.route.id}`)
    if (current.value === undefined) return show(current.problem!)
    const theirs = current.value
    const mine = valuesOf(fields)
    const etag = current.headers.get("etag") ?? ""
    const column = (title: string, route: RouteFields) =>
      h(
        "div",
        {},
        h("h3", {}, title),
        h(
          "dl",
          {},
          ...NAMES.flatMap((name) => [
            h("dt", {}, name),
            h("dd", {}, name === "middleware" ? route.middleware.join(", ") : route[name])
          ])
        )
      )
    replace(
      conflict,
      h("p", { role: "alert" }, "This route was changed by someone else while you edited it. Nothing was saved."),
      h("div", { class: "versions" }, column("Your version", mine), column("Current version", theirs)),
      h(
        "div",
        { class: "actions" },
        h("button", {
          type: "button",
          onclick: () => {
            editing = { route: theirs, etag }
            fill(theirs)
            conflict.replaceChildren()
          }
        }, "Use current version"),
        h("button", {
          type: "button",
          onclick: () => {
            // The person's changes, sent again against the version they have now seen.
            editing = { route: theirs, etag }
            conflict.replaceChildren()
            void submit(false)
          }
        }, "Apply my changes to it")
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
    if (answer.status === 412 && !dryRun) return showConflict()
    show(answer.problem!)
  }

  // Checked as the person types by dry runs, which the API that serves this page takes on every write.
  const check = debounce(300, () => void submit(true))
  for (const f of fields.values()) f.input.addEventListener("input", check)
  fields.get("method")!.input.focus()
}
