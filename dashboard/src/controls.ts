/**
 * The form's inputs, one control per field of a route (fields.ts): how each is filled from a route, read back as the
 * API takes it, and where a problem at a path of the API's `errors[]` is shown (`split.targets[1].weight` at that
 * target's "Weight"). Labels are the accessible names docs/dashboard.md lists; none contains another field's name, so
 * "Handler" names one textbox of the form.
 */
import type { Condition, MiddlewareEntry, RouteFields, Split, When } from "./api.js"
import { type Field, field, h, type Kind, type Props, toggle } from "./dom.js"
import { conditionText, type Name, nameOf, percent } from "./fields.js"

/** A problem the page finds before sending (a config that is not JSON), at its path as the API's `errors[]` has it. */
export interface Issue {
  readonly path: string
  readonly message: string
}

/** Where a problem is shown, and the input it marks invalid (none for a problem of a whole section). */
export interface Place {
  readonly problem: HTMLElement
  readonly input?: HTMLElement
}

export interface Control {
  readonly name: Name
  /** The control's rows, in the form's order. */
  readonly rows: ReadonlyArray<HTMLElement>
  readonly fill: (route: RouteFields) => void
  /** The value as the API takes it (`undefined`: the field's default). */
  readonly read: () => unknown
  /** The problems the page finds itself; the form sends nothing while there is one. */
  readonly check: () => ReadonlyArray<Issue>
  /** Where a problem at `path` is shown. */
  readonly at: (path: string) => Place
  /** Every place a problem can be shown, to clear them. */
  readonly places: () => ReadonlyArray<Place>
}

/** Names separated by commas, spaces around them ignored, empty entries dropped. */
export const namesOf = (text: string): Array<string> =>
  text.split(",").map((name) => name.trim()).filter((name) => name !== "")

const one = (f: Field): Pick<Control, "at" | "places"> => ({ at: () => f, places: () => [f] })

const text = (
  name: Name,
  label: string,
  options: {
    readonly props?: Props
    readonly hint?: string
    readonly show: (route: RouteFields) => string
    readonly read: (text: string) => unknown
  }
): Control => {
  const f = field(label, options.props, options.hint)
  return {
    name,
    rows: [f.row],
    fill: (route) => (f.input.value = options.show(route)),
    read: () => options.read(f.input.value),
    check: () => [],
    ...one(f)
  }
}

const CONFIG_HINT = `each middleware's configuration by its name, as JSON: {"rateLimit": {"max": 10}}`

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

/**
 * The middleware: their names in order ("Middleware"), and the configuration of those that have one, by name
 * ("Config", a JSON object), which come together as the API's entries (`"name"` or `{ "name", "config" }`). The two
 * rows are apart in the form: "Config" comes after the handler, so the four fields every route has come first.
 */
const middleware = (): Control => {
  const names = field("Middleware", {}, "names separated by commas")
  const config = field("Config", { class: "code" }, CONFIG_HINT, "lines")
  const configs = (): unknown => config.input.value.trim() === "" ? {} : JSON.parse(config.input.value)
  return {
    name: "middleware",
    rows: [names.row, config.row],
    fill: (route) => {
      const configured = route.middleware.filter((entry) => typeof entry !== "string")
      names.input.value = route.middleware.map(nameOf).join(", ")
      config.input.value = configured.length === 0
        ? ""
        : JSON.stringify(Object.fromEntries(configured.map((entry) => [entry.name, entry.config ?? {}])), null, 1)
    },
    read: (): Array<MiddlewareEntry> => {
      let byName: unknown = {}
      try {
        byName = configs()
      } catch {
        // Not JSON: check() says so, and nothing is sent.
      }
      return namesOf(names.input.value).map((name) =>
        isObject(byName) && Object.hasOwn(byName, name) ? { name, config: byName[name] } : name
      )
    },
    check: () => {
      let byName: unknown
      try {
        byName = configs()
      } catch (error) {
        return [{ path: "middleware.config", message: `is not JSON (${(error as Error).message}): ${CONFIG_HINT}` }]
      }
      if (!isObject(byName)) return [{ path: "middleware.config", message: `must be a JSON object: ${CONFIG_HINT}` }]
      const listed = namesOf(names.input.value)
      return Object.keys(byName).filter((name) => !listed.includes(name)).map((name) => ({
        path: "middleware.config",
        message: `configures ${name}, which is not in Middleware: add it there, or remove its configuration`
      }))
    },
    at: (path) => /^middleware(\[\d+\])?\.config/.test(path) ? config : names,
    places: () => [names, config]
  }
}

