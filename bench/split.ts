/**
 * What a split costs the router, and how closely it keeps its weights: `node --import tsx bench/split.ts`.
 *
 * On the GitHub routes (1,223), each request is looked up in the route table and its split choice read as every router
 * form reads it (`internal/router/split.ts`: the key from a header, the override header, the bucket): with no split on
 * any route, and with a split on every route; the lookup alone is the baseline. Then the same, paired: 201 short runs
 * of the lookup alone each beside one of the lookup and the choice (no split, a split by header), each pair's
 * difference per request. Then a split of 10% / 5% / 85% over 100,000 keys, each side's share against its weight.
 */
import { type ChildProcess, spawn } from "node:child_process"
import { fileURLToPath } from "node:url"
import * as Split from "route-registry/internal/route/split"
import * as Splits from "route-registry/internal/router/split"
import * as Route from "route-registry/Route"
import * as RouteTable from "route-registry/RouteTable"
import * as SplitApi from "route-registry/Split"
import { requests, routes } from "./router.js"

const NOW = Date.parse("2026-11-27T00:00:00.000Z")
const targets = [{ handler: "canary" as Route.HandlerName, weight: 1000 }, {
  handler: "other" as Route.HandlerName,
  weight: 500
}]
const split = { by: "header:x-user-id", targets, override: "x-handler" }
// The same split reading its key from a cookie, or from a query parameter.
const SPLITS = {
  header: split,
  cookie: { ...split, by: "cookie:uid" },
  query: { ...split, by: "query:user" }
} as const
type Source = keyof typeof SPLITS

const tableOf = (source: Source | undefined) =>
  RouteTable.fromIterable(
    routes(1223, "github").map((route, i) =>
      new Route.StoredRoute({
        id: Route.makeRouteId(NOW + i),
        method: route.method as Route.HttpMethod,
        path: route.path as Route.RoutePath,
        middleware: [],
        handler: route.handler as Route.HandlerName,
        createdAt: new Date(NOW),
        ...(source === undefined ? {} : { split: SPLITS[source] }),
        revision: i + 1
      }, true)
    )
  )

// Each request as Node's server gives it (its headers by lowercase name, its target), with the key in all three
// places; read as the Node forms read it.
const sent = requests(1223, "github").map((request, i) => {
  const key = `user-${i * 7919}`
  return {
    method: request.method,
    path: request.path,
    url: `${request.path}?user=${key}`,
    headers: { "x-user-id": key, cookie: `theme=dark; uid=${key}; lang=en`, accept: "application/json" }
  }
})

// CPU time (user and system) of this process, in ns: on a machine shared with other work, wall time counts the
// slices other processes took.
const cpuNow = (): number => {
  const { system, user } = process.cpuUsage()
  return (user + system) * 1000
}

let sink = 0
const run = (table: RouteTable.Table<Route.StoredRoute>, choose: boolean, rounds = 400): number => {
  const start = cpuNow()
  let n = 0
  for (let round = 0; round < rounds; round++) {
    for (let i = 0; i < sent.length; i++) {
      const request = sent[i]!
      const found = RouteTable.lookup(table, request.method, request.path)
      if (found._tag !== "Found") throw new Error(`no route for ${request.method} ${request.path}`)
      if (choose) {
        const choice = Splits.choiceOf(found.route, request, Splits.incoming)
        sink += choice === undefined ? 1 : choice.handler.length
      }
      n++
    }
  }
  return (cpuNow() - start) / n
}

// A bucket alone: `<group>:<key>` hashed whole, and a route's `<group>:` prepared once with each key hashed after it.
const bucketRun = (prepared: boolean): number => {
  const group = Route.makeRouteId(NOW)
  const ready = Split.prepare({ by: split.by, targets }, group, "main")
  const start = cpuNow()
  for (let i = 0; i < 1_000_000; i++) {
    const key = sent[i % sent.length]!.headers["x-user-id"]
    sink += prepared ? Split.chooseWith(ready, key, undefined).bucket! : Split.bucketOf(group, key)
  }
  return (cpuNow() - start) / 1_000_000
}

