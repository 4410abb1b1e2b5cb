/**
 * The cost of conditions (docs/router.md: conditions) to a lookup: `node --import tsx bench/conditions.ts
 * [--baseline DIR] [--quick]`. On the GitHub REST API's routes (1,223, test/fixtures/githubRoutes.ts), one request per
 * route with its parameters filled and Node-like headers, ns per lookup (CPU time of this thread, median of rounds whose
 * order rotates) of:
 * - `today`: the route table of another checkout (`--baseline DIR`, such as a worktree of the release before), no
 *   conditions: the reference;
 * - `none`: this checkout's table, no conditions (target: no measurable change from `today`);
 * - `quarter`: this checkout's table with 1–3 conditions (host, header, query) on every fourth route, half the requests
 *   meeting them (target: at most 1.2× `today`); `quarter-met`: the same, every request meeting them.
 * Every request carries a query string (`?per_page=10&page=2`) and Node-like headers in every scenario.
 * Results go to bench/results/conditions-<time>.json.
 */
import { mkdirSync, writeFileSync } from "node:fs"
import { join, resolve } from "node:path"
import { fileURLToPath } from "node:url"
import * as RouteTree from "route-registry/internal/table/routeTree"
import { githubRoutes } from "../test/fixtures/githubRoutes.js"

const ROOT = fileURLToPath(new URL("..", import.meta.url))
const argv = process.argv.slice(2)
const QUICK = argv.includes("--quick")
const baselineAt = argv.indexOf("--baseline")
const BASELINE = baselineAt >= 0 ? resolve(argv[baselineAt + 1]!) : undefined
const ROUNDS = QUICK ? 5 : 11
const ROUND_MS = QUICK ? 200 : 500

interface Tree {
  readonly lookup: (tree: any, method: string, target: string, headers?: any) => unknown
  readonly make: () => any
  readonly insert: (tree: any, route: any) => void
}

const ours: Tree = { lookup: RouteTree.lookup, make: () => new RouteTree.Tree(), insert: RouteTree.insert }

const CONDITIONS = [
  { host: "api.github.com" },
  { headers: [{ name: "x-github-api-version", value: "2022-11-28" }] },
  { host: "*.github.com", query: [{ name: "per_page" }] },
  {
    host: "api.github.com",
    headers: [{ name: "accept", value: "application/vnd.github+json" }],
    query: [{ name: "page" }]
  }
] as const

const routesOf = (withConditions: boolean) =>
  githubRoutes.map(([method, path], i) => ({
    id: `0190a000-0000-7000-8000-${i.toString(16).padStart(12, "0")}`,
    method,
    path: path.replace(":enterprise-team", ":enterprise_team"),
    middleware: [],
    handler: `github.${i}`,
    createdAt: new Date(0),
    ...(withConditions && i % 4 === 0 ? { when: CONDITIONS[(i / 4) % CONDITIONS.length] } : {})
  }))

const MEETS = {
  host: "api.github.com",
  accept: "application/vnd.github+json",
  "user-agent": "bench",
  "x-github-api-version": "2022-11-28"
}
const MISSES = { host: "example.org", accept: "*/*", "user-agent": "bench" }

const requestsWith = (headersOf: (i: number) => Record<string, string>) =>
  githubRoutes.map(([method, path], i) => ({
    method,
    target: path.replace(/:(\w+)/g, (_, name: string) => `${name}${i}`) + "?per_page=10&page=2",
    headers: headersOf(i)
  }))
// Half the requests meet the conditions of the routes they reach (`quarter`), or all of them (`quarter-met`).
const HALF = requestsWith((i) => i % 8 < 4 ? MEETS : MISSES)
const ALL = requestsWith(() => MEETS)

const build = (impl: Tree, withConditions: boolean) => {
  const tree = impl.make()
  for (const route of routesOf(withConditions)) impl.insert(tree, route)
  return tree
}

const cpuNs = () => process.cpuUsage().user * 1000

// ns per lookup over the request set, for ROUND_MS.
const measure = (impl: Tree, tree: unknown, requests: typeof ALL): number => {
  let n = 0
  const started = cpuNs()
  const until = Date.now() + ROUND_MS
  while (Date.now() < until) {
    for (const request of requests) impl.lookup(tree, request.method, request.target, request.headers)
    n += requests.length
  }
  return (cpuNs() - started) / n
}

const median = (values: ReadonlyArray<number>) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!

const main = async () => {
  const today: Tree | undefined = BASELINE === undefined
    ? undefined
    : await import(join(BASELINE, "src/internal/table/routeTree.ts")).then((m) => ({
      lookup: m.lookup,
      make: () => new m.Tree(),
      insert: m.insert
    }))
  type Scenario = [name: string, impl: Tree, tree: unknown, requests: typeof ALL]
  const scenarios: Array<Scenario> = [
    ...(today === undefined ? [] : [["today", today, build(today, false), ALL] as Scenario]),
    ["none", ours, build(ours, false), ALL],
    ["quarter", ours, build(ours, true), HALF],
    ["quarter-met", ours, build(ours, true), ALL]
  ]
  const samples = new Map<string, Array<number>>(scenarios.map(([name]) => [name, []]))
  for (const [, impl, tree, requests] of scenarios) measure(impl, tree, requests) // warm up
  for (let round = 0; round < ROUNDS; round++) {
    for (let k = 0; k < scenarios.length; k++) {
      const [name, impl, tree, requests] = scenarios[(round + k) % scenarios.length]!
      samples.get(name)!.push(measure(impl, tree, requests))
    }
  }
  const reference = samples.get("today") ?? samples.get("none")!
  const results = scenarios.map(([name]) => {
    const ratios = samples.get(name)!.map((ns, i) => ns / reference[i]!)
    return {
      name,
      nsPerLookup: Number(median(samples.get(name)!).toFixed(1)),
      ratio: Number(median(ratios).toFixed(3))
    }
  })
  for (const result of results) {
    console.log(`${result.name.padEnd(12)} ${String(result.nsPerLookup).padStart(8)} ns/lookup  ${result.ratio}×`)
  }
  mkdirSync(join(ROOT, "bench/results"), { recursive: true })
  writeFileSync(
    join(ROOT, `bench/results/conditions-${new Date().toISOString().replace(/[:.]/g, "-")}.json`),
    JSON.stringify({ baseline: BASELINE ?? null, rounds: ROUNDS, roundMs: ROUND_MS, results }, null, 2)
  )
}

await main()
