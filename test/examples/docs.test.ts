import { assert, describe, it } from "@effect/vitest"
import * as RoutingApi from "route-registry/RoutingApi"
import { docsPage, markdown } from "../../examples/docs.js"

const spec = RoutingApi.openApi as any

// The text a reader sees: tags dropped, entities decoded, whitespace collapsed.
const text = (html: string) =>
  html.replace(/<style>[\s\S]*?<\/style>/, "").replace(/<br>/g, " ").replace(/<[^>]+>/g, "")
    .replace(/&#(\d+);/g, (_, n: string) => String.fromCharCode(Number(n))).replace(/&lt;/g, "<").replace(/&gt;/g, ">")
    .replace(/&amp;/g, "&").replace(/\s+/g, " ")

// What a description reads as once its Markdown is rendered.
const plain = (description: string) => text(markdown(description))

const page = text(docsPage(spec))

const operations = Object.entries<any>(spec.paths).flatMap(([path, item]) =>
  Object.entries<any>(item).map(([method, operation]) => ({ path, method, operation }))
)

describe("examples/docs", () => {
  it("renders the Markdown subset instead of showing it", () => {
    assert.strictEqual(
      markdown("Use `If-Match` **now**, *then* retry.\nNext line.\n\n- one `a*b`\n- two"),
      "<p>Use <code>If-Match</code> <strong>now</strong>, <em>then</em> retry.<br>Next line.</p>" +
        "<ul><li>one <code>a*b</code></li><li>two</li></ul>"
    )
    assert.strictEqual(markdown("<script>"), "<p>&#60;script&#62;</p>")
  })

  it("leaves no literal Markdown in the page's text", () => {
    assert.notInclude(page, "`")
    assert.notInclude(page, "**")
    assert.notMatch(page, /(^|\s)\*\S[^*]*\*(\s|$)/)
  })

  it("shows every operation, its parameters and its responses, descriptions in full", () => {
    for (const { method, operation, path } of operations) {
      assert.include(page, `${method.toUpperCase()} ${path}`)
      assert.include(page, operation.summary)
      assert.include(page, plain(operation.description))
      for (const parameter of operation.parameters) {
        assert.include(page, parameter.name)
        assert.include(page, plain(parameter.description))
      }
      for (const type of Object.keys(operation.requestBody?.content ?? {})) assert.include(page, type)
      for (const response of Object.values<any>(operation.responses)) {
        assert.include(page, plain(response.description))
        for (const [name, header] of Object.entries<any>(response.headers ?? {})) {
          assert.include(page, name)
          assert.include(page, plain(header.description))
        }
      }
    }
  })

  it("shows every description of the document, wherever it is, in full", () => {
    const descriptions: Array<string> = []
    const walk = (value: unknown): void => {
      if (Array.isArray(value)) return value.forEach(walk)
      if (typeof value !== "object" || value === null) return
      for (const [key, member] of Object.entries(value)) {
        if (key === "description" && typeof member === "string") descriptions.push(member)
        else walk(member)
      }
    }
    walk(spec)
    assert.isAbove(descriptions.length, 50)
    for (const description of descriptions) assert.include(page, plain(description))
  })

  it("shows every schema with its description and the patterns in full", () => {
    for (const [name, schema] of Object.entries<any>(spec.components.schemas)) {
      assert.include(page, name)
      if (schema.description !== undefined) assert.include(page, plain(schema.description))
    }
    for (const pattern of JSON.stringify(spec).match(/"pattern":"(?:[^"\\]|\\.)*"/g)!) {
      assert.include(page, JSON.parse(`{${pattern}}`).pattern)
    }
  })

  it("wraps long words instead of clipping them", () => {
    const html = docsPage(spec)
    assert.match(html, /body\{[^}]*overflow-wrap:anywhere/)
    assert.notMatch(html, /overflow:\s*(hidden|auto|scroll)/)
    assert.notMatch(html, /white-space:\s*(pre|nowrap)(;|\})/)
  })
})
