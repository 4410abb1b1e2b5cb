/**
 * The reference page the example host serves at /docs: built from the OpenAPI document alone, self-contained (no
 * CDN, no script). Descriptions may use a little Markdown (code spans, emphasis, line breaks, lists); it is rendered,
 * never shown literally. Long paths, patterns and JSON wrap instead of running off the page.
 */

const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`)

// Inline Markdown on escaped text: code spans first, so their content is left as written.
const inline = (text: string): string =>
  escapeHtml(text).split(/(`[^`]*`)/).map((part) =>
    part.startsWith("`") && part.endsWith("`") && part.length > 1
      ? `<code>${part.slice(1, -1)}</code>`
      : part.replace(/\*\*([^*]+)\*\*/g, "<strong>$1</strong>").replace(
        /(^|[^*\w])[*_]([^*_]+)[*_](?=$|[^*\w])/g,
        "$1<em>$2</em>"
      )
  ).join("")

const LIST_ITEM = /^\s*[-*]\s+/

/** Renders the Markdown subset descriptions use: paragraphs, line breaks, `-` lists, code spans and emphasis. */
export const markdown = (text: string): string =>
  text.split(/\n{2,}/).map((block) => {
    const lines = block.split("\n")
    if (lines.every((line) => LIST_ITEM.test(line))) {
      return `<ul>${lines.map((line) => `<li>${inline(line.replace(LIST_ITEM, ""))}</li>`).join("")}</ul>`
    }
    return `<p>${lines.map(inline).join("<br>")}</p>`
  }).join("")

type Json = Record<string, any>

const code = (value: unknown) => `<code>${escapeHtml(typeof value === "string" ? value : JSON.stringify(value))}</code>`

// A schema in one line: its type or reference, then every constraint it states.
const schemaSummary = (schema: Json | undefined): string => {
  if (schema === undefined) return ""
  if (schema.$ref !== undefined) return refLink(schema.$ref)
  if (schema.anyOf !== undefined) return schema.anyOf.map(schemaSummary).join(" or ")
  const { description: _, examples: __, title: ___, ...rest } = schema
  return Object.entries(rest).map(([key, value]) =>
    key === "type"
      ? code(value)
      : key === "items"
      ? `items: ${schemaSummary(value)}${itemsDescription(value)}`
      : `${key} ${code(value)}`
  ).join(", ")
}

const itemsDescription = (items: Json) => items.description === undefined ? "" : ` (${inline(items.description)})`

const refName = (ref: string) => ref.split("/").pop()!
const refLink = (ref: string) => `<a href="#${escapeHtml(refName(ref))}">${escapeHtml(refName(ref))}</a>`

const parametersTable = (parameters: ReadonlyArray<Json>): string =>
  parameters.length === 0 ?
    "" :
    `<h4>Parameters</h4><table><tr><th>name</th><th>in</th><th>schema</th><th>description</th></tr>${
      parameters.map((p) =>
        `<tr><td>${code(p.name)}${p.required ? " (required)" : ""}</td><td>${escapeHtml(p.in)}</td><td>${
          schemaSummary(p.schema)
        }</td><td>${markdown(p.description ?? "")}</td></tr>`
      ).join("")
    }</table>`

const requestBody = (body: Json | undefined): string =>
  body === undefined ?
    "" :
    `<h4>Request body</h4><table>${
      Object.entries<Json>(body.content).map(([type, media]) =>
        `<tr><td>${code(type)}</td><td>${schemaSummary(media.schema)}</td></tr>`
      ).join("")
    }</table>`

const headersList = (headers: Json | undefined): string =>
  headers === undefined ?
    "" :
    `<ul>${
      Object.entries<Json>(headers).map(([name, header]) =>
        `<li>${code(name)}${header.required ? " (always)" : ""}: ${schemaSummary(header.schema)}. ${
          markdown(header.description ?? "")
        }</li>`
      ).join("")
    }</ul>`