const enabled = (): Control => {
  const f = toggle("Enabled", "when off, the route keeps its place and the router answers it 503 route_disabled")
  f.input.checked = true
  return {
    name: "enabled",
    rows: [f.row],
    fill: (route) => (f.input.checked = route.enabled !== false),
    read: () => f.input.checked,
    check: () => [],
    ...one(f)
  }
}

/** A section of the form: a group named by its legend, with a place for the problems of the whole. */
const section = (legend: string, intro: string, ...children: ReadonlyArray<Node>) => {
  const problem = h("div", { class: "problem", role: "alert" })
  const element = h("fieldset", {}, h("legend", {}, legend), h("p", { class: "summary" }, intro), ...children, problem)
  return { element, problem }
}

/** One condition a line: `name`, or `name<separator>value`. */
export const conditionsOf = (text: string, separator: string): Array<Condition> =>
  text.split("\n").map((line) => line.trim()).filter((line) => line !== "").map((line) => {
    const at = line.indexOf(separator)
    return at < 0 ? { name: line } : { name: line.slice(0, at).trim(), value: line.slice(at + 1).trim() }
  })

/** The conditions beside method and path: a host, headers (`name: value`) and query parameters (`name=value`). */
const when = (): Control => {
  const host = field("Host", {}, "api.example.com, or *.example.com for its subdomains")
  const headers = field("Headers", {}, "one a line: name: value, or a name alone for presence", "lines")
  const query = field("Query", {}, "one a line: name=value, or a name alone for presence", "lines")
  const { element, problem } = section(
    "Conditions",
    "The route serves a request only when these match too.",
    host.row,
    headers.row,
    query.row
  )
  const lines = (conditions: ReadonlyArray<Condition> | undefined, separator: string) =>
    (conditions ?? []).map((c) => conditionText(c, separator)).join("\n")
  return {
    name: "when",
    rows: [element],
    fill: (route) => {
      host.input.value = route.when?.host ?? ""
      headers.input.value = lines(route.when?.headers, ": ")
      query.input.value = lines(route.when?.query, "=")
    },
    read: (): When => {
      const name = host.input.value.trim()
      const byHeader = conditionsOf(headers.input.value, ":")
      const byQuery = conditionsOf(query.input.value, "=")
      return {
        ...(name === "" ? {} : { host: name }),
        ...(byHeader.length === 0 ? {} : { headers: byHeader }),
        ...(byQuery.length === 0 ? {} : { query: byQuery })
      }
    },
    check: () => [],
    at: (path) => {
      if (path.startsWith("when.host")) return host
      if (path.startsWith("when.headers")) return headers
      return path.startsWith("when.query") ? query : { problem }
    },
    places: () => [host, headers, query, { problem }]
  }
}

interface Target {
  readonly row: HTMLElement
  readonly handler: Field
  readonly weight: Field
}

const KINDS: Kind = [["header", "a header"], ["cookie", "a cookie"], ["query", "a query parameter"]]

/**
 * The split: what the key is read from, its group and override header, and the targets, each a handler and its
 * "Weight" in basis points with the percentage beside it; the route's handler takes the rest. No target, no split.
 */
