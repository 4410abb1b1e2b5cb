/**
 * The dashboard at scale (docs/dashboard.md): 10,000 stored routes (the GitHub API's routes the grammar takes, under nine
 * prefixes), the page in Chromium, timed in the browser: from the click on "Sign in" to the first rows painted (target
 * 1 s), and from a keystroke in a filter to its result painted (target 300 ms, the page's 150 ms pause for typing
 * included), once the page is live (it has taken in the change stream's first event, every route). Each is run ROUNDS
 * times; the median and the worst are printed. On the memory store, and on Postgres when DATABASE_URL is set (a table
 * of its own, dropped after).
 *
 * Run: `npm run bench:dashboard` (it builds first). ROUNDS (default 7).
 */
import * as PgClient from "@effect/sql-pg/PgClient"
import { Effect, Either, Layer, Redacted } from "effect"
import * as Authenticator from "route-registry/Authenticator"
import * as PgRouteRepository from "route-registry/PgRouteRepository"
import * as Route from "route-registry/Route"
import * as RouteRepository from "route-registry/RouteRepository"
import * as Demo from "../examples/catalog.js"
import { makeHost, withTable } from "../examples/server.js"
import { githubRoutes } from "../test/fixtures/githubRoutes.js"
import { launch, listen } from "../test/utils/browser.js"

const ROUTES = 10_000
const ROUNDS = Number(process.env.ROUNDS ?? 7)
const TOKEN = "bench-admin-token"
const tokens = Authenticator.layerStaticTokens([{
  token: Redacted.make(TOKEN),
  scopes: ["routes:read", "routes:write"]
}])

// The GitHub routes the grammar takes (a few repeat a parameter's name, which it refuses).
const valid = githubRoutes.filter(([, path]) => Either.isRight(Route.parsePath(path)))

const routes = Array.from({ length: ROUTES }, (_, i) => {
  const [method, path] = valid[i % valid.length]!
  const prefix = `/v${Math.floor(i / valid.length)}`
  return {
    method,
    path: path === "/" ? prefix : prefix + path,
    handler: "echo",
    middleware: i % 3 === 0 ? ["requestId"] : []
  }
})

const seed = async (origin: string) => {
  let next = 0
  const worker = async () => {
    while (next < routes.length) {
      const route = routes[next++]!
      const response = await fetch(`${origin}/v1/routing`, {
        method: "POST",
        headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" },
        body: JSON.stringify(route)
      })
      if (response.status !== 201) throw new Error(`seeding answered ${response.status}: ${await response.text()}`)
    }
  }
  await Promise.all(Array.from({ length: 16 }, worker))
}

// In the page: the time from `act` to the Routes table's rows satisfying `done`, painted (the next frame).
const timed = (act: string, done: string) =>
  `new Promise((resolve) => {
    const body = () => document.querySelector('table[aria-label="Routes"] tbody')
    const finished = () => {
      const rows = body()?.rows
      return rows !== undefined && rows.length > 0 && (${done})(rows)
    }
    const t0 = performance.now()
    const observer = new MutationObserver(() => {
      if (!finished()) return
      observer.disconnect()
      requestAnimationFrame(() => resolve(performance.now() - t0))
    })
    observer.observe(document.body, { childList: true, subtree: true })
    ${act}
  })`

const typeInto = (label: string, value: string) =>
  `{ const input = [...document.querySelectorAll("label")].find((l) => l.textContent === ${
    JSON.stringify(label)
  }).control
     input.value = ${JSON.stringify(value)}; input.dispatchEvent(new Event("input", { bubbles: true })) }`

const quantiles = (values: ReadonlyArray<number>) => {
  const sorted = [...values].sort((a, b) => a - b)
  return { median: sorted[Math.floor(sorted.length / 2)]!, worst: sorted[sorted.length - 1]! }
}

const run = async (name: string, store: Layer.Layer<RouteRepository.RouteRepository, unknown>) => {
  const host = await makeHost({
    services: withTable(Layer.merge(store, tokens)),
    functions: Demo.functions,
    dashboard: true
  })
  const server = await listen(host.listener)
  const browser = await launch()
  try {
    const started = performance.now()
    await seed(server.origin)
    console.error(`${name}: ${ROUTES} routes stored in ${((performance.now() - started) / 1000).toFixed(1)} s`)
    const signIn: Array<number> = []
    const filter: Array<number> = []
    const method: Array<number> = []
    for (let round = 0; round < ROUNDS; round++) {
      const page = await browser.newPage()
      await page.goto(`${server.origin}/v1/routing/ui/`)
      await page.getByRole("textbox", { name: "Token" }).fill(TOKEN)
      signIn.push(
        await page.evaluate(timed(`document.querySelector("main form button[type=submit]").click()`, "() => true"))
      )
      const prefix = `/v${round % 8}/repos/:owner/:repo/pulls`
      filter.push(
        await page.evaluate(
          timed(
            typeInto("Filter by path prefix", prefix),
            `(rows) => [...rows].every((row) => row.querySelector("td.path").textContent.startsWith(${
              JSON.stringify(prefix)
            }))`
          )
        )
      )
      method.push(
        await page.evaluate(
          timed(
            typeInto("Filter by method", "DELETE"),
            `(rows) => [...rows].every((row) => row.querySelector("td.method").textContent === "DELETE")`
          )
        )
      )
      await page.close()
    }
    const line = (label: string, values: ReadonlyArray<number>, target: number) => {
      const { median, worst } = quantiles(values)
      console.log(
        `${name.padEnd(15)} ${label.padEnd(34)} median ${median.toFixed(0).padStart(4)} ms, worst ${
          worst.toFixed(0).padStart(4)
        } ms (target ${target} ms) ${worst <= target ? "met" : "MISSED"}; rounds: ${
          values.map((v) => v.toFixed(0)).join(", ")
        }`
      )
    }
    line("sign-in to first rows", signIn, 1000)
    line("path prefix filter to its rows", filter, 300)
    line("method filter to its rows", method, 300)
  } finally {
    await browser.close()
    host.closeStreams()
    await server.close()
    await host.dispose()
  }
}

await run("memory store", RouteRepository.layerMemory)
const url = process.env.DATABASE_URL
if (url !== undefined && url !== "") {
  const table = `rr_bench_dashboard_${process.pid}`
  const client = PgClient.layer({ url: Redacted.make(url), maxConnections: 10 })
  await run("postgres store", PgRouteRepository.layer({ table }).pipe(Layer.provide(client)))
  await Effect.runPromise(PgRouteRepository.uninstall({ table }).pipe(Effect.provide(client), Effect.orDie))
}
