/**
 * A route as a curl command that creates it and as an entry of the CLI's routes file (docs/dashboard.md task 7). The token
 * is never written out: the command reads it from `$ROUTING_TOKEN`.
 */
import { BASE, type Route } from "./api.js"
import { dialog, h, uid } from "./dom.js"

// Inside single quotes a shell takes everything literally but a single quote, which closes, escapes and reopens.
const shellQuoted = (text: string) => `'${text.replaceAll("'", "'\\''")}'`

// The route's fields but those the service assigns; those at their defaults are absent from the API's answer already.
const fieldsOf = (route: Route): Array<[string, unknown]> =>
  Object.entries(route).filter(([name]) => name !== "id" && name !== "createdAt")

const bodyOf = (route: Route) => JSON.stringify(Object.fromEntries(fieldsOf(route)))

export const curl = (route: Route): string =>
  [
    `curl -X POST ${shellQuoted(location.origin + BASE)}`,
    `  -H "Authorization: Bearer $ROUTING_TOKEN"`,
    `  -H 'Content-Type: application/json'`,
    `  --data ${shellQuoted(bodyOf(route))}`
  ].join(" \\\n")

// JSON strings are YAML's double-quoted scalars and JSON's objects and arrays its flow collections, so no value needs
// YAML's own quoting rules.
export const routesFileEntry = (route: Route): string =>
  [
    `- method: ${route.method}`,
    `  path: ${JSON.stringify(route.path)}`,
    `  middleware: ${JSON.stringify(route.middleware)}`,
    `  handler: ${route.handler}`,
    ...fieldsOf(route).filter(([name]) => !["method", "path", "middleware", "handler"].includes(name)).map((
      [name, value]
    ) => `  ${name}: ${JSON.stringify(value)}`)
  ].join("\n")

const block = (label: string, text: string) => {
  const id = uid("copy")
  const area = h("textarea", { id, readonly: true, rows: text.split("\n").length, spellcheck: "false" })
  area.value = text
  const feedback = h("span", { role: "status" })
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(text)
      feedback.textContent = "Copied."
    } catch {
      // No clipboard outside a secure context: the text is selected for the person to copy.
      area.select()
      feedback.textContent = "Selected: press Ctrl+C to copy."
    }
  }
  return h(
    "div",
    { class: "field" },
    h("label", { for: id }, label),
    area,
    h(
      "div",
      { class: "actions" },
      h("button", { type: "button", onclick: () => void copy() }, `Copy ${label.toLowerCase()}`),
      feedback
    )
  )
}

export const open = (route: Route): void => {
  const element = dialog(
    `Copy ${route.method} ${route.path}`,
    block("curl command", curl(route)),
    block("Routes-file entry", routesFileEntry(route)),
    h("div", { class: "actions" }, h("button", { type: "button", onclick: () => element.close() }, "Close"))
  )
}
