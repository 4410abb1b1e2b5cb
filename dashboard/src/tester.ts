/**
 * Which route serves a request (docs/dashboard.md task 4, over `GET /v1/routing/match`): the route and its
 * parameters, or the 404/405 with `Allow`, and every other candidate with the reason it does not serve it.
 */
import { call, describe, type Route, type Session } from "./api.js"
import { field, h, replace } from "./dom.js"

interface Match {
  readonly outcome: "route" | "method_not_allowed" | "not_found" | "bad_path"
  readonly route: Route | null
  /** The handler a split chose for the key, beside a route that has a split (docs/http-api.md, match). */
  readonly split?: { readonly key: string | null; readonly bucket: number | null; readonly handler: string }
  readonly params: Readonly<Record<string, string>> | null
  readonly allow: ReadonlyArray<string>
  readonly candidates: ReadonlyArray<{ readonly route: Route; readonly reason: string }>
  /** The entry the host declares when it serves the path itself (docs/http-api.md, match). */
  readonly servedByHost?: string
}

const OUTCOMES: Record<Match["outcome"], string> = {
  route: "Served by a stored route",
  method_not_allowed: "405 Method Not Allowed: stored routes serve this path with other methods",
  not_found: "404 Not Found: no stored route serves this path",
  bad_path: "400 Bad Request: the path is malformed"
}

const routeLine = (route: Route) => `${route.method} ${route.path} → ${route.handler}`

// A full URL is taken for its path and query: people paste what their browser shows.
const targetOf = (text: string): string => {
  const trimmed = text.trim()
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(trimmed) && URL.canParse(trimmed)) {
    const parsed = new URL(trimmed)
    return parsed.pathname + parsed.search
  }
  return trimmed
}

// `name: value` a line, as the API's `header` parameter takes each (`name:value`).
const headersOf = (text: string): Array<string> =>
  text.split("\n").map((line) => line.trim()).filter((line) => line !== "").map((line) => {
    const at = line.indexOf(":")
    return at < 0 ? line : `${line.slice(0, at).trim()}:${line.slice(at + 1).trim()}`
  })

const outcomeOf = (match: Match): string =>
  match.servedByHost === undefined
    ? OUTCOMES[match.outcome] ?? match.outcome
    : `Served by the host itself (it declares ${match.servedByHost}), before any stored route`

const render = (match: Match): Array<Node> => {
  const nodes: Array<Node> = [h("p", { class: "outcome" }, outcomeOf(match))]
  if (match.route !== null) nodes.push(h("p", {}, "Route: ", h("code", {}, routeLine(match.route))))
  if (match.split !== undefined) {
    const { bucket, handler, key } = match.split
    nodes.push(
      h(
        "p",
        { class: "split-choice" },
        key === null
          ? "Split: no key, so the route's handler serves it: "
          : `Split: key ${JSON.stringify(key)}, bucket ${bucket}, served by `,
        h("code", {}, handler)
      )
    )
  }
  const params = Object.entries(match.params ?? {})
  if (params.length > 0) {
    nodes.push(
      h(
        "table",
        { "aria-label": "Parameters" },
        h("thead", {}, h("tr", {}, h("th", { scope: "col" }, "Parameter"), h("th", { scope: "col" }, "Value"))),
        h(
          "tbody",
          {},
          ...params.map(([name, value]) => h("tr", {}, h("td", {}, name), h("td", {}, h("code", {}, value))))
        )
      )
    )
  }
  if (match.allow.length > 0) nodes.push(h("p", {}, `Allow: ${match.allow.join(", ")}`))
  if (match.candidates.length > 0) {
    nodes.push(
      h("h3", {}, "Other candidates"),
      h("ul", {}, ...match.candidates.map((c) => h("li", {}, h("code", {}, routeLine(c.route)), ": ", c.reason)))
    )
  }
  return nodes
}

export const tester = (session: Session): HTMLElement => {
  const method = field("Request method", { value: "GET" })
  const target = field("Request URL", { placeholder: "/users/42" }, "a path, with or without its query, or a whole URL")
  const host = field("Request host", { placeholder: "api.example.com" }, "the Host header, for routes with a host")
  const headers = field("Request headers", {}, "one a line, name: value", "lines")
  const key = field("Split key", {}, "the key a split reads (a header's, cookie's or query parameter's value)")
  const result = h("section", { class: "result", "aria-label": "Result", "aria-live": "polite" })
  const test = async () => {
    replace(result, h("p", {}, "Testing…"))
    const answer = await call<Match>(session, "/match", {
      query: {
        method: method.input.value.trim(),
        path: targetOf(target.input.value),
        host: host.input.value.trim(),
        header: headersOf(headers.input.value),
        key: key.input.value
      }
    })
    if (answer.value === undefined) {
      const problem = answer.problem!
      replace(
        result,
        h("p", { class: "problem" }, describe(problem)),
        ...(problem.errors ?? []).map((e) => h("p", { class: "problem" }, `${e.path}: ${e.message}`))
      )
      return
    }
    replace(result, ...render(answer.value))
  }
  return h(
    "section",
    { class: "tester", "aria-labelledby": "tester-heading" },
    h("h2", { id: "tester-heading" }, "Test a request"),
    h(
      "form",
      {
        onsubmit: (event: Event) => {
          event.preventDefault()
          void test()
        }
      },
      method.row,
      target.row,
      host.row,
      headers.row,
      key.row,
      h("button", { type: "submit", class: "primary" }, "Test")
    ),
    result
  )
}