const plain = tableOf(undefined)
const splitting = { header: tableOf("header"), cookie: tableOf("cookie"), query: tableOf("query") }
const median = (xs: Array<number>) => xs.sort((a, b) => a - b)[Math.floor(xs.length / 2)]!
const samples = {
  lookup: [] as Array<number>,
  noSplit: [] as Array<number>,
  header: [] as Array<number>,
  cookie: [] as Array<number>,
  query: [] as Array<number>,
  whole: [] as Array<number>,
  prepared: [] as Array<number>
}
// Interleaved, so that a change in the machine's load falls on every variant alike.
for (let i = 0; i < 9; i++) {
  samples.lookup.push(run(plain, false))
  samples.noSplit.push(run(plain, true))
  for (const source of ["header", "cookie", "query"] as const) samples[source].push(run(splitting[source], true))
  samples.whole.push(bucketRun(false))
  samples.prepared.push(bucketRun(true))
}
// Paired: many short runs of the lookup alone and of the lookup with a header split's choice, back to back (their
// order alternating), each pair's difference per request. A load that changes during the bench falls on both runs of
// a pair alike, which the medians of separate runs above do not ensure.
const PAIRS = 201
const paired = { noSplit: [] as Array<number>, header: [] as Array<number> }
for (let i = 0; i < PAIRS; i++) {
  for (const [name, table] of [["noSplit", plain], ["header", splitting.header]] as const) {
    const first = i % 2 === 0
    const alone = first ? run(plain, false, 20) : 0
    const choosing = run(table, true, 20)
    paired[name].push(choosing - (first ? alone : run(plain, false, 20)))
  }
}
const percentile = (xs: Array<number>, p: number) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) * p)]!

const lookup = median(samples.lookup)
const more = (xs: Array<number>) => `${median(xs).toFixed(0).padStart(6)}  (+${(median(xs) - lookup).toFixed(0)})`
console.log(
  `GitHub routes, ${sent.length} requests x 400, median of 9 runs (CPU ns per request; more than the lookup):`
)
console.log(`  lookup alone                         ${lookup.toFixed(0).padStart(6)}`)
console.log(`  lookup + choice, no split            ${more(samples.noSplit)}`)
console.log(`  lookup + choice, split by header     ${more(samples.header)}`)
console.log(`  lookup + choice, split by cookie     ${more(samples.cookie)}`)
console.log(`  lookup + choice, split by query      ${more(samples.query)}`)
console.log(`Paired, ${PAIRS} pairs of ${sent.length} requests x 20 (CPU ns per request more than the lookup alone):`)
for (const [name, label] of [["noSplit", "no split"], ["header", "split by header"]] as const) {
  const xs = paired[name]
  const under = xs.filter((x) => x < 1000).length
  console.log(
    `  ${label.padEnd(16)} median ${percentile(xs, 0.5).toFixed(0).padStart(5)}, 10th–90th percentile ${
      percentile(xs, 0.1).toFixed(0)
    } to ${percentile(xs, 0.9).toFixed(0)}; under 1 µs in ${under} of ${xs.length} pairs`
  )
}
console.log("A bucket alone (36-character group, 6-11 character key), 10^6 calls, median of 9 (CPU ns):")
console.log(`  <group>:<key> hashed whole           ${median(samples.whole).toFixed(0).padStart(6)}`)
console.log(`  key after the route's prepared group ${median(samples.prepared).toFixed(0).padStart(6)}`)

const counts: Record<string, number> = { canary: 0, other: 0, main: 0 }
const route = { id: Route.makeRouteId(NOW), handler: "main", split: split as SplitApi.Split }
for (let i = 0; i < 100_000; i++) counts[SplitApi.choose(route, `user-${i}`).handler]! += 1
console.log("Split accuracy over 100,000 keys (user-0 … user-99999):")
for (const [handler, weight] of [["canary", 10], ["other", 5], ["main", 85]] as const) {
  const share = counts[handler]! / 1000
  console.log(`  ${handler.padEnd(7)} weight ${weight}%  got ${share.toFixed(2)}%  (${(share - weight).toFixed(2)} pp)`)
}
if (sink === 0) console.log("")

// ---------------------------------------------------------------------------------------------------------------
// Stickiness: one key, one handler, in every process and after unrelated changes
// ---------------------------------------------------------------------------------------------------------------

// A registry (`npm start`'s command, memory store) and 3 followers of it (`npm start` with FOLLOW_URL), each a process
// with its own table, serving the demo catalog, whose handlers answer their own name and the split's choice. Each
// follower is asked for every key, then the registry makes 100 unrelated changes, and each is asked again.
const STICKY_KEYS = Number(process.argv[process.argv.indexOf("--sticky-keys") + 1] ?? "") || 2000
const ADMIN = "split-bench-admin"
const READER = "split-bench-reader"
const ROOT = fileURLToPath(new URL("..", import.meta.url))

interface Host {
  readonly origin: string
  readonly child: ChildProcess
}