const split = (): Control => {
  const by = field("Split by", {}, undefined, KINDS)
  const key = field("Key name", {}, "the header, cookie or query parameter whose value is the key")
  const group = field(
    "Group",
    {},
    "routes sharing a group and weights send a key the same way (the route's id if empty)"
  )
  const override = field("Override", {}, "a header whose value, naming one of the route's handlers, chooses it")
  const list = h("div", { class: "targets" })
  const rest = h("p", { class: "summary", "aria-live": "polite" })
  let targets: Array<Target> = []
  const changed = () => list.dispatchEvent(new Event("input", { bubbles: true }))
  const shares = () => {
    let left = 10_000
    targets.forEach((t, i) => {
      t.row.setAttribute("aria-label", `Target ${i + 1}`)
      const weight = Number(t.weight.input.value)
      const share = t.weight.row.querySelector("output")!
      share.textContent = t.weight.input.value.trim() === "" || !Number.isFinite(weight) ? "" : `= ${percent(weight)}`
      left -= Number.isFinite(weight) ? weight : 0
    })
    rest.textContent = targets.length === 0
      ? "No split: the route's handler serves every request."
      : `The route's handler takes the rest: ${left < 0 ? "nothing (the weights are over 10,000)" : percent(left)}.`
  }
  const add = (handler: string, weight: string): Target => {
    const handlerField = field("Target handler", { value: handler })
    const weightField = field(
      "Weight",
      { type: "number", min: 0, max: 10_000, step: 1, value: weight, oninput: shares },
      "basis points"
    )
    const share = h("output", { for: weightField.input.id, id: `${weightField.input.id}-share` })
    weightField.input.after(share)
    weightField.input.setAttribute(
      "aria-describedby",
      `${share.id} ${weightField.input.getAttribute("aria-describedby")}`
    )
    const target: Target = {
      row: h("div", { role: "group", class: "target" }, handlerField.row, weightField.row),
      handler: handlerField,
      weight: weightField
    }
    const remove = h("button", {
      type: "button",
      onclick: () => {
        targets = targets.filter((t) => t !== target)
        target.row.remove()
        shares()
        changed()
      }
    }, "Remove target")
    target.row.append(remove)
    targets.push(target)
    list.append(target.row)
    shares()
    return target
  }
  const addButton = h("button", {
    type: "button",
    onclick: () => {
      add("", "").handler.input.focus()
      changed()
    }
  }, "Add target")
  const { element, problem } = section(
    "Split",
    "Sends a share of the requests, by a key read from each, to other handlers.",
    by.row,
    key.row,
    group.row,
    override.row,
    list,
    rest,
    addButton
  )
  element.classList.add("split")
  shares()
  return {
    name: "split",
    rows: [element],
    fill: (route) => {
      const split = route.split
      const at = split?.by.indexOf(":") ?? -1
      by.input.value = at < 0 ? "header" : split!.by.slice(0, at)
      key.input.value = at < 0 ? "" : split!.by.slice(at + 1)
      group.input.value = split?.group ?? ""
      override.input.value = split?.override ?? ""
      targets = []
      list.replaceChildren()
      for (const t of split?.targets ?? []) add(t.handler, String(t.weight))
      shares()
    },
    read: (): Split | undefined => {
      if (targets.length === 0) return undefined
      const optional = (name: "group" | "override", f: Field) =>
        f.input.value.trim() === "" ? {} : { [name]: f.input.value.trim() }
      return {
        by: `${by.input.value}:${key.input.value.trim()}`,
        ...optional("group", group),
        targets: targets.map((t) => ({ handler: t.handler.input.value.trim(), weight: Number(t.weight.input.value) })),
        ...optional("override", override)
      }
    },
    check: () =>
      targets.flatMap((t, i) =>
        t.weight.input.value.trim() === ""
          ? [{ path: `split.targets[${i}].weight`, message: "is empty: enter basis points, 0 to 10,000" }]
          : []
      ),
    at: (path) => {
      const target = /^split\.targets\[(\d+)\]\.(handler|weight)/.exec(path)
      const t = target === null ? undefined : targets[Number(target[1])]
      if (t !== undefined) return target![2] === "handler" ? t.handler : t.weight
      if (path.startsWith("split.by")) return key
      if (path.startsWith("split.group")) return group
      if (path.startsWith("split.override")) return override
      return { problem }
    },
    places: () => [by, key, group, override, ...targets.flatMap((t) => [t.handler, t.weight]), { problem }]
  }
}

/** Every field's control, by name. */
export const controls = (): ReadonlyMap<Name, Control> =>
  new Map(
    [
      text("method", "Method", {
        hint: "such as GET, POST or PROPFIND",
        props: { required: true, autocapitalize: "characters" },
        show: (route) => route.method,
        read: (text) => text.trim()
      }),
      text("path", "Path", {
        hint: "such as /users/:id",
        props: { required: true },
        show: (route) => route.path,
        read: (text) => text
      }),
      middleware(),
      text("handler", "Handler", { props: { required: true }, show: (route) => route.handler, read: (t) => t.trim() }),
      enabled(),
      text("description", "Description", {
        hint: "what the route is for, up to 1,024 characters",
        show: (route) => route.description ?? "",
        read: (text) => text
      }),
      text("tags", "Tags", {
        hint: "separated by commas, such as team:payments, beta",
        show: (route) => (route.tags ?? []).join(", "),
        read: namesOf
      }),
      when(),
      split()
    ].map((control) => [control.name, control])
  )
