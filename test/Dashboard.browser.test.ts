/**
 * The dashboard in a real browser (docs/dashboard.md): Chromium, driven by Playwright through each task by the accessible
 * names docs/dashboard.md lists, on both stores, against `npm start`'s host with the dashboard on. Also: an XSS attempt
 * through an echoed problem detail, a read-only token, two tabs editing one route, and axe-core.
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import express from "express"
import * as Fs from "node:fs"
import { createRequire } from "node:module"
import * as Path from "node:path"
import type { Browser, BrowserContextOptions, Locator, Page } from "playwright-core"
import * as Authenticator from "route-registry/Authenticator"
import { routeRegistry as expressRegistry } from "route-registry/express"
import * as Demo from "../examples/catalog.js"
import { makeHost, withTable } from "../examples/server.js"
import { launch, listen, screenshotDir } from "./utils/browser.js"
import { follow } from "./utils/followers.js"
import { ADMIN, READER, REPORTER, tokens } from "./utils/httpContract.js"
import { memory, stores } from "./utils/stores.js"

const axeSource = Fs.readFileSync(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8")

interface StoredRoute {
  readonly id: string
  readonly method: string
  readonly path: string
  readonly middleware: ReadonlyArray<string>
  readonly handler: string
}

let browser: Browser

// A step that cannot pass fails in 10 s, not at the test's timeout, saying what it waited for.
const STEP_TIMEOUT_MILLIS = 10_000

beforeAll(async () => {
  const launched = await launch()
  const newContext = launched.newContext.bind(launched)
  // The tests' pages share one context, whose renderer serves each origin's pages: a context of its own for each page
  // started a renderer for each. The dashboard keeps its token in the page's memory alone (a test checks it), so a new
  // page of the shared context starts signed out, as a new context's would; tests needing a context of their own (a
  // time zone) make one.
  const shared = await newContext()
  shared.setDefaultTimeout(STEP_TIMEOUT_MILLIS)
  browser = Object.assign(launched, {
    newPage: () => shared.newPage(),
    newContext: async (options?: BrowserContextOptions) => {
      const context = await newContext(options)
      context.setDefaultTimeout(STEP_TIMEOUT_MILLIS)
      return context
    }
  })
})

afterAll(async () => {
  await browser?.close()
})

describe("dashboard under a prefix mount (Express, app.use(\"/admin\", …))", () => {
  it("reads and writes the API below the prefix, live", async () => {
    const app = express()
    const registry = expressRegistry({ authenticator: tokens, handlers: {}, dashboard: true })
    app.use("/admin", registry)
    await registry.ready
    const server = await listen(app)
    const page = await browser.newPage()
    try {
      await page.goto(`${server.origin}/admin/v1/routing/ui/`)
      await page.getByRole("textbox", { name: "Token" }).fill(ADMIN)
      await page.getByRole("button", { name: "Sign in" }).click()
      await page.getByRole("status").filter({ hasText: /^live$/ }).waitFor()
      await page.getByRole("button", { name: "New route" }).click()
      const form = page.getByRole("dialog", { name: "New route" })
      await form.getByRole("textbox", { name: "Method" }).fill("GET")
      await form.getByRole("textbox", { name: "Path" }).fill("/under/:prefix")
      await form.getByRole("textbox", { name: "Handler" }).fill("show")
      await form.getByRole("button", { name: "Save" }).click()
      await form.waitFor({ state: "detached" })
      await page.getByRole("table", { name: "Routes" }).getByText("/under/:prefix", { exact: true }).waitFor()
      const listed = await fetch(`${server.origin}/admin/v1/routing`, { headers: { authorization: `Bearer ${ADMIN}` } })
      assert.deepStrictEqual((await listed.json()).items.map((r: { path: string }) => r.path), ["/under/:prefix"])
    } finally {
      await page.close()
      await server.close()
      await registry.close()
    }
  })
})

describe("a session whose token expires", () => {
  it("the page stops saying live and asks the person to sign in again", async () => {
    // Every request's token expires 2 s after it is presented, as a short-lived JWT does.
    const expiring = Layer.succeed(Authenticator.Authenticator, {
      authenticate: () =>
        Effect.sync(() => ({
          id: "short-lived",
          scopes: ["routes:read"],
          expiresAt: new Date(Date.now() + 2_000)
        }))
    })
    const registry = expressRegistry({ authenticator: expiring, handlers: {}, dashboard: true })
    await registry.ready
    const server = await listen(express().use(registry))
    const page = await browser.newPage()
    try {
      await page.goto(`${server.origin}/v1/routing/ui/`)
      await page.getByRole("textbox", { name: "Token" }).fill("any-token")
      await page.getByRole("button", { name: "Sign in" }).click()
      await page.getByRole("status").filter({ hasText: /^live$/ }).waitFor()
      await page.getByRole("alert").filter({ hasText: /session expired/ }).waitFor({ timeout: 20_000 })
      await page.getByRole("button", { name: "Sign in" }).waitFor()
    } finally {
      await page.close()
      await server.close()
      await registry.close()
    }
  })
})

describe.each(stores)("dashboard on the %s", (storeName, store) => {
  let origin: string
  let closeHost: () => Promise<void>
  let closeStreams: () => void
  // Screenshots for docs/dashboard.md, from one store's run.
  const shoot = (page: Page, name: string, options: { readonly fullPage?: boolean } = {}) =>
    storeName === "memory store"
      ? page.screenshot({ ...options, path: Path.join(screenshotDir, `dashboard-${name}.png`) })
      : undefined

  beforeAll(async () => {
    const host = await makeHost({
      services: withTable(Layer.merge(store, tokens)),
      functions: Demo.functions,
      dashboard: true
    })
    const server = await listen(host.listener)
    origin = server.origin
    closeStreams = host.closeStreams
    closeHost = async () => {
      host.closeStreams()
      await server.close()
      await host.dispose()
    }
  })

  afterAll(() => closeHost?.())

  const api = async (method: string, path: string, body?: unknown, token = ADMIN) => {
    const response = await fetch(`${origin}/v1/routing${path}`, {
      method,
      headers: {
        authorization: `Bearer ${token}`,
        ...(body === undefined ? {} : { "content-type": "application/json" })
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) })
    })
    const text = await response.text()
    return { status: response.status, headers: response.headers, body: text === "" ? undefined : JSON.parse(text) }
  }

  const create = async (method: string, path: string, handler = "echo", middleware: Array<string> = []) => {
    const answer = await api("POST", "", { method, path, handler, middleware })
    assert.strictEqual(answer.status, 201, JSON.stringify(answer.body))
    return answer.body as StoredRoute
  }

  let unique = 0
  /** A path prefix no other test uses, so the tests' routes never meet. */
  const fresh = () => `/t${++unique}x${Date.now().toString(36)}`

  const signIn = async (token = ADMIN, page?: Page): Promise<Page> => {
    const tab = page ?? await browser.newPage()
    await tab.goto(`${origin}/v1/routing/ui/`)
    await tab.getByRole("textbox", { name: "Token" }).fill(token)
    await tab.getByRole("button", { name: "Sign in" }).click()
    await tab.getByRole("table", { name: "Routes" }).waitFor()
    await tab.getByRole("status").filter({ hasText: /^live$/ }).waitFor()
    return tab
  }

  /** That `time` shows `iso` in the reader's zone (an en-US reader), with `iso` in UTC on hover and in `datetime`. */
  const shows = async (time: Locator, iso: string, timeZone: string) => {
    assert.strictEqual(await time.getAttribute("datetime"), iso)
    assert.strictEqual(await time.getAttribute("title"), `${iso.replace("T", " ").replace("Z", "")} UTC`)
    const local = (options: Intl.DateTimeFormatOptions) =>
      new Intl.DateTimeFormat("en-US", { ...options, timeZone }).format(new Date(iso))
    assert.strictEqual(await time.textContent(), `${local({ dateStyle: "medium" })} ${local({ timeStyle: "medium" })}`)
  }

  const row = (page: Page, path: string) =>
    page.getByRole("table", { name: "Routes" }).getByRole("row").filter({ has: page.getByText(path, { exact: true }) })

  // What the page does by itself (headers, signing in, filters, the tester, the fleet, copying, problems, tokens,
  // layout, keyboard, accessibility) reads the API's answers, which the HTTP contract checks on both stores: it runs on
  // the memory store. What reads back what a store kept (creates, edits, history and restores, splits, fields,
  // conditions, change sets, the log) runs on both (docs/development.md#what-runs-over-what).
  const pageTest = (name: string, test: () => Promise<void>) => storeName === memory[0] ? it(name, test) : undefined

  pageTest("serves the page with its security headers and hashed, immutable assets", async () => {
    const page = await fetch(`${origin}/v1/routing/ui/`)
    assert.strictEqual(page.status, 200)
    const csp = page.headers.get("content-security-policy") ?? ""
    assert.include(csp, "frame-ancestors 'none'")
    assert.notInclude(csp, "unsafe-inline")
    assert.notInclude(csp, "unsafe-eval")
    assert.strictEqual(page.headers.get("x-content-type-options"), "nosniff")
    assert.strictEqual(page.headers.get("referrer-policy"), "no-referrer")
    assert.strictEqual(page.headers.get("cache-control"), "no-cache")
    const html = await page.text()
    const assets = [...html.matchAll(/(?:src|href)="(main-[A-Z0-9]+\.(?:js|css))"/g)].map((m) => m[1]!)
    assert.strictEqual(assets.length, 2)
    for (const asset of assets) {
      const answer = await fetch(`${origin}/v1/routing/ui/${asset}`)
      assert.strictEqual(answer.status, 200)
      assert.strictEqual(answer.headers.get("cache-control"), "public, max-age=31536000, immutable")
      assert.strictEqual(answer.headers.get("x-content-type-options"), "nosniff")
    }
  })

  pageTest("signs in with a token kept out of the URL, cookies and storage, and signs out forgetting it", async () => {
    const page = await browser.newPage()
    await page.goto(`${origin}/v1/routing/ui/`)
    await shoot(page, "sign-in")
    const token = page.getByRole("textbox", { name: "Token" })
    await token.fill("not-a-token")
    await page.getByRole("button", { name: "Sign in" }).click()
    await page.getByText(/invalid_token|Unauthorized|token/i).first().waitFor()
    await signIn(ADMIN, page)
    assert.notInclude(page.url(), ADMIN)
    const kept = await page.evaluate(() => ({
      cookies: document.cookie,
      local: JSON.stringify(localStorage),
      session: JSON.stringify(sessionStorage)
    }))
    assert.notInclude(JSON.stringify(kept), ADMIN)
    assert.deepStrictEqual((await page.context().cookies()).length, 0)
    await page.getByRole("button", { name: "Sign out" }).click()
    await page.getByRole("textbox", { name: "Token" }).waitFor()
    assert.strictEqual(await page.getByRole("table", { name: "Routes" }).count(), 0)
    await page.close()
  })

  pageTest("task 1: lists the routes and filters them by method, path prefix, handler and middleware", async () => {
    const prefix = fresh()
    await create("GET", `${prefix}/users/:id`, "echo", ["requestId"])
    await create("POST", `${prefix}/users`, "echo", ["timing"])
    await create("GET", `${prefix}/orders`, "other")
    const page = await signIn()
    const table = page.getByRole("table", { name: "Routes" })
    for (const name of ["Method", "Path", "Middleware", "Handler"]) {
      await table.getByRole("columnheader", { name, exact: true }).waitFor()
    }
    await page.getByRole("textbox", { name: "Filter by path prefix" }).fill(prefix)
    await row(page, `${prefix}/orders`).waitFor()
    assert.strictEqual(await table.getByRole("row").count(), 4) // the header and three routes
    await page.getByRole("textbox", { name: "Filter by method" }).fill("POST")
    await row(page, `${prefix}/orders`).waitFor({ state: "detached" })
    assert.strictEqual(await table.getByRole("row").count(), 2)
    await row(page, `${prefix}/users`).waitFor()
    await page.getByRole("textbox", { name: "Filter by method" }).fill("")
    await page.getByRole("textbox", { name: "Filter by handler" }).fill("other")
    await row(page, `${prefix}/users/:id`).waitFor({ state: "detached" })
    await row(page, `${prefix}/orders`).waitFor()
    await page.getByRole("textbox", { name: "Filter by handler" }).fill("")
    await page.getByRole("textbox", { name: "Filter by middleware" }).fill("requestId")
    await row(page, `${prefix}/users/:id`).waitFor()
    await row(page, `${prefix}/orders`).waitFor({ state: "detached" })
    await shoot(page, "list")
    // A filter the API refuses is shown at its field.
    await page.getByRole("textbox", { name: "Filter by method" }).fill("get")
    await page.getByText(/GET/).and(page.locator(".problem")).first().waitFor()
    await page.close()
  })

  pageTest("task 1: searches path, handler and middleware with the API's q", async () => {
    const prefix = fresh()
    await create("GET", `${prefix}/needle/a`)
    await create("GET", `${prefix}/hay`, "needleHandler")
    await create("GET", `${prefix}/other`)
    const page = await signIn()
    await page.getByRole("searchbox", { name: "Search" }).fill(`${prefix}/needle`)
    await row(page, `${prefix}/other`).waitFor({ state: "detached" })
    await row(page, `${prefix}/needle/a`).waitFor()
    await page.getByRole("searchbox", { name: "Search" }).fill("needleHandler")
    await row(page, `${prefix}/hay`).waitFor()
    await page.close()
  })

  pageTest(
    "task 2: shows changes made elsewhere without reloading, and whether it is live or reconnecting",
    async () => {
      const prefix = fresh()
      const page = await signIn()
      const made = await create("GET", `${prefix}/elsewhere`)
      await row(page, `${prefix}/elsewhere`).waitFor({ timeout: 5_000 })
      await api("PATCH", `/${made.id}`, { handler: "changedElsewhere" })
      await row(page, `${prefix}/elsewhere`).getByText("changedElsewhere").waitFor({ timeout: 5_000 })
      await api("DELETE", `/${made.id}`)
      await row(page, `${prefix}/elsewhere`).waitFor({ state: "detached", timeout: 5_000 })
      // The server ends the stream: the page says so, comes back by itself, and catches up on what it missed.
      closeStreams()
      await page.getByRole("status").filter({ hasText: /^(reconnecting|live)$/ }).waitFor()
      const missed = await create("GET", `${prefix}/missed`)
      await page.getByRole("status").filter({ hasText: /^live$/ }).waitFor({ timeout: 10_000 })
      await row(page, `${prefix}/missed`).waitFor({ timeout: 10_000 })
      await shoot(page, "live")
      await api("DELETE", `/${missed.id}`)
      await page.close()
    }
  )

  it("task 3: creates (a path's problem at its position), edits only what changed, deletes after asking", async () => {
    const prefix = fresh()
    const page = await signIn()
    const sent: Array<{ method: string; url: string; body: string | null; ifMatch: string | undefined }> = []
    page.on("request", (request) => {
      if (request.url().includes("/v1/routing") && request.method() !== "GET") {
        sent.push({
          method: request.method(),
          url: request.url(),
          body: request.postData(),
          ifMatch: request.headers()["if-match"]
        })
      }
    })
    await page.getByRole("button", { name: "New route" }).click()
    const form = page.getByRole("dialog", { name: "New route" })
    await form.getByRole("textbox", { name: "Method" }).fill("GET")
    await form.getByRole("textbox", { name: "Path" }).fill(`${prefix}//items`)
    await form.getByRole("textbox", { name: "Middleware" }).fill("requestId, timing")
    await form.getByRole("textbox", { name: "Handler" }).fill("echo")
    await form.getByRole("button", { name: "Save" }).click()
    // The problem at the Path field, and its position marked in the path.
    const index = prefix.length
    await form.getByText(new RegExp(`index ${index}`)).first().waitFor()
    assert.strictEqual(await form.locator("mark").count(), 1)
    await shoot(page, "path-problem")
    await form.getByRole("textbox", { name: "Path" }).fill(`${prefix}/items/:id`)
    await form.getByRole("button", { name: "Save" }).click()
    await form.waitFor({ state: "detached" })
    const created = row(page, `${prefix}/items/:id`)
    await created.waitFor()
    await created.getByText("requestId, timing").waitFor()

    // An edit sends only the field that changed, with If-Match.
    sent.length = 0
    await created.getByRole("button", { name: "Edit" }).click()
    const edit = page.getByRole("dialog", { name: "Edit route" })
    await edit.getByRole("textbox", { name: "Handler" }).fill("renamed")
    await shoot(page, "edit")
    await edit.getByRole("button", { name: "Save" }).click()
    await edit.waitFor({ state: "detached" })
    await created.getByText("renamed").waitFor()
    const patches = sent.filter((s) => s.method === "PATCH" && !s.url.includes("dryRun"))
    assert.strictEqual(patches.length, 1)
    assert.deepStrictEqual(JSON.parse(patches[0]!.body!), { handler: "renamed" })
    assert.match(patches[0]!.ifMatch ?? "", /^"/)

    // Saving an unchanged form sends nothing.
    sent.length = 0
    await created.getByRole("button", { name: "Edit" }).click()
    await page.getByRole("dialog", { name: "Edit route" }).getByRole("button", { name: "Save" }).click()
    await page.getByRole("dialog", { name: "Edit route" }).waitFor({ state: "detached" })
    // A dry run the form sent while it was open changes nothing either.
    assert.deepStrictEqual(sent.filter((s) => s.method === "PATCH" && !s.url.includes("dryRun")), [])

    // A delete asks first; cancelling keeps the route.
    await created.getByRole("button", { name: "Delete" }).click()
    await page.getByRole("dialog", { name: "Delete this route?" }).getByRole("button", { name: "Cancel" }).click()
    assert.deepStrictEqual(sent.filter((s) => s.method === "DELETE"), [])
    await created.getByRole("button", { name: "Delete" }).click()
    await shoot(page, "delete")
    // The row can leave the page for a moment while the list is drawn again: the DELETE's answer is what to wait for.
    const deleted = page.waitForResponse((response) => response.request().method() === "DELETE")
    await page.getByRole("dialog", { name: "Delete this route?" }).getByRole("button", { name: "Confirm" }).click()
    assert.strictEqual((await deleted).status(), 204)
    await created.waitFor({ state: "detached" })
    const id = (await api("GET", `?pathPrefix=${encodeURIComponent(prefix)}`)).body.items
    assert.deepStrictEqual(id, [])
    await page.close()
  })

  pageTest("task 3: checks the form as the person types, through dry runs", async () => {
    const prefix = fresh()
    const page = await signIn()
    await page.getByRole("button", { name: "New route" }).click()
    const form = page.getByRole("dialog", { name: "New route" })
    await form.getByRole("textbox", { name: "Method" }).fill("GET")
    await form.getByRole("textbox", { name: "Handler" }).fill("echo")
    await form.getByRole("textbox", { name: "Path" }).fill(`${prefix}/a b`)
    // No Save: the problem comes from a dry run, and nothing is stored.
    await form.getByText(new RegExp(`index ${prefix.length + 2}`)).first().waitFor({ timeout: 5_000 })
    await form.getByRole("textbox", { name: "Path" }).fill(`${prefix}/ab`)
    await form.getByText("Looks good.").waitFor({ timeout: 5_000 })
    assert.deepStrictEqual((await api("GET", `?pathPrefix=${encodeURIComponent(prefix)}`)).body.items, [])
    await page.close()
  })

  pageTest("task 4: tests a request: its route and parameters, or the 405 with Allow, and the candidates", async () => {
    const prefix = fresh()
    await create("GET", `${prefix}/users/:id`)
    await create("GET", `${prefix}/users/*rest`)
    const page = await signIn()
    await page.getByRole("textbox", { name: "Request method" }).fill("GET")
    await page.getByRole("textbox", { name: "Request URL" }).fill(`${prefix}/users/42?x=1`)
    await page.getByRole("button", { name: "Test" }).click()
    const result = page.getByRole("region", { name: "Result" })
    await result.getByText(`GET ${prefix}/users/:id → echo`).waitFor()
    await result.getByRole("cell", { name: "42", exact: true }).waitFor()
    await result.getByText(`${prefix}/users/*rest`).waitFor()
    await shoot(page, "tester")
    await page.getByRole("textbox", { name: "Request method" }).fill("DELETE")
    await page.getByRole("button", { name: "Test" }).click()
    await result.getByText("Allow: GET, HEAD").waitFor()
    // A path the host serves itself is said to be the host's.
    await page.getByRole("textbox", { name: "Request method" }).fill("GET")
    await page.getByRole("textbox", { name: "Request URL" }).fill("/docs")
    await page.getByRole("button", { name: "Test" }).click()
    await result.getByText("Served by the host itself (it declares /docs), before any stored route").waitFor()
    await page.close()
  })

  it("task 5: reads a route's history side by side, restores a revision after confirming", async () => {
    const prefix = fresh()
    const made = await create("GET", `${prefix}/history`, "first")
    await api("PATCH", `/${made.id}`, { handler: "second" })
    const context = await browser.newContext({ timezoneId: "America/St_Johns", locale: "en-US" })
    const page = await signIn(ADMIN, await context.newPage())
    await page.getByRole("region", { name: "Recent changes" }).getByRole("button", { name: "Restore" }).first()
      .waitFor()
    await row(page, `${prefix}/history`).getByRole("button", { name: "History" }).click()
    const history = page.getByRole("dialog", { name: `History of GET ${prefix}/history` })
    await history.getByText("update").first().waitFor()
    await history.getByText("admin").first().waitFor()
    await shoot(page, "history")
    // Times in the reader's time zone, UTC on hover.
    const [update] = (await api("GET", `/${made.id}/history?limit=1`)).body.items
    await shows(history.locator("time").first(), update.at, "America/St_Johns")
    // While the dialog is open, the page behind it (Recent changes, with a "Restore" of its own per entry) is hidden
    // from assistive technology: a reader, or a query by accessible name, finds the dialog's buttons alone.
    assert.strictEqual(
      await page.getByRole("button", { name: "Restore" }).count(),
      await history.getByRole("button", { name: "Restore" }).count()
    )
    // The create's revision, restored: the handler is "first" again.
    await history.getByRole("button", { name: "Restore" }).last().click()
    await page.getByRole("dialog", { name: "Restore this revision?" }).getByRole("button", { name: "Confirm" }).click()
    await history.getByText(/Restored revision/).waitFor()
    assert.strictEqual((await api("GET", `/${made.id}`)).body.handler, "first")
    await context.close()
  })

  pageTest(
    "task 6: shows the fleet: each follower, the revision it applied, how far behind it is, and those that left",
    async () => {
      const name = `dashboard-${fresh().slice(1)}`
      const follower = await follow(origin, REPORTER, { name })
      try {
        await create("GET", `/${name}/fleet`)
        const page = await signIn()
        const line = page.getByRole("table", { name: "Followers" }).getByRole("row").filter({ hasText: name })
        // The fleet is asked again every 5 seconds: a follower reports within one of applying the change.
        await line.getByRole("cell", { name: "current", exact: true }).waitFor({ timeout: 20_000 })
        await line.getByRole("cell", { name: "connected", exact: true }).waitFor()
        await shoot(page, "fleet")
        await follower.close()
        await line.getByRole("cell", { name: "left", exact: true }).waitFor({ timeout: 20_000 })
        await page.close()
      } finally {
        await follower.close()
      }
    }
  )

  pageTest("task 7: copies a route as a curl command and as a routes-file entry, without the token", async () => {
    const prefix = fresh()
    await create("PUT", `${prefix}/it's`, "echo", ["requestId"])
    const page = await signIn()
    await row(page, `${prefix}/it's`).getByRole("button", { name: "Copy as curl" }).click()
    const copy = page.getByRole("dialog", { name: `Copy PUT ${prefix}/it's` })
    const curl = await copy.getByRole("textbox", { name: "curl command" }).inputValue()
    assert.include(curl, `curl -X POST '${origin}/v1/routing'`)
    assert.include(curl, `"path":"${prefix}/it'\\''s"`)
    assert.include(curl, "$ROUTING_TOKEN")
    assert.notInclude(curl, ADMIN)
    const entry = await copy.getByRole("textbox", { name: "Routes-file entry" }).inputValue()
    assert.strictEqual(
      entry,
      `- method: PUT\n  path: ${JSON.stringify(`${prefix}/it's`)}\n  middleware: ["requestId"]\n  handler: echo`
    )
    await shoot(page, "copy")
    await page.close()
  })

  /** The writes a page sends (dry runs left out): method, address and body. */
  const writes = (page: Page) => {
    const sent: Array<{ method: string; url: string; body: unknown }> = []
    page.on("request", (request) => {
      const url = request.url()
      if (url.includes("/v1/routing") && request.method() !== "GET" && !url.includes("dryRun")) {
        sent.push({ method: request.method(), url, body: JSON.parse(request.postData() ?? "null") })
      }
    })
    return sent
  }

  it("v5: the switch \"Enabled\" turns a route off; the list says it is disabled and filters by state", async () => {
    const prefix = fresh()
    await create("GET", `${prefix}/on`)
    const off = await create("GET", `${prefix}/off`)
    const page = await signIn()
    const sent = writes(page)
    await page.getByRole("textbox", { name: "Filter by path prefix" }).fill(prefix)
    await row(page, `${prefix}/on`).waitFor()
    await row(page, `${prefix}/off`).getByRole("button", { name: "Edit" }).click()
    const form = page.getByRole("dialog", { name: "Edit route" })
    const enabled = form.getByRole("switch", { name: "Enabled" })
    assert.isTrue(await enabled.isChecked())
    await enabled.uncheck()
    await form.getByRole("button", { name: "Save" }).click()
    await form.waitFor({ state: "detached" })
    assert.deepStrictEqual(sent.map((s) => s.body), [{ enabled: false }])
    assert.isFalse((await api("GET", `/${off.id}`)).body.enabled)
    // Said in words in its row, not by a colour alone.
    await row(page, `${prefix}/off`).getByText("disabled", { exact: true }).waitFor()
    assert.strictEqual(await row(page, `${prefix}/on`).getByText("disabled", { exact: true }).count(), 0)
    const state = page.getByRole("combobox", { name: "Filter by state" })
    await state.selectOption({ label: "Disabled" })
    await row(page, `${prefix}/on`).waitFor({ state: "detached" })
    await row(page, `${prefix}/off`).waitFor()
    await state.selectOption({ label: "Enabled" })
    await row(page, `${prefix}/off`).waitFor({ state: "detached" })
    await row(page, `${prefix}/on`).waitFor()
    // Turned on again: the field goes back to its default, which the API leaves out.
    await state.selectOption({ label: "All" })
    await row(page, `${prefix}/off`).getByRole("button", { name: "Edit" }).click()
    await form.getByRole("switch", { name: "Enabled" }).check()
    await form.getByRole("button", { name: "Save" }).click()
    await form.waitFor({ state: "detached" })
    assert.notProperty((await api("GET", `/${off.id}`)).body, "enabled")
    await row(page, `${prefix}/off`).getByText("disabled", { exact: true }).waitFor({ state: "detached" })
    await page.close()
  })

  it("v5: the \"Split\" section edits a split: targets with a \"Weight\" each and its percentage, the API's problems at their fields, removed with its last target", async () => {
    const prefix = fresh()
    const page = await signIn()
    const sent = writes(page)
    await page.getByRole("button", { name: "New route" }).click()
    const form = page.getByRole("dialog", { name: "New route" })
    await form.getByRole("textbox", { name: "Method" }).fill("GET")
    await form.getByRole("textbox", { name: "Path" }).fill(`${prefix}/canary`)
    await form.getByRole("textbox", { name: "Handler", exact: true }).fill("echo")
    const split = form.getByRole("group", { name: "Split" })
    await split.getByRole("combobox", { name: "Split by" }).selectOption("cookie")
    await split.getByRole("textbox", { name: "Key name" }).fill("uid")
    await split.getByRole("button", { name: "Add target" }).click()
    const target = split.getByRole("group", { name: "Target 1" })
    await target.getByRole("textbox", { name: "Target handler" }).fill("canaryEcho")
    await target.getByRole("spinbutton", { name: "Weight" }).fill("1250")
    await target.getByText("= 12.5 %").waitFor()
    await split.getByText("The route's handler takes the rest: 87.5 %.").waitFor()
    await shoot(page, "split")
    await form.getByRole("button", { name: "Save" }).click()
    await form.waitFor({ state: "detached" })
    const [made] = (await api("GET", `?pathPrefix=${encodeURIComponent(prefix)}`)).body.items
    assert.deepStrictEqual(made.split, { by: "cookie:uid", targets: [{ handler: "canaryEcho", weight: 1250 }] })
    assert.deepStrictEqual(sent[0]!.body, {
      method: "GET",
      path: `${prefix}/canary`,
      middleware: [],
      handler: "echo",
      split: { by: "cookie:uid", targets: [{ handler: "canaryEcho", weight: 1250 }] }
    })
    await row(page, `${prefix}/canary`).getByText(/split by cookie:uid: canaryEcho 12\.5 %/).waitFor()

    // The API's problems at their fields: a weight over 10,000 at that target's "Weight", the key's at "Key name".
    const edit = page.getByRole("dialog", { name: "Edit route" })
    await row(page, `${prefix}/canary`).getByRole("button", { name: "Edit" }).click()
    const editSplit = edit.getByRole("group", { name: "Split" })
    await editSplit.getByRole("button", { name: "Add target" }).click()
    const second = editSplit.getByRole("group", { name: "Target 2" })
    await second.getByRole("textbox", { name: "Target handler" }).fill("other")
    await second.getByRole("spinbutton", { name: "Weight" }).fill("20000")
    await editSplit.getByRole("textbox", { name: "Key name" }).fill("u id")
    await edit.getByRole("button", { name: "Save" }).click()
    await second.getByText(/^must be a whole number of basis points/).waitFor()
    assert.strictEqual(await second.getByRole("spinbutton", { name: "Weight" }).getAttribute("aria-invalid"), "true")
    await editSplit.getByText(/is not a cookie name/).waitFor()
    assert.strictEqual(await editSplit.getByRole("textbox", { name: "Key name" }).getAttribute("aria-invalid"), "true")
    await shoot(page, "split-problems")
    // Its last target removed, the split goes: the patch sends split: null.
    await editSplit.getByRole("textbox", { name: "Key name" }).fill("uid")
    await second.getByRole("button", { name: "Remove target" }).click()
    await editSplit.getByRole("group", { name: "Target 1" }).getByRole("button", { name: "Remove target" }).click()
    await editSplit.getByText("No split: the route's handler serves every request.").waitFor()
    await edit.getByRole("button", { name: "Save" }).click()
    await edit.waitFor({ state: "detached" })
    assert.deepStrictEqual(sent[sent.length - 1]!.body, { split: null })
    assert.notProperty((await api("GET", `/${made.id}`)).body, "split")
    await page.close()
  })

  pageTest(
    "v5: the tester takes a split key and shows the split's choice: the key, its bucket and the handler",
    async () => {
      const prefix = fresh()
      const split = { by: "header:x-user", targets: [{ handler: "canaryEcho", weight: 10_000 }] }
      const made = (await api("POST", "", { method: "GET", path: `${prefix}/split`, handler: "echo", split })).body
      const page = await signIn()
      await page.getByRole("textbox", { name: "Request URL" }).fill(`${prefix}/split`)
      await page.getByRole("textbox", { name: "Split key" }).fill("alice")
      await page.getByRole("button", { name: "Test" }).click()
      const result = page.getByRole("region", { name: "Result" })
      const bucket = (await api("GET", `/match?method=GET&path=${prefix}/split&key=alice`)).body.split.bucket
      await result.getByText(`Split: key "alice", bucket ${bucket}, served by canaryEcho`).waitFor()
      await page.getByRole("textbox", { name: "Split key" }).fill("")
      await page.getByRole("button", { name: "Test" }).click()
      await result.getByText("Split: no key, so the route's handler serves it: echo").waitFor()
      await api("DELETE", `/${made.id}`)
      await page.close()
    }
  )

  it("v5: \"Description\", \"Tags\" and middleware configurations: edited, shown in the row, filtered by tag and searched", async () => {
    const prefix = fresh()
    const page = await signIn()
    const sent = writes(page)
    await page.getByRole("button", { name: "New route" }).click()
    const form = page.getByRole("dialog", { name: "New route" })
    await form.getByRole("textbox", { name: "Method" }).fill("GET")
    await form.getByRole("textbox", { name: "Path" }).fill(`${prefix}/described`)
    await form.getByRole("textbox", { name: "Middleware" }).fill("requestId, timing")
    await form.getByRole("textbox", { name: "Handler" }).fill("echo")
    await form.getByRole("textbox", { name: "Description" }).fill("Shows one user's page")
    await form.getByRole("textbox", { name: "Tags" }).fill("team:web, beta")
    // What the page can tell itself is said at the field, and nothing is sent.
    const config = form.getByRole("textbox", { name: "Config" })
    await config.fill("{\"timing\": ")
    await form.getByRole("button", { name: "Save" }).click()
    await form.getByText(/is not JSON/).waitFor()
    await config.fill("{\"rateLimit\": {\"max\": 10}}")
    await form.getByText(/configures rateLimit, which is not in Middleware/).waitFor()
    assert.deepStrictEqual(sent, [])
    await config.fill("{\"timing\": {\"precision\": 3}}")
    await form.getByRole("button", { name: "Save" }).click()
    await form.waitFor({ state: "detached" })
    const [made] = (await api("GET", `?pathPrefix=${encodeURIComponent(prefix)}`)).body.items
    assert.deepStrictEqual(
      [made.middleware, made.description, made.tags],
      [["requestId", { name: "timing", config: { precision: 3 } }], "Shows one user's page", ["team:web", "beta"]]
    )
    const line = row(page, `${prefix}/described`)
    await line.getByText("Shows one user's page").waitFor()
    await line.getByText("beta", { exact: true }).waitFor()
    // The form shows them again; clearing the description sends the default.
    await line.getByRole("button", { name: "Edit" }).click()
    const edit = page.getByRole("dialog", { name: "Edit route" })
    assert.strictEqual(await edit.getByRole("textbox", { name: "Tags" }).inputValue(), "team:web, beta")
    assert.deepStrictEqual(JSON.parse(await edit.getByRole("textbox", { name: "Config" }).inputValue()), {
      timing: { precision: 3 }
    })
    await edit.getByRole("textbox", { name: "Description" }).fill("")
    await edit.getByRole("button", { name: "Save" }).click()
    await edit.waitFor({ state: "detached" })
    assert.deepStrictEqual(sent[sent.length - 1]!.body, { description: "" })
    assert.notProperty((await api("GET", `/${made.id}`)).body, "description")
    // The tag filter is the listing's `tag`; the search covers tags.
    await create("GET", `${prefix}/untagged`)
    await page.getByRole("textbox", { name: "Filter by path prefix" }).fill(prefix)
    await row(page, `${prefix}/untagged`).waitFor()
    await page.getByRole("textbox", { name: "Filter by tag" }).fill("team:web")
    await row(page, `${prefix}/untagged`).waitFor({ state: "detached" })
    await row(page, `${prefix}/described`).waitFor()
    await page.getByRole("textbox", { name: "Filter by tag" }).fill("")
    await page.getByRole("searchbox", { name: "Search" }).fill("team:web")
    await row(page, `${prefix}/untagged`).waitFor({ state: "detached" })
    await row(page, `${prefix}/described`).waitFor()
    await page.close()
  })

  it("v5: \"Conditions\" edits a route's host, headers and query; the tester takes a host and headers", async () => {
    const prefix = fresh()
    const page = await signIn()
    await page.getByRole("button", { name: "New route" }).click()
    const form = page.getByRole("dialog", { name: "New route" })
    await form.getByRole("textbox", { name: "Method" }).fill("GET")
    await form.getByRole("textbox", { name: "Path" }).fill(`${prefix}/v2`)
    await form.getByRole("textbox", { name: "Handler" }).fill("echo")
    const conditions = form.getByRole("group", { name: "Conditions" })
    await conditions.getByRole("textbox", { name: "Host" }).fill("Not A Host!")
    await form.getByRole("button", { name: "Save" }).click()
    // The API's problem at the field.
    await conditions.locator(".problem").filter({ hasText: /./ }).first().waitFor()
    assert.strictEqual(await conditions.getByRole("textbox", { name: "Host" }).getAttribute("aria-invalid"), "true")
    await conditions.getByRole("textbox", { name: "Host" }).fill("api.example.com")
    await conditions.getByRole("textbox", { name: "Headers" }).fill("x-version: 2\nx-beta")
    await conditions.getByRole("textbox", { name: "Query" }).fill("tenant=acme")
    await form.getByRole("button", { name: "Save" }).click()
    await form.waitFor({ state: "detached" })
    const [made] = (await api("GET", `?pathPrefix=${encodeURIComponent(prefix)}`)).body.items
    const byName = (list: ReadonlyArray<{ name: string }>) => [...list].sort((a, b) => a.name < b.name ? -1 : 1)
    assert.deepStrictEqual([made.when.host, byName(made.when.headers), made.when.query], [
      "api.example.com",
      [{ name: "x-beta" }, { name: "x-version", value: "2" }],
      [{ name: "tenant", value: "acme" }]
    ])
    await row(page, `${prefix}/v2`).getByText(/when host api\.example\.com/).waitFor()
    await page.getByRole("textbox", { name: "Request URL" }).fill(`${prefix}/v2?tenant=acme`)
    await page.getByRole("textbox", { name: "Request host" }).fill("api.example.com")
    await page.getByRole("textbox", { name: "Request headers" }).fill("x-version: 2\nx-beta: yes")
    await page.getByRole("button", { name: "Test" }).click()
    const result = page.getByRole("region", { name: "Result" })
    await result.getByText(`GET ${prefix}/v2 → echo`).waitFor()
    await result.getByText("Served by a stored route").waitFor()
    await page.getByRole("textbox", { name: "Request host" }).fill("other.example.com")
    await page.getByRole("button", { name: "Test" }).click()
    await result.getByText(/404 Not Found/).waitFor()
    await page.close()
  })

  it("v5: enables, disables and retags several selected routes as one change set", async () => {
    const prefix = fresh()
    const one = await create("GET", `${prefix}/one`)
    const two = await create("GET", `${prefix}/two`)
    await create("GET", `${prefix}/left-alone`)
    const page = await signIn()
    const sent = writes(page)
    // The filtered list replaces the whole one (and its selection) once its answer comes: select after it.
    const filtered = page.waitForResponse((response) => response.url().includes("pathPrefix="))
    await page.getByRole("textbox", { name: "Filter by path prefix" }).fill(prefix)
    await filtered
    await row(page, `${prefix}/left-alone`).waitFor()
    await page.getByRole("checkbox", { name: `Select GET ${prefix}/one` }).check()
    await page.getByRole("checkbox", { name: `Select GET ${prefix}/two` }).check()
    const selected = page.getByRole("group", { name: "Selected routes" })
    await selected.getByText("2 routes selected.").waitFor()
    const answered = page.waitForResponse((response) => response.url().endsWith("/v1/routing/batch"))
    await selected.getByRole("button", { name: "Disable" }).click()
    await selected.getByText("Disabled 2 routes in one change set.").waitFor()
    // One change set: one batch, each operation with its own result.
    const done = await (await answered).json()
    assert.isString(done.batch)
    assert.deepStrictEqual(done.results.map((r: { status: number }) => r.status), [200, 200])
    await row(page, `${prefix}/one`).getByText("disabled", { exact: true }).waitFor()
    await row(page, `${prefix}/two`).getByText("disabled", { exact: true }).waitFor()
    assert.strictEqual(await row(page, `${prefix}/left-alone`).getByText("disabled", { exact: true }).count(), 0)
    assert.deepStrictEqual(sent.map((s) => [s.method, new URL(s.url).pathname, s.body]), [[
      "POST",
      "/v1/routing/batch",
      {
        operations: [
          { op: "update", id: one.id, patch: { enabled: false } },
          { op: "update", id: two.id, patch: { enabled: false } }
        ]
      }
    ]])

    await selected.getByRole("button", { name: "Retag" }).click()
    const retag = page.getByRole("dialog", { name: "Retag 2 routes" })
    await retag.getByRole("textbox", { name: "Tags" }).fill("canary, team:web")
    await retag.getByRole("button", { name: "Save" }).click()
    await selected.getByText("Retagged 2 routes in one change set.").waitFor()
    for (const made of [one, two]) {
      assert.deepStrictEqual((await api("GET", `/${made.id}`)).body.tags, ["canary", "team:web"])
    }
    await selected.getByRole("button", { name: "Enable" }).click()
    await selected.getByText("Enabled 2 routes in one change set.").waitFor()
    await row(page, `${prefix}/one`).getByText("disabled", { exact: true }).waitFor({ state: "detached" })

    // All or nothing: a tag the API refuses refuses the change set, naming each route, and nothing changes.
    await selected.getByRole("button", { name: "Retag" }).click()
    await retag.getByRole("textbox", { name: "Tags" }).fill("Not Valid")
    await retag.getByRole("button", { name: "Save" }).click()
    await page.getByRole("alert").filter({ hasText: `GET ${prefix}/one: patch.tags[0]` }).waitFor()
    await page.getByRole("alert").filter({ hasText: `GET ${prefix}/two: patch.tags[0]` }).waitFor()
    for (const made of [one, two]) {
      assert.deepStrictEqual((await api("GET", `/${made.id}`)).body.tags, ["canary", "team:web"])
    }
    await page.close()
  })

  pageTest("renders an echoed problem detail as text: markup in it never runs", async () => {
    const page = await signIn()
    await page.getByRole("button", { name: "New route" }).click()
    const form = page.getByRole("dialog", { name: "New route" })
    const attack = "/<img src=x onerror=window.pwned=1>"
    await form.getByRole("textbox", { name: "Method" }).fill("GET")
    await form.getByRole("textbox", { name: "Path" }).fill(attack)
    await form.getByRole("textbox", { name: "Handler" }).fill("<script>window.pwned=2</script>")
    await form.getByRole("button", { name: "Save" }).click()
    await form.getByText(/"<"/).first().waitFor()
    assert.strictEqual(await form.locator("img, script").count(), 0)
    assert.strictEqual(await page.evaluate(() => (window as { pwned?: number }).pwned), undefined)
    await page.close()
  })

  pageTest("gives a read-only token a read-only page", async () => {
    const prefix = fresh()
    await create("GET", `${prefix}/readable`)
    const page = await signIn(READER)
    await row(page, `${prefix}/readable`).waitFor()
    assert.strictEqual(await page.getByRole("button", { name: "New route" }).count(), 0)
    assert.strictEqual(await page.getByRole("button", { name: "Edit" }).count(), 0)
    assert.strictEqual(await page.getByRole("button", { name: "Delete" }).count(), 0)
    assert.isAbove(await page.getByRole("button", { name: "History" }).count(), 0)
    const changes = page.getByRole("table", { name: "Recent changes" })
    await changes.getByRole("row").filter({ hasText: `GET ${prefix}/readable` }).waitFor()
    assert.strictEqual(await changes.getByRole("button", { name: "Restore" }).count(), 0)
    await page.close()
  })

  pageTest(
    "learns whether a token may write from the dry run of a delete of no route, and changes nothing",
    async () => {
      const before = (await api("GET", "?limit=1000")).body
      for (const [token, writes] of [[ADMIN, true], [READER, false]] as const) {
        const page = await browser.newPage()
        const deletes: Array<URL> = []
        page.on("request", (request) => {
          if (request.method() === "DELETE") deletes.push(new URL(request.url()))
        })
        await signIn(token, page)
        assert.strictEqual(deletes.length, 1, token)
        assert.strictEqual(deletes[0]!.search, "?dryRun=true")
        assert.strictEqual(await page.getByRole("button", { name: "New route" }).count(), writes ? 1 : 0)
        await page.close()
      }
      assert.deepStrictEqual((await api("GET", "?limit=1000")).body, before)
    }
  )

  pageTest(
    "two tabs editing one route: a conflict shows both versions; \"Apply my changes\" applies only this person's fields on the current version, \"Use current version\" takes it",
    async () => {
      const prefix = fresh()
      const made = await create("GET", `${prefix}/shared`, "original")
      const context = await browser.newContext()
      const first = await signIn(ADMIN, await context.newPage())
      const second = await signIn(ADMIN, await context.newPage())
      const patches: Array<{ body: unknown; ifMatch: string | undefined }> = []
      second.on("request", (request) => {
        if (request.method() === "PATCH" && !request.url().includes("dryRun")) {
          patches.push({ body: JSON.parse(request.postData() ?? "null"), ifMatch: request.headers()["if-match"] })
        }
      })
      await row(first, `${prefix}/shared`).getByRole("button", { name: "Edit" }).click()
      await row(second, `${prefix}/shared`).getByRole("button", { name: "Edit" }).click()
      const one = first.getByRole("dialog", { name: "Edit route" })
      const two = second.getByRole("dialog", { name: "Edit route" })
      // The first person changes the middleware, the second the handler: two different fields.
      await one.getByRole("textbox", { name: "Middleware" }).fill("requestId")
      await one.getByRole("button", { name: "Save" }).click()
      await one.waitFor({ state: "detached" })
      await two.getByRole("textbox", { name: "Handler" }).fill("fromSecond")
      await two.getByRole("button", { name: "Save" }).click()
      await two.getByRole("heading", { name: "Your version" }).waitFor()
      await two.getByRole("heading", { name: "Current version" }).waitFor()
      await two.getByText("requestId (changed meanwhile)", { exact: true }).waitFor()
      await shoot(second, "conflict")
      assert.deepStrictEqual((await api("GET", `/${made.id}`)).body.middleware, ["requestId"])

      // Changed once more before "Apply my changes" arrives: the conflict is shown again, with the newer version.
      const third = await api("PATCH", `/${made.id}`, { middleware: ["requestId", "timing"] })
      await two.getByRole("button", { name: "Apply my changes" }).click()
      await two.getByText("requestId, timing (changed meanwhile)", { exact: true }).waitFor()
      await two.getByRole("button", { name: "Apply my changes" }).click()
      await two.waitFor({ state: "detached" })
      const stored = (await api("GET", `/${made.id}`)).body
      assert.strictEqual(stored.handler, "fromSecond")
      assert.deepStrictEqual(stored.middleware, ["requestId", "timing"]) // the other people's edits survive
      // Each save sent the person's own field only, the last against the version that had just been shown.
      assert.deepStrictEqual(patches.map((p) => p.body), [{ handler: "fromSecond" }, { handler: "fromSecond" }, {
        handler: "fromSecond"
      }])
      assert.strictEqual(patches[2]!.ifMatch, third.headers.get("etag"))

      // "Use current version": the form takes the stored route, and saving it unchanged sends nothing.
      await row(second, `${prefix}/shared`).getByRole("button", { name: "Edit" }).click()
      await two.getByRole("textbox", { name: "Handler" }).fill("mine")
      await api("PATCH", `/${made.id}`, { middleware: [] })
      await two.getByRole("button", { name: "Save" }).click()
      await two.getByRole("button", { name: "Use current version" }).click()
      await two.getByRole("heading", { name: "Current version" }).waitFor({ state: "detached" })
      assert.strictEqual(await two.getByRole("textbox", { name: "Handler" }).inputValue(), "fromSecond")
      assert.strictEqual(await two.getByRole("textbox", { name: "Middleware" }).inputValue(), "")
      await two.getByRole("button", { name: "Save" }).click()
      await two.waitFor({ state: "detached" })
      assert.strictEqual(patches.length, 4) // the save that met the conflict; none after it
      const kept = (await api("GET", `/${made.id}`)).body
      assert.deepStrictEqual([kept.handler, kept.middleware], ["fromSecond", []])
      await context.close()
    }
  )

  pageTest("names the route a 409 conflicts with by its method and path", async () => {
    const prefix = fresh()
    await create("GET", `${prefix}/items/:id`, "echo")
    const page = await signIn()
    await page.getByRole("button", { name: "New route" }).click()
    const form = page.getByRole("dialog", { name: "New route" })
    await form.getByRole("textbox", { name: "Method" }).fill("GET")
    await form.getByRole("textbox", { name: "Path" }).fill(`${prefix}/items/:name`)
    await form.getByRole("textbox", { name: "Handler" }).fill("echo")
    await form.getByRole("button", { name: "Save" }).click()
    await form.getByText(`The route already stored is GET ${prefix}/items/:id (handler echo).`).waitFor()
    await page.close()
  })

  it("recent changes: a route deleted in the dashboard comes back from the registry's log, after confirming", async () => {
    const prefix = fresh()
    const made = await create("GET", `${prefix}/gone`, "echo", ["requestId"])
    // A time zone of its own, to see times shown in it, and UTC on hover.
    const context = await browser.newContext({ timezoneId: "Asia/Kathmandu", locale: "en-US" })
    const page = await signIn(ADMIN, await context.newPage())
    await row(page, `${prefix}/gone`).getByRole("button", { name: "Delete" }).click()
    await page.getByRole("dialog", { name: "Delete this route?" }).getByRole("button", { name: "Confirm" }).click()
    await row(page, `${prefix}/gone`).waitFor({ state: "detached" })

    const changes = page.getByRole("table", { name: "Recent changes" })
    const entry = changes.getByRole("row").filter({ hasText: `GET ${prefix}/gone` }).filter({ hasText: "delete" })
    await entry.waitFor()
    const [deleted] = (await api("GET", `/${made.id}/history?limit=1`)).body.items
    await shows(entry.locator("time"), deleted.at, "Asia/Kathmandu")

    await entry.getByRole("button", { name: "Restore" }).click()
    const ask = page.getByRole("dialog", { name: "Restore this deleted route?" })
    await ask.getByText(`GET ${prefix}/gone is stored again`).waitFor()
    await shoot(page, "restore-deleted")
    await ask.getByRole("button", { name: "Confirm" }).click()
    await page.getByText(/^Restored revision \d+ as revision \d+: GET .* is stored again, under a new id\.$/).waitFor()
    await row(page, `${prefix}/gone`).waitFor()
    const [back] = (await api("GET", `?pathPrefix=${encodeURIComponent(prefix)}`)).body.items
    assert.deepStrictEqual([back.method, back.path, back.middleware, back.handler], [
      "GET",
      `${prefix}/gone`,
      ["requestId"],
      "echo"
    ])
    assert.notStrictEqual(back.id, made.id)
    await changes.getByRole("row").filter({ hasText: `GET ${prefix}/gone` }).filter({
      hasText: /restore of revision/
    })
      .waitFor()
    await shoot(page, "recent-changes")
    await context.close()
  })

  pageTest("recent changes: newest first, a page at a time", async () => {
    const prefix = fresh()
    for (let i = 0; i < 26; i++) await create("GET", `${prefix}/r${i}`)
    const page = await signIn()
    const changes = page.getByRole("table", { name: "Recent changes" })
    await changes.getByRole("row").filter({ hasText: `GET ${prefix}/r25` }).waitFor()
    const revisions = async () => (await changes.locator("tbody tr").evaluateAll((rows) =>
      rows.map((r) =>
        Number(r.querySelector("td")!.textContent)
      )
    ))
    assert.strictEqual((await revisions()).length, 25)
    await page.getByRole("button", { name: "Older changes" }).click()
    await changes.getByRole("row").filter({ hasText: `GET ${prefix}/r0` }).waitFor()
    const all = await revisions()
    assert.isAbove(all.length, 26)
    assert.deepStrictEqual(all, [...all].sort((a, b) => b - a))
    assert.strictEqual(new Set(all).size, all.length)
    // A change made elsewhere comes on top by itself.
    await create("GET", `${prefix}/later`)
    await changes.locator("tbody tr").first().filter({ hasText: `GET ${prefix}/later` }).waitFor()
    await page.close()
  })

  pageTest(
    "fits a phone, a laptop and a wide screen: no sideways scroll of the page, each row's actions on one line, the fleet whole at 1920 px",
    async () => {
      const prefix = fresh()
      await create("GET", `${prefix}/repos/:owner/:repo/pulls/:pull_number/reviews/:review_id/comments`, "echo", [
        "requestId",
        "timing"
      ])
      const name = `edge-${prefix.slice(1)}`
      const follower = await follow(origin, REPORTER, { name })
      try {
        const page = await signIn()
        await page.getByRole("table", { name: "Followers" }).getByRole("row").filter({ hasText: name }).waitFor()
        await row(page, `${prefix}/repos/:owner/:repo/pulls/:pull_number/reviews/:review_id/comments`).waitFor()
        for (const width of [375, 1280, 1920]) {
          await page.setViewportSize({ width, height: 900 })
          const facts = await page.evaluate(() => {
            const fleet = document.querySelector<HTMLElement>("table[aria-label=\"Followers\"]")!
            const box = fleet.parentElement!
            return {
              pageOverflow: document.documentElement.scrollWidth - innerWidth,
              actionRows: Array.from(
                document.querySelectorAll<HTMLTableRowElement>("table[aria-label=\"Routes\"] tbody tr")
              ).map(
                (tr) => {
                  const cell = tr.cells[tr.cells.length - 1]!
                  const [r, c] = [tr.getBoundingClientRect(), cell.getBoundingClientRect()]
                  return {
                    lines: new Set(
                      Array.from(cell.querySelectorAll("button")).map((b) => Math.round(b.getBoundingClientRect().top))
                    )
                      .size,
                    fillsRow: Math.abs(r.top - c.top) < 1 && Math.abs(r.bottom - c.bottom) < 1
                  }
                }
              ),
              fleetClipped: box.scrollWidth - box.clientWidth
            }
          })
          assert.isAtMost(facts.pageOverflow, 0, `the page scrolls sideways at ${width} px`)
          assert.isAbove(facts.actionRows.length, 0)
          for (const actions of facts.actionRows) {
            assert.deepStrictEqual(
              actions,
              { lines: 1, fillsRow: true },
              `${width} px`
            )
          }
          if (width === 1920) assert.isAtMost(facts.fleetClipped, 0, "the fleet table is clipped at 1920 px")
          if (width !== 1280) await shoot(page, `${width}px`, { fullPage: width === 375 })
        }
        await page.close()
      } finally {
        await follower.close()
      }
    }
  )

  pageTest("is usable with the keyboard alone: sign in, create a route, close a dialog", async () => {
    const prefix = fresh()
    const page = await browser.newPage()
    await page.goto(`${origin}/v1/routing/ui/`)
    // The token field has the focus; Enter submits.
    await page.keyboard.type(ADMIN)
    await page.keyboard.press("Enter")
    await page.getByRole("status").filter({ hasText: /^live$/ }).waitFor()
    const focused = () => page.evaluate(() => document.activeElement?.textContent ?? "")
    for (let i = 0; i < 30 && (await focused()) !== "New route"; i++) await page.keyboard.press("Tab")
    assert.strictEqual(await focused(), "New route")
    await page.keyboard.press("Enter")
    const form = page.getByRole("dialog", { name: "New route" })
    await form.waitFor()
    await page.keyboard.type("GET")
    await page.keyboard.press("Tab")
    await page.keyboard.type(`${prefix}/keys`)
    await page.keyboard.press("Tab")
    await page.keyboard.press("Tab")
    await page.keyboard.type("echo")
    await page.keyboard.press("Enter")
    await form.waitFor({ state: "detached" })
    await row(page, `${prefix}/keys`).waitFor()
    await row(page, `${prefix}/keys`).getByRole("button", { name: "Copy as curl" }).focus()
    await page.keyboard.press("Enter")
    await page.getByRole("dialog").waitFor()
    await page.keyboard.press("Escape")
    await page.getByRole("dialog").waitFor({ state: "detached" })
    await page.close()
  })

  pageTest("has no serious or critical accessibility violation (axe-core)", async () => {
    const prefix = fresh()
    await create("GET", `${prefix}/a11y`)
    const page = await browser.newPage()
    await page.goto(`${origin}/v1/routing/ui/`)
    const audit = async () => {
      // Evaluated through the DevTools protocol, which the page's Content-Security-Policy does not govern.
      await page.evaluate(axeSource)
      const results = await page.evaluate(async () => {
        const axe = (window as unknown as {
          axe: { run: () => Promise<{ violations: Array<{ id: string; impact: string; nodes: Array<unknown> }> }> }
        }).axe
        return (await axe.run()).violations.map((v) => ({ id: v.id, impact: v.impact, nodes: v.nodes.length }))
      })
      return results.filter((v) => v.impact === "serious" || v.impact === "critical")
    }
    assert.deepStrictEqual(await audit(), [])
    await signIn(ADMIN, page)
    await row(page, `${prefix}/a11y`).waitFor()
    assert.deepStrictEqual(await audit(), [])
    await page.getByRole("button", { name: "New route" }).click()
    assert.deepStrictEqual(await audit(), [])
    await page.close()
  })
})
