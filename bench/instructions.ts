/**
 * CPU instructions per request, which a loaded machine does not change (wall-clock throughput does): each server runs
 * under `valgrind --tool=callgrind` with a client in this process; after a warm-up the counters are zeroed
 * (`callgrind_control -z`), N requests are made one at a time on a kept-alive connection, and the counters are dumped
 * (`callgrind_control -d`). Instructions per request is the dump's total over N: the server's whole process (its
 * compiler and collector threads included), parsing, routing, storing and answering.
 *
 *   npm run bench:instructions -- [--requests 5000] [--warmup 2000] [--servers npm-start,lean-node] [--ops post,get]
 *
 * See docs/performance.md, "Instructions per request".
 */
import { spawn } from "node:child_process"
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs"
import * as Http from "node:http"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { parseArgs } from "node:util"

const TOKEN = "bench-admin-token"

const SERVERS: Record<string, ReadonlyArray<string>> = {
  "npm-start": ["examples/server.ts"],
  "ours-node": ["bench/ours/node-listener.ts"],
  "lean-node": ["bench/peers/lean-node.ts"]
}

const { values } = parseArgs({
  options: {
    requests: { type: "string", default: "5000" },
    warmup: { type: "string", default: "2000" },
    servers: { type: "string", default: "npm-start,lean-node" },
    ops: { type: "string", default: "post,get" }
  }
})
const requests = Number(values.requests)
const warmup = Number(values.warmup)

const run = (command: string, args: ReadonlyArray<string>): Promise<void> =>
  new Promise((resolve, reject) => {
    const child = spawn(command, args, { stdio: "ignore" })
    child.once("error", reject)
    child.once("exit", (code) => code === 0 ? resolve() : reject(new Error(`${command} ${args.join(" ")}: ${code}`)))
  })

const agent = new Http.Agent({ keepAlive: true, maxSockets: 1 })

const request = (port: number, method: string, path: string, body?: string): Promise<string> =>
  new Promise((resolve, reject) => {
    const headers: Record<string, string> = { authorization: `Bearer ${TOKEN}` }
    if (body !== undefined) headers["content-type"] = "application/json"
    const req = Http.request({ port, host: "127.0.0.1", method, path, agent, headers }, (res) => {
      const chunks: Array<Buffer> = []
      res.on("data", (chunk: Buffer) => chunks.push(chunk))
      res.on("end", () => {
        const text = Buffer.concat(chunks).toString()
        const expected = method === "POST" ? 201 : 200
        if (res.statusCode === expected) resolve(text)
        else reject(new Error(`${method} ${path} answered ${res.statusCode}: ${text}`))
      })
    })
    req.once("error", reject)
    req.end(body)
  })

let serial = 0
const createBody = () =>
  JSON.stringify({
    method: "GET",
    path: `/bench/${serial++}/:id`,
    middleware: ["auth", "log"],
    handler: "BenchController#show"
  })

/** The requests of one operation, `count` of them, one after another. */
const drive = async (port: number, op: string, count: number, ids: Array<string>) => {
  for (let i = 0; i < count; i++) {
    if (op === "post") {
      ids.push((JSON.parse(await request(port, "POST", "/v1/routing", createBody())) as { id: string }).id)
    } else await request(port, "GET", `/v1/routing/${ids[i % ids.length]}`)
  }
}

const totalOf = (file: string): number => {
  const line = readFileSync(file, "utf8").split("\n").find((l) => l.startsWith("totals:") || l.startsWith("summary:"))
  if (line === undefined) throw new Error(`no totals in ${file}`)
  return Number(line.split(/\s+/)[1])
}

const measure = async (name: string, ops: ReadonlyArray<string>) => {
  const dir = mkdtempSync(join(tmpdir(), "rr-instructions-"))
  const child = spawn("valgrind", [
    "--tool=callgrind",
    `--callgrind-out-file=${join(dir, "cg.out")}`,
    "node",
    "--import",
    "tsx",
    ...SERVERS[name]!
  ], {
    env: {
      ...process.env,
      PORT: "0",
      ROUTING_ADMIN_TOKENS: TOKEN,
      TSX_TSCONFIG_PATH: "bench/tsconfig.json",
      DATABASE_URL: "",
      DASHBOARD: "0"
    },
    stdio: ["ignore", "pipe", "inherit"]
  })
  const port = await new Promise<number>((resolve, reject) => {
    let out = ""
    child.stdout.on("data", (chunk: Buffer) => {
      out += chunk.toString()
      const found = /listening on http:\/\/[^:]+:(\d+)/.exec(out)
      if (found) resolve(Number(found[1]))
    })
    child.once("exit", (code) => reject(new Error(`${name} exited (${code}) before listening: ${out}`)))
  })
  const results: Record<string, number> = {}
  const ids: Array<string> = []
  for (const op of ops) {
    await drive(port, op, warmup, ids)
    await run("callgrind_control", ["-z", String(child.pid)])
    await drive(port, op, requests, ids)
    await run("callgrind_control", ["-d", String(child.pid)])
    const dumps = readdirSync(dir).filter((f) => f.startsWith("cg.out.")).sort()
    results[op] = totalOf(join(dir, dumps[dumps.length - 1]!)) / requests
    rmSync(join(dir, dumps[dumps.length - 1]!))
  }
  child.kill("SIGTERM")
  await new Promise((resolve) => child.once("exit", resolve))
  rmSync(dir, { recursive: true, force: true })
  return results
}

const main = async () => {
  const ops = values.ops.split(",")
  const rows: Array<[string, Record<string, number>]> = []
  for (const name of values.servers.split(",")) {
    const results = await measure(name, ops)
    rows.push([name, results])
    console.log(name, ops.map((op) => `${op} ${Math.round(results[op]!).toLocaleString("en")} instructions`).join(", "))
  }
  const [first, ...rest] = rows
  for (const [name, results] of rest) {
    // As a throughput ratio: the first server's speed over this one's, at equal CPU.
    console.log(
      `${first![0]} vs ${name} (${name}'s instructions over ${first![0]}'s):`,
      ops.map((op) => `${op} ${(results[op]! / first![1][op]!).toFixed(2)}x`).join(", ")
    )
  }
  agent.destroy()
}

main().catch((error) => {
  console.error(error)
  process.exit(1)
})