const responsesTable = (responses: Json): string =>
  `<h4>Responses</h4><table><tr><th>status</th><th>body</th><th>description and headers</th></tr>${
    Object.entries<Json>(responses).map(([status, response]) =>
      `<tr><td>${escapeHtml(status)}</td><td>${
        Object.entries<Json>(response.content ?? {}).map(([type, media]) =>
          `${code(type)}: ${schemaSummary(media.schema)}`
        ).join("<br>") || "none"
      }</td><td>${markdown(response.description ?? "")}${headersList(response.headers)}</td></tr>`
    ).join("")
  }</table>`

// An object schema as a table of its properties; any other schema in one line.
const schemaBody = (schema: Json): string => {
  if (schema.properties === undefined) return `<p>${schemaSummary(schema)}</p>`
  const { description: _, properties, required = [], type: __, ...rest } = schema
  const constraints = Object.entries(rest).map(([key, value]) => `${key} ${code(value)}`).join(", ")
  return `${constraints === "" ? "" : `<p>Object: ${constraints}.</p>`}<table><tr><th>property</th><th>schema</th>
<th>description</th></tr>${
    Object.entries<Json>(properties).map(([name, property]) =>
      `<tr><td>${code(name)}${required.includes(name) ? " (required)" : ""}</td><td>${
        schemaSummary(property)
      }</td><td>${markdown(property.description ?? "")}</td></tr>`
    ).join("")
  }</table>`
}

const operationSection = (path: string, method: string, operation: Json): string =>
  `<section><h3>${escapeHtml(method.toUpperCase())} ${code(path)}</h3><p><strong>${
    escapeHtml(operation.summary ?? "")
  }</strong></p>${markdown(operation.description ?? "")}${parametersTable(operation.parameters ?? [])}${
    requestBody(operation.requestBody)
  }${responsesTable(operation.responses)}</section>`

const STYLE = `body{font:15px/1.5 system-ui,sans-serif;max-width:64rem;margin:2rem auto;padding:0 1rem;
overflow-wrap:anywhere}table{border-collapse:collapse;width:100%;table-layout:fixed}th,td{text-align:left;
padding:.3rem .6rem;vertical-align:top;border-bottom:1px solid #ddd;overflow-wrap:anywhere}th:first-child,
td:first-child{width:22%}code{background:#f3f3f3;padding:0 .2rem;border-radius:3px;overflow-wrap:anywhere;
word-break:break-word}pre{background:#f6f6f6;padding:1rem;white-space:pre-wrap;overflow-wrap:anywhere}
section{margin-bottom:2.5rem}td p,td ul{margin:0 0 .3rem}
@media (max-width:40rem){table,tr,td{display:block;width:auto!important}th{display:none}td{border:0;padding:.1rem 0}
tr{border-bottom:1px solid #ddd;padding:.4rem 0}}`

/** A self-contained HTML reference page for an OpenAPI 3.1 document. */
export const docsPage = (spec: Json): string => {
  const operations = Object.entries<Json>(spec.paths).flatMap(([path, item]) =>
    Object.entries<Json>(item).map(([method, operation]) => operationSection(path, method, operation))
  ).join("")
  const schemas = Object.entries<Json>(spec.components?.schemas ?? {}).map(([name, schema]) =>
    `<h3 id="${escapeHtml(name)}">${escapeHtml(name)}</h3>${markdown(schema.description ?? "")}${schemaBody(schema)}`
  ).join("")
  const servers = (spec.servers ?? []).map((server: Json) =>
    `<p>Server ${code(server.url)}: ${inline(server.description ?? "")}</p>`
  ).join("")
  const tags = (spec.tags ?? []).map((tag: Json) => markdown(tag.description ?? "")).join("")
  const license = spec.info.license === undefined ? "" : ` License: ${escapeHtml(spec.info.license.name)}.`
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport"
content="width=device-width,initial-scale=1"><title>${escapeHtml(spec.info.title)}</title><style>${STYLE}</style>
</head><body><h1>${escapeHtml(spec.info.title)}</h1>${markdown(spec.info.description ?? "")}<p>Version ${
    escapeHtml(spec.info.version)
  }.${license} Every request needs <code>Authorization: Bearer &lt;token&gt;</code>. Machine-readable:
<a href="/openapi.json">/openapi.json</a>.</p>${servers}<h2>Operations</h2>${tags}${operations}<h2>Schemas</h2>${schemas}</body></html>`
}