const startHost = (env: Record<string, string>): Promise<Host> =>
  new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ["--import", "tsx", "examples/server.ts"], {
      cwd: ROOT,
      env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "", PORT: "0", ...env },
      stdio: ["ignore", "pipe", "pipe"]
    })
    let output = ""
    const seen = (chunk: Buffer) => {
      output += chunk
      const origin = /listening on (http:\/\/127\.0\.0\.1:\d+)/i.exec(output)?.[1]
      if (origin !== undefined) resolve({ origin, child })
    }
    child.stdout.on("data", seen)
    child.stderr.on("data", seen)
    child.on("exit", () => reject(new Error(`the host exited:\n${output}`)))
  })

const api = async (origin: string, method: string, path: string, body?: object) => {
  const response = await fetch(`${origin}/v1/routing${path}`, {
    method,
    headers: { authorization: `Bearer ${ADMIN}`, "content-type": "application/json" },
    ...(body === undefined ? {} : { body: JSON.stringify(body) })
  })
  if (response.status >= 300) throw new Error(`${method} ${path}: ${response.status} ${await response.text()}`)
  return response.status === 204 ? undefined : response.json()
}

// Until every follower's answer to `path` includes `text` (it has applied the change that made it so).
const applied = async (followers: ReadonlyArray<Host>, path: string, text: string) => {
  for (const follower of followers) {
    while (!(await (await fetch(follower.origin + path)).text()).includes(text)) {
      await new Promise((resolve) => setTimeout(resolve, 50))
    }
  }
}

// The handler (and bucket) each key reaches on `host`.
const askAll = async (host: Host, keys: ReadonlyArray<string>) => {
  const answers: Array<string> = []
  for (const key of keys) {
    const answer = await (await fetch(`${host.origin}/sticky/1`, { headers: { "x-user": key } })).json()
    answers.push(`${answer.handler}@${answer.split.bucket}`)
  }
  return answers
}

const sticky = async () => {
  const registry = await startHost({
    ROUTING_ADMIN_TOKENS: ADMIN,
    ROUTING_TOKENS: JSON.stringify([{ name: "followers", token: READER, scopes: ["routes:read", "fleet:report"] }])
  })
  const followers = await Promise.all(
    [1, 2, 3].map(() => startHost({ FOLLOW_URL: registry.origin, FOLLOW_TOKEN: READER }))
  )
  try {
    const route = await api(registry.origin, "POST", "", {
      method: "GET",
      path: "/sticky/:id",
      handler: "echo",
      split: { by: "header:x-user", targets: [{ handler: "echo2", weight: 3000 }] }
    })
    await applied(followers, "/sticky/1", "\"split\"")
    const keys = Array.from({ length: STICKY_KEYS }, (_, i) => `member-${i}`)
    const expected = keys.map((key) => {
      const choice = SplitApi.choose(route, key)
      return `${choice.handler}@${choice.bucket}`
    })
    const before = await Promise.all(followers.map((follower) => askAll(follower, keys)))
    // 100 unrelated changes: 50 creates, 20 deletes, 30 updates of other routes. A follower applies changes in order:
    // once /other/29 answers echo2, the last one, it has applied them all.
    const others: Array<{ id: string }> = []
    for (let i = 0; i < 50; i++) {
      others.push(await api(registry.origin, "POST", "", { method: "GET", path: `/other/${i}`, handler: "echo" }))
    }
    for (let i = 30; i < 50; i++) await api(registry.origin, "DELETE", `/${others[i]!.id}`)
    for (let i = 0; i < 30; i++) await api(registry.origin, "PATCH", `/${others[i]!.id}`, { handler: "echo2" })
    await applied(followers, "/other/29", "\"handler\":\"echo2\"")
    const after = await Promise.all(followers.map((follower) => askAll(follower, keys)))
    let same = 0
    let total = 0
    for (const answers of [...before, ...after]) {
      answers.forEach((answer, i) => {
        total++
        if (answer === expected[i]) same++
      })
    }
    const share = (xs: ReadonlyArray<string>) => xs.filter((x) => x.startsWith("echo2@")).length / xs.length * 100
    console.log(
      `Stickiness: ${keys.length} keys x 3 follower processes x 2 (before and after 100 unrelated changes): ` +
        `${same} of ${total} answers (${(same / total * 100).toFixed(2)}%) reached the handler and bucket ` +
        `Split.choose computes; echo2 (weight 30%) took ${share(expected).toFixed(2)}% of the keys`
    )
  } finally {
    for (const host of [registry, ...followers]) host.child.kill()
  }
}

if (!process.argv.includes("--no-sticky")) await sticky()
