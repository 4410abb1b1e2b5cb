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
import { type Control, controls, type Issue } from "./controls.js"
import { debounce, dialog, h, replace } from "./dom.js"
import { changedNames, createBody, FIELDS, type Name, pick, shownFields } from "./fields.js"

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
  const fields = controls()
  const control = (name: Name): Control => fields.get(name)!
  // A field read as its default is left out, as the API leaves it out of the route it answers.
  const valuesOf = (): RouteFields =>
    Object.fromEntries(
      [...fields.values()].map((c) => [c.name, c.read()]).filter(([, value]) => value !== undefined)
    ) as unknown as RouteFields
  const fill = (route: RouteFields) => {
    for (const c of fields.values()) c.fill(route)
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
      // The four fields every route has come first (a path's problems marked under it), then the others.
      ...control("method").rows,
      ...control("path").rows,
      pathMarks,
      control("middleware").rows[0]!,
      ...control("handler").rows,
      ...control("enabled").rows,
      ...control("description").rows,
      ...control("tags").rows,
      control("middleware").rows[1]!,
      ...control("when").rows,
      ...control("split").rows,
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
    for (const place of [...fields.values()].flatMap((c) => c.places())) {
      place.problem.textContent = ""
      place.input?.removeAttribute("aria-invalid")
    }
    general.textContent = ""
    pathMarks.replaceChildren()
  }

  // Each problem at its field; a path's at its position too. What names no field is shown under the form.
  const show = (problem: Problem) => {
    clear()
    const issues = problem.errors ?? []
    for (const issue of issues) {
      const name = FIELDS.find((f) => issue.path.match(/^[a-z]+/i)?.[0] === f.name)?.name
      const place = name === undefined ? undefined : control(name).at(issue.path)
      if (place === undefined) {
        general.append(h("p", {}, `${issue.path}: ${issue.message}`))
        continue
      }
      // Shown at a section, or deeper than its input (a config's own fields), a problem says where ("targets[1]").
      const within = place.input === undefined || issue.path.includes(".config.")
        ? issue.path.slice(name!.length).replace(/^\./, "")
        : ""
      place.problem.append(h("p", {}, within === "" ? issue.message : `${within}: ${issue.message}`))
      place.input?.setAttribute("aria-invalid", "true")
      if (name === "path") {
        const positions = positionsOf(issue.message)
        const path = control("path").read() as string
        if (positions.length > 0) pathMarks.replaceChildren(markedPath(path, positions))
      }
    }
    if (problem.code === "route_conflict") {
      const place = control("path").at("path")
      const line = h("p", {}, problem.detail)
      place.problem.append(line)
      place.input?.setAttribute("aria-invalid", "true")
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
      return call<Route>(session, "", { method: "POST", body: createBody(values), query })
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
          ...shownFields(base!.route, mine, theirs.route).flatMap((f) => [
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
    // What the page finds itself (a config that is not JSON) is shown as the API's problems are, and nothing is sent.
    const local: ReadonlyArray<Issue> = [...fields.values()].flatMap((c) => c.check())
    if (local.length > 0) {
      status.textContent = ""
      return show({ status: 400, title: "Bad Request", detail: "Some fields need a change.", errors: local })
    }
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
  element.addEventListener("input", check)
  element.querySelector("input")!.focus()
}
