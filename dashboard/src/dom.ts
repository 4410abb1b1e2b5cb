/**
 * Building the page's elements. Every text from the API goes in as a text node (`textContent`), never as markup: a
 * problem detail that echoes `<script>` shows those characters and runs nothing.
 */

export type Child = Node | string | number | null | undefined | false

export interface Props {
  readonly [name: string]: string | number | boolean | EventListener | null | undefined
}

/** An element with attributes (`onclick`-style names attach listeners) and children (strings become text nodes). */
export const h = <K extends keyof HTMLElementTagNameMap>(
  tag: K,
  props: Props = {},
  ...children: ReadonlyArray<Child>
): HTMLElementTagNameMap[K] => {
  const element = document.createElement(tag)
  for (const name in props) {
    const value = props[name]
    if (value === undefined || value === null || value === false) continue
    if (typeof value === "function") element.addEventListener(name.slice(2), value)
    else element.setAttribute(name, value === true ? "" : String(value))
  }
  append(element, children)
  return element
}

/** Appends children, strings as text. */
export const append = (parent: Node, children: ReadonlyArray<Child>): void => {
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue
    parent.appendChild(typeof child === "object" ? child : document.createTextNode(String(child)))
  }
}

/** Replaces an element's children. */
export const replace = (parent: Element, ...children: ReadonlyArray<Child>): void => {
  parent.replaceChildren()
  append(parent, children)
}

let ids = 0

/** A fresh element id, for `for`, `aria-describedby` and `aria-labelledby`. */
export const uid = (prefix: string): string => `${prefix}-${++ids}`

/** A labelled field: its label, its input and the place its problems are shown. */
export interface Field {
  readonly row: HTMLElement
  readonly input: HTMLInputElement | HTMLTextAreaElement | HTMLSelectElement
  readonly problem: HTMLElement
}

/** What a field's input is: a line of text (the default), several lines, or a choice of `options` (value, text). */
export type Kind = "line" | "lines" | ReadonlyArray<readonly [string, string]>

export const field = (label: string, props: Props = {}, hint?: string, kind: Kind = "line"): Field => {
  const id = uid("field")
  const problem = h("div", { id: `${id}-problem`, class: "problem", role: "alert" })
  const hintId = hint === undefined ? undefined : `${id}-hint`
  const common = { id, "aria-describedby": [hintId, `${id}-problem`].filter(Boolean).join(" ") }
  const input = kind === "line"
    ? h("input", { ...common, type: "text", autocomplete: "off", spellcheck: "false", ...props })
    : kind === "lines"
    ? h("textarea", { ...common, rows: 2, spellcheck: "false", ...props })
    : h("select", { ...common, ...props }, ...kind.map(([value, text]) => h("option", { value }, text)))
  const row = h(
    "div",
    { class: "field" },
    h("label", { for: id }, label),
    input,
    hint === undefined ? null : h("small", { id: hintId }, hint),
    problem
  )
  return { row, input, problem }
}

/** A labelled on/off switch (a checkbox with the switch role), its label after it. */
export const toggle = (label: string, hint: string): Field & { readonly input: HTMLInputElement } => {
  const id = uid("field")
  const problem = h("div", { id: `${id}-problem`, class: "problem", role: "alert" })
  const input = h("input", {
    id,
    type: "checkbox",
    role: "switch",
    "aria-describedby": `${id}-hint ${id}-problem`
  })
  const row = h(
    "div",
    { class: "field toggle" },
    h("span", {}, input, h("label", { for: id }, label)),
    h("small", { id: `${id}-hint` }, hint),
    problem
  )
  return { row, input, problem }
}

/** Runs `f` once typing pauses for `millis`. */
export const debounce = <A extends ReadonlyArray<unknown>>(millis: number, f: (...args: A) => void) => {
  let timer: ReturnType<typeof setTimeout> | undefined
  return (...args: A) => {
    clearTimeout(timer)
    timer = setTimeout(() => f(...args), millis)
  }
}

// While a modal dialog is open, the page behind it is hidden from assistive technology as well as inert (the ARIA
// practices' modal pattern, for readers that ignore `aria-modal`): a reader, or a test finding controls by their
// accessible names, sees the dialog's "Restore" and not those of "Recent changes" behind it. Gives what undoes it,
// leaving what an outer dialog hid to that dialog.
const hideAround = (dialog: HTMLElement): () => void => {
  const hidden = Array.from(document.body.children).filter((element) =>
    element !== dialog && element.getAttribute("aria-hidden") !== "true"
  )
  for (const element of hidden) {
    element.setAttribute("aria-hidden", "true")
    element.setAttribute("inert", "")
  }
  return () => {
    for (const element of hidden) {
      element.removeAttribute("aria-hidden")
      element.removeAttribute("inert")
    }
  }
}

/** A modal dialog, named by its heading, removed from the page once closed. */
export const dialog = (title: string, ...children: ReadonlyArray<Child>): HTMLDialogElement => {
  const id = uid("dialog")
  const element = h("dialog", { "aria-labelledby": id }, h("h2", { id }, title), ...children)
  document.body.appendChild(element)
  const shown = hideAround(element)
  element.addEventListener("close", () => {
    shown()
    element.remove()
  })
  element.showModal()
  return element
}

/** Asks before something that cannot be taken back: resolves `true` on "Confirm", `false` on "Cancel" or Escape. */
export const confirm = (title: string, question: string): Promise<boolean> =>
  new Promise((resolve) => {
    let confirmed = false
    const element = dialog(
      title,
      h("p", {}, question),
      h(
        "div",
        { class: "actions" },
        h(
          "button",
          { type: "button", class: "danger", onclick: () => ((confirmed = true), element.close()) },
          "Confirm"
        ),
        h("button", { type: "button", onclick: () => element.close() }, "Cancel")
      )
    )
    element.addEventListener("close", () => resolve(confirmed))
  })

/** A path as code, which a narrow column breaks before a `/` rather than anywhere (its text stays the same). */
export const pathCode = (path: string): HTMLElement =>
  h("code", { class: "path" }, ...path.split(/(?=\/)/).flatMap((part, i) => i === 0 ? [part] : [h("wbr"), part]))

// The reader's own locale and time zone; the date and the time apart, so that a narrow column wraps between them.
const LOCAL_DATE = new Intl.DateTimeFormat(undefined, { dateStyle: "medium" })
const LOCAL_TIME = new Intl.DateTimeFormat(undefined, { timeStyle: "medium" })

/** A time from the API (ISO 8601, UTC) in the reader's time zone, its UTC form on hover and in `datetime`. */
export const time = (iso: string): HTMLTimeElement => {
  const date = new Date(iso)
  if (Number.isNaN(date.getTime())) return h("time", {}, iso)
  return h(
    "time",
    { datetime: date.toISOString(), title: date.toISOString().replace("T", " ").replace("Z", " UTC") },
    h("span", {}, LOCAL_DATE.format(date)),
    " ",
    h("span", {}, LOCAL_TIME.format(date))
  )
}
