/**
 * Security checks: constant-time token comparison, tokens never logged or answered, SQL only through parameters,
 * no cause text in problem bodies, bounded body reading (413), and no header injection.
 */
import { SqlError } from "@effect/sql/SqlError"
import * as Statement from "@effect/sql/Statement"
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import type { Context } from "effect"
import { Cause, Effect, Exit, Fiber, Layer, Logger, LogLevel, ManagedRuntime, Redacted } from "effect"
import * as fc from "fast-check"
import { EventEmitter } from "node:events"
import * as Fs from "node:fs"
import * as Http from "node:http"
import type { IncomingMessage } from "node:http"
import * as Util from "node:util"
import * as Authenticator from "route-registry/Authenticator"
import * as NodeListener from "route-registry/NodeListener"
import * as Route from "route-registry/Route"
import * as RouteRepository from "route-registry/RouteRepository"
import * as RoutingHandler from "route-registry/RoutingHandler"
import ts from "typescript"
import * as Body from "../src/internal/http/body.js"
import type { Received, Sent } from "./utils/adapters.js"
import { adapters, closeServer, listen, nodeListener } from "./utils/adapters.js"
import { methodFor } from "./utils/arbitraries.js"
import { ADMIN, assertProblem, failingStore, get, post, quiet, tokens } from "./utils/httpContract.js"
import * as TestDatabase from "./utils/TestDatabase.js"

const sample = { method: "GET", path: "/users/:id", middleware: ["auth"], handler: "UsersController#show" }
const json = { "content-type": "application/json" }

// ---------------------------------------------------------------------------------------------------------------
// Constant-time comparison
// ---------------------------------------------------------------------------------------------------------------

/**
 * Runs `f` while counting the calls of `String.prototype.charCodeAt` made on any of `strings` (the presented and
 * configured tokens): the static authenticator compares tokens character by character with it, so the count is
 * the number of character comparisons. Deterministic: no clock involved.
 */
const TOKEN68_CHARS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~+/"

const countCharCodeAt = <A>(strings: ReadonlyArray<string>, f: () => A): readonly [A, number] => {
  const watched = new Set(strings)
  const original = String.prototype.charCodeAt
  let count = 0
  String.prototype.charCodeAt = function(this: string, index: number) {
    if (watched.has(this)) count++
    return original.call(this, index)
  }
  try {
    return [f(), count] as const
  } finally {
    String.prototype.charCodeAt = original
  }
}

const comparisons = (configured: ReadonlyArray<string>, presented: string) => {
  const authenticator = Authenticator.makeStaticTokens(
    configured.map((token, i) => ({ token: Redacted.make(token), scopes: ["routes:read"], id: `t${i}` }))
  )
  const [exit, count] = countCharCodeAt(
    [...configured, presented],
    () => Effect.runSyncExit(authenticator.authenticate(Redacted.make(presented)))
  )
  return { accepted: Exit.isSuccess(exit), count }
}

describe("constant-time token comparison", () => {
  const configured = ["tok-AAAAAAAAAAAAAAAAAAAA", "tok-BBBBBBBBBBBBBBBBBBBB", "tok-CCCCCCCCCCCCCCCCCCCC"]
  const first = configured[0]!
  const last = configured[2]!

  it("the same number of character comparisons whichever token matches, or none, wherever they differ", () => {
    const cases = {
      "matches the first token": first,
      "matches the last token": last,
      "matches none": "xyz-QQQQQQQQQQQQQQQQQQQQ",
      "differs from the first token at its first character": "X" + first.slice(1),
      "differs from the first token at its last character": first.slice(0, -1) + "X",
      "differs from the last token at its last character": last.slice(0, -1) + "X"
    }
    const counts = Object.entries(cases).map(([name, presented]) => {
      const { accepted, count } = comparisons(configured, presented)
      assert.strictEqual(accepted, configured.includes(presented), name)
      return [name, count] as const
    })
    for (const [name, count] of counts) {
      assert.strictEqual(count, counts[0]![1], `${name}: ${JSON.stringify(counts)}`)
    }
    // Every configured token is walked over the whole presented token (fewer means an early exit, or a comparison
    // this test cannot observe).
    assert.isAtLeast(counts[0]![1], first.length * configured.length, JSON.stringify(counts))
  })

  it("for any configured list, the count depends only on the presented token's length (property)", () => {
    fc.assert(
      fc.property(
        // Configured tokens must be well formed (letters, digits, - . _ ~ + /, then = padding).
        fc.uniqueArray(fc.string({ unit: fc.constantFrom(...TOKEN68_CHARS), minLength: 1, maxLength: 16 }), {
          minLength: 1,
          maxLength: 6
        }),
        fc.nat(),
        fc.integer({ min: 1, max: 16 }),
        fc.nat(),
        (configured, pick, length, seed) => {
          // Two presented tokens of one length: one a configured token (when one has that length) or a
          // near-miss of it, the other unrelated.
          const target = configured[pick % configured.length]!
          const a = target.length === length ? target : target.padEnd(length, "x").slice(0, length)
          const b = Array.from({ length }, (_, i) => String.fromCharCode(33 + ((seed + i * 7) % 90))).join("")
          const near = a.slice(0, seed % length) + (a[seed % length] === "#" ? "%" : "#") + a.slice((seed % length) + 1)
          const counts = [a, b, near].map((presented) => comparisons(configured, presented).count)
          assert.isAtLeast(counts[0]!, length * configured.length)
          assert.deepStrictEqual(
            counts,
            [counts[0]!, counts[0]!, counts[0]!],
            JSON.stringify({ configured, a, b, near })
          )
        }
      ),
      { numRuns: 1000 }
    )
  })
})

// ---------------------------------------------------------------------------------------------------------------
// Tokens never in logs or bodies
// ---------------------------------------------------------------------------------------------------------------

describe("tokens never appear in logs, bodies or headers", () => {
  // Every token of this suite contains the marker, and nothing else sent contains it.
  const MARKER = /s3cr3t/i
  const ADMIN_T = "admin-S3CR3T-ADM-7q"
  const READER_T = "reader-S3CR3T-RD-2x"
  const WRITER_T = "writer-S3CR3T-WR-9k"
  const secretTokens = Authenticator.layerStaticTokens([
    { token: Redacted.make(ADMIN_T), scopes: ["routes:read", "routes:write"], id: "admin" },
    { token: Redacted.make(READER_T), scopes: ["routes:read"], id: "reader" },
    { token: Redacted.make(WRITER_T), scopes: ["routes:write"], id: "writer" }
  ])

  const presented = [
    `Bearer ${ADMIN_T}`,
    `bearer ${READER_T}`,
    `BEARER ${WRITER_T}`,
    "Bearer unknown-S3CR3T-xx-1a", // well-formed, not configured
    `Bearer ${ADMIN_T.toUpperCase()}`, // a case change
    `Bearer ${ADMIN_T}=`, // a suffix
    `Bearer ${ADMIN_T.slice(0, -1)}`, // a prefix
    "Bearer bad,S3CR3T;token", // malformed
    `Bearer ${ADMIN_T} extra`, // malformed
    `Bearer ${ADMIN_T}\u00e9`, // malformed (Latin-1)
    `Basic ${ADMIN_T}`, // another scheme
    `Token ${ADMIN_T}`,
    `${ADMIN_T}` // no scheme
  ]

  const battery = (id: string): ReadonlyArray<Sent> => [
    ...presented.flatMap((authorization) => [
      post(sample, { authorization, ...json }),
      post("{not json", { authorization, ...json }),
      post({ ...sample, path: "/x/" }, { authorization, ...json }),
      post(sample, { authorization, "content-type": "text/plain" }),
      post("x".repeat(70_000), { authorization, ...json }),
      get(id, { authorization }),
      get("not-an-id", { authorization }),
      { method: "DELETE", path: "/v1/routing", headers: { authorization } }
    ]),
    // Tokens elsewhere than the Authorization header: ignored, never echoed.
    { method: "GET", path: `/v1/routing/${id}?access_token=${ADMIN_T}` },
    { method: "POST", path: `/v1/routing?access_token=${ADMIN_T}`, headers: json, body: JSON.stringify(sample) },
    { method: "GET", path: `/v1/routing/${id}`, headers: { "x-api-key": ADMIN_T, cookie: `token=${ADMIN_T}` } }
  ]

  const stores = [
    ["memory store", RouteRepository.layerMemory],
    ["a store that dies (500)", failingStore("defect")],
    ["an unavailable store (503)", failingStore("unavailable")]
  ] as const

  for (const adapter of adapters) {
    it(`through ${adapter.name}, at every log level, on every store`, async () => {
      const lines: Array<string> = []
      const capture = Layer.merge(
        Logger.replace(
          Logger.defaultLogger,
          Logger.make((options) => lines.push(`${Logger.stringLogger.log(options)}\n${Cause.pretty(options.cause)}`))
        ),
        Logger.minimumLogLevel(LogLevel.All)
      )
      const consoleMethods = ["log", "info", "warn", "error", "debug", "trace"] as const
      const originals = consoleMethods.map((name) => console[name])
      for (const name of consoleMethods) {
        console[name] = (...args: Array<unknown>) => void lines.push(Util.inspect(args, { depth: null }))
      }
      const answers: Array<Received> = []
      try {
        for (const [, store] of stores) {
          const server = await adapter.start(Layer.mergeAll(store, secretTokens, capture))
          try {
            const created = await server.send(post(sample, { authorization: `Bearer ${ADMIN_T}`, ...json }))
            const id = created.status === 201 ? created.json.id : Route.makeRouteId(0)
            answers.push(created)
            for (const request of battery(id)) answers.push(await server.send(request))
          } finally {
            await server.close()
          }
        }
      } finally {
        consoleMethods.forEach((name, i) => (console[name] = originals[i]!))
      }
      // The capture works: refused tokens are logged at debug level, defects at error level (without the token).
      assert.isTrue(lines.some((line) => line.includes("token refused")), "no debug line captured")
      assert.isTrue(lines.some((line) => line.includes("secret_table")), "no error line captured")
      for (const line of lines) assert.notMatch(line, MARKER, `a token in the log: ${line}`)
      const statuses = new Set<number>()
      for (const answer of answers) {
        statuses.add(answer.status)
        assert.notMatch(answer.text, MARKER, `a token in a ${answer.status} body`)
        answer.headers.forEach((value, name) => assert.notMatch(value, MARKER, `a token in header ${name}`))
      }
      // The battery reached every outcome it is meant to.
      for (const status of [201, 400, 401, 403, 404, 405, 413, 415, 500, 503]) {
        assert.isTrue(statuses.has(status), `${status}`)
      }
    })
  }
})

// ---------------------------------------------------------------------------------------------------------------
// SQL only through parameters
// ---------------------------------------------------------------------------------------------------------------

const SQL_KEYWORD = /\b(?:SELECT|INSERT|UPDATE|DELETE|CREATE|DROP|ALTER|WHERE|VALUES|FROM|INTO|TABLE)\b/
// After these words an interpolation is an identifier, and must go through sql(...).
const IDENTIFIER_CONTEXT = /\b(?:FROM|INTO|TABLE|CONSTRAINT|EXISTS|JOIN|UPDATE|SCHEMA|REFERENCES)\s*$/i

/**
 * Every place a TypeScript source could build SQL text from values, outside the `sql` tagged template. `literals`
 * names the only arguments `sql.literal` may take: the store's read mark, a comment built from identifiers its
 * options checked against `[a-z_][a-z0-9_]*` (test/PgRouteRepository.test.ts: "refuses a table or schema name that is not a plain identifier").
 */
const scanSql = (source: string, literals: ReadonlyArray<string> = []) => {
  const file = ts.createSourceFile("scanned.ts", source, ts.ScriptTarget.Latest, true)
  const problems: Array<string> = []
  let sqlTemplates = 0
  const where = (node: ts.Node) => `line ${file.getLineAndCharacterOfPosition(node.getStart()).line + 1}`
  const isSqlCall = (node: ts.Node) => ts.isCallExpression(node) && node.expression.getText() === "sql"
  const boundToSqlCall = (name: string) => {
    let bound = false
    const find = (node: ts.Node) => {
      if (
        ts.isVariableDeclaration(node) && node.name.getText() === name && node.initializer !== undefined &&
        isSqlCall(node.initializer)
      ) bound = true
      ts.forEachChild(node, find)
    }
    find(file)
    return bound
  }
  const visit = (node: ts.Node) => {
    if (ts.isPropertyAccessExpression(node) && ["unsafe", "literal"].includes(node.name.text)) {
      const call = node.parent
      const allowed = node.name.text === "literal" && ts.isCallExpression(call) && call.expression === node &&
        call.arguments.length === 1 && literals.includes(call.arguments[0]!.getText())
      if (!allowed) problems.push(`${where(node)}: ${node.getText()}`)
    }
    if (ts.isElementAccessExpression(node) && /["'`](?:unsafe|literal)["'`]/.test(node.argumentExpression.getText())) {
      problems.push(`${where(node)}: ${node.getText()}`)
    }
    if (ts.isNoSubstitutionTemplateLiteral(node) || ts.isTemplateExpression(node)) {
      const tagged = ts.isTaggedTemplateExpression(node.parent) && node.parent.tag.getText() === "sql"
      if (tagged) sqlTemplates++
      const text = ts.isTemplateExpression(node)
        ? [node.head.text, ...node.templateSpans.map((span) => span.literal.text)].join(" ")
        : node.text
      if (!tagged && SQL_KEYWORD.test(text)) problems.push(`${where(node)}: SQL text in an untagged template`)
      if (tagged && ts.isTemplateExpression(node)) {
        node.templateSpans.forEach((span, i) => {
          const before = i === 0 ? node.head.text : node.templateSpans[i - 1]!.literal.text
          const expression = span.expression
          const safe = isSqlCall(expression) || (ts.isIdentifier(expression) && boundToSqlCall(expression.text))
          if (IDENTIFIER_CONTEXT.test(before) && !safe) {
            problems.push(`${where(span)}: identifier \${${expression.getText()}} not built with sql(...)`)
          }
        })
      }
    }
    if (ts.isStringLiteral(node) && SQL_KEYWORD.test(node.text)) problems.push(`${where(node)}: SQL text in a string`)
    if (
      ts.isBinaryExpression(node) && node.operatorToken.kind === ts.SyntaxKind.PlusToken &&
      SQL_KEYWORD.test(node.getText())
    ) problems.push(`${where(node)}: SQL built by concatenation`)
    ts.forEachChild(node, visit)
  }
  visit(file)
  return { problems, sqlTemplates }
}

describe("SQL only through parameters", () => {
  it("the scanner finds every way of building SQL text from values (it can fail)", () => {
    const { problems } = scanSql(`
      const table = "routes"
      const a = sql.unsafe(\`SELECT * FROM routes WHERE id = '\${id}'\`)
      const b = sql\`SELECT * FROM \${table} WHERE id = \${id}\`
      const c = "SELECT * FROM routes WHERE id = '" + id + "'"
      const d = sql.literal(id)
      const e = sql["unsafe"]("DROP TABLE x")
      const f = \`DELETE FROM routes WHERE id = \${id}\`
    `)
    // Every line but the first (a constant) builds SQL unsafely, and each is caught.
    const lines = new Set(problems.map((problem) => problem.split(":")[0]))
    assert.deepStrictEqual(
      [...lines].sort(),
      ["line 3", "line 4", "line 5", "line 6", "line 7", "line 8"],
      problems.join("\n")
    )
  })

  it("sql.literal is refused unless its argument is one the caller names", () => {
    const source = `const a = sql.literal(deadline.mark)\nconst b = sql.literal(mark + id)\nconst c = sql.literal(id)`
    const { problems } = scanSql(source, ["deadline.mark"])
    assert.deepStrictEqual(problems.map((problem) => problem.split(":")[0]), ["line 2", "line 3"])
  })

  // The files that put values into SQL. internal/pgDeadline.ts is not among them: its statements are constant text
  // with only numbers it computed itself (a timeout, a savepoint counter), sent through the driver's raw calls.
  const storeFiles = [
    { file: "PgRouteRepository.ts", literals: ["deadline.mark"], templates: 4 },
    { file: "internal/pgChangeFeed.ts", literals: [], templates: 1 }
  ]
  for (const { file, literals, templates } of storeFiles) {
    it(`src/${file}: no sql.unsafe, sql.literal only for the read mark, no SQL text outside sql\`…\`, identifiers via sql(…)`, () => {
      const source = Fs.readFileSync(new URL(`../src/${file}`, import.meta.url), "utf8")
      const { problems, sqlTemplates } = scanSql(source, literals)
      assert.deepStrictEqual(problems, [])
      assert.isAtLeast(sqlTemplates, templates, "the scanner saw the file's statements")
    })
  }

  describe("hostile but valid values through the Postgres store", () => {
    const hostile = {
      paths: [
        "/';DROP%20TABLE%20route_registry_routes;--",
        "/x'+'y/:id",
        "/'or'1'='1",
        "/$1/$2/:a",
        "/a;b=c&d/@!$&'+,;=",
        "/%27%3B%20DELETE%20FROM%20x;--/:b"
      ],
      names: ["$1", "$$", "a::text", "x--", "public.route_registry_routes", "_$#:/.-", "Users#show--"]
    }
    type Captured = { readonly text: string; readonly params: ReadonlyArray<unknown> }
    let runtime: ManagedRuntime.ManagedRuntime<RouteRepository.RouteRepository, unknown>
    beforeAll(async () => {
      runtime = ManagedRuntime.make(TestDatabase.storeLayer().pipe(Layer.provide(TestDatabase.layer())))
      await runtime.runPromise(Effect.void)
    })
    afterAll(() => runtime.dispose())

    /** Runs `effect` recording the text and parameters of every statement it sends. */
    const capturing = <A, E>(effect: Effect.Effect<A, E, RouteRepository.RouteRepository>) => {
      const statements: Array<Captured> = []
      const recorded = Statement.withTransformer(effect, (statement) => {
        const [text, params] = statement.compile()
        statements.push({ text, params })
        return Effect.succeed(statement)
      })
      return runtime.runPromise(recorded).then((value) => ({ value, statements }))
    }

    it("are stored and read back byte for byte, and reach the database only as parameters", async () => {
      const bodies = hostile.paths.map((path, i) => ({
        method: methodFor(i),
        path,
        middleware: hostile.names.slice(0, 1 + (i % hostile.names.length)),
        handler: hostile.names[i % hostile.names.length]!
      }))
      const { statements, value: routes } = await capturing(Effect.forEach(bodies, (body) =>
        Effect.gen(function*() {
          const repository = yield* RouteRepository.RouteRepository
          const input = yield* Effect.orDie(Route.decodeCreate(body))
          const created = yield* repository.create(input)
          return yield* repository.findById(created.id)
        })))
      routes.forEach((route, i) => {
        const { handler, method, middleware, path } = route
        assert.deepStrictEqual({ method, path, middleware: [...middleware], handler }, bodies[i])
      })
      assert.isAtLeast(statements.length, bodies.length * 2)
      for (const value of [...hostile.paths, ...hostile.names]) {
        // Placeholders ($1, $2, …) are the parameters themselves: only what is left is SQL text.
        for (const statement of statements) assert.notInclude(statement.text.replace(/\$\d+/g, "?"), value)
      }
      // Concurrent creates share one statement, whose rows travel as one JSON parameter.
      const params = statements.flatMap((s) => s.params.flatMap((p) => (Array.isArray(p) ? p : [p])))
      const rows = params.flatMap((p) => typeof p === "string" && p.startsWith("[{") ? JSON.parse(p) : [])
      for (const path of hostile.paths) {
        assert.isTrue(params.includes(path) || rows.some((row: { path?: unknown }) => row.path === path), path)
      }
    })

    it("an id that is not a route id is not found without a query; a route id only ever as a parameter", async () => {
      for (const id of ["1' OR '1'='1", "'; DROP TABLE route_registry_routes; --", "x\") OR true --", ""]) {
        const { statements, value } = await capturing(
          Effect.either(Effect.flatMap(RouteRepository.RouteRepository, (repository) => repository.findById(id)))
        )
        assert.isTrue(value._tag === "Left" && value.left._tag === "RouteNotFound")
        assert.deepStrictEqual(statements, [])
      }
      const absent = Route.makeRouteId(Date.now())
      const { statements } = await capturing(
        Effect.either(Effect.flatMap(RouteRepository.RouteRepository, (repository) => repository.findById(absent)))
      )
      assert.strictEqual(statements.length, 1)
      assert.notInclude(statements[0]!.text, absent)
      assert.deepStrictEqual(statements[0]!.params.flat(), [absent])
    })

    it("over HTTP (Postgres store): hostile bodies round-trip, GET with hostile ids answers 404", async () => {
      const server = await nodeListener.start(
        Layer.merge(TestDatabase.storeLayer().pipe(Layer.provide(TestDatabase.layer())), tokens)
      )
      try {
        for (const [i, path] of hostile.paths.entries()) {
          const body = { method: "GET", path, middleware: hostile.names.slice(i), handler: "$1" }
          const created = await server.send(post(body))
          assert.strictEqual(created.status, 201, created.text)
          const found = await server.send(get(created.json.id))
          assert.strictEqual(found.status, 200)
          assert.strictEqual(found.text, created.text)
          assert.strictEqual(found.json.path, path)
        }
        for (const id of ["1'%20OR%20'1'='1", "1'%20OR%20'1'='1'%20--", "%27%3B%20DROP%20TABLE%20x%3B--", "$1"]) {
          assertProblem(await server.send(get(id)), "route_not_found")
        }
      } finally {
        await server.close()
      }
    })
  })
})

// ---------------------------------------------------------------------------------------------------------------
// No stack, SQL or driver text in problem bodies
// ---------------------------------------------------------------------------------------------------------------

const LEAKS = [
  "SELECT * FROM route_registry_routes WHERE id = $1",
  "INSERT INTO secret_table VALUES ('x')",
  "at Object.<anonymous> (/srv/app/src/PgRouteRepository.ts:120:17)",
  "    at processTicksAndRejections (node:internal/process/task_queues:95:5)",
  "connect ECONNREFUSED 127.0.0.1:5432",
  "pg: password authentication failed for user \"postgres\"",
  "relation \"route_registry_routes\" does not exist",
  "/home/deploy/.env",
  "DATABASE_URL=postgres://admin:hunter2@db:5432/prod",
  ADMIN
]

const leakyText = fc.oneof(
  fc.constantFrom(...LEAKS),
  fc.tuple(fc.constantFrom(...LEAKS), fc.string({ maxLength: 20 })).map(([a, b]) => a + b),
  fc.string({ minLength: 1, maxLength: 40 })
)

type Failure = {
  readonly kind: "Error" | "pg" | "SqlError" | "string" | "object" | "throw" | "typed SqlError" | "unavailable"
  readonly text: string
}

const failure: fc.Arbitrary<Failure> = fc.record({
  kind: fc.constantFrom("Error", "pg", "SqlError", "string", "object", "throw", "typed SqlError", "unavailable"),
  text: leakyText
})

const pgError = (text: string) =>
  Object.assign(new Error(text), {
    code: "42P01",
    severity: "ERROR",
    detail: text,
    hint: text,
    where: `SQL statement "${text}"`,
    query: `SELECT * FROM x WHERE y = '${text}'`,
    routine: "parserOpenTable"
  })

/** A store failing with `f` on every call: defects of every shape, and the one typed failure it may have. */
const failWith = (f: Failure): Effect.Effect<never, RouteRepository.StoreUnavailable> => {
  switch (f.kind) {
    case "Error":
      return Effect.die(Object.assign(new Error(f.text), { cause: new Error(f.text) }))
    case "pg":
      return Effect.die(pgError(f.text))
    case "SqlError":
      return Effect.die(new SqlError({ cause: pgError(f.text), message: f.text }))
    case "string":
      return Effect.die(f.text)
    case "object":
      return Effect.die({ message: f.text, stack: f.text, sql: f.text })
    case "throw":
      return Effect.sync(() => {
        throw new TypeError(f.text)
      })
    case "typed SqlError":
      // A host's store letting a driver error through its error channel (outside its declared types, but tagged).
      return Effect.fail(new SqlError({ cause: pgError(f.text), message: f.text }) as never)
    case "unavailable":
      return Effect.fail(new RouteRepository.StoreUnavailable({ reason: f.text, cause: pgError(f.text) }))
  }
}

const storeFailing = (current: () => Failure): Context.Tag.Service<RouteRepository.RouteRepository> =>
  RouteRepository.RouteRepository.of({
    create: () => Effect.suspend(() => failWith(current())),
    findById: () => Effect.suspend(() => failWith(current())),
    list: () => Effect.suspend(() => failWith(current())),
    update: () => Effect.suspend(() => failWith(current())),
    remove: () => Effect.suspend(() => failWith(current()))
  })

const staticTokens = Authenticator.makeStaticTokens([
  { token: Redacted.make(ADMIN), scopes: ["routes:read", "routes:write"] }
])

const coreRequest = (method: "GET" | "POST"): RoutingHandler.Request => ({
  method,
  path: method === "POST" ? "/v1/routing" : `/v1/routing/${Route.makeRouteId(0)}`,
  query: "",
  header: (name) =>
    name === "authorization" ? `Bearer ${ADMIN}` : name === "content-type" ? "application/json" : undefined,
  body: () => Effect.succeed(new TextEncoder().encode(JSON.stringify(sample)))
})

const runCore = (handler: RoutingHandler.RoutingHandler, request: RoutingHandler.Request) =>
  Effect.runPromise(Logger.withMinimumLogLevel(handler.handle(request)!, LogLevel.None))

const TRANSPORT_HEADERS = new Set(["date", "connection", "keep-alive", "content-length", "transfer-encoding"])

describe("no stack, SQL or driver text in any problem body", () => {
  // The 503 document, as answered for a store that is simply unavailable.
  let unavailableBody = ""
  beforeAll(async () => {
    const handler = RoutingHandler.makeWith(storeFailing(() => ({ kind: "unavailable", text: "x" })), staticTokens)
    unavailableBody = (await runCore(handler, coreRequest("GET"))).body
    assert.include(unavailableBody, "store_unavailable")
  })

  const expectFixed = (f: Failure, status: number, body: string, headers: Record<string, string | null>) => {
    if (f.kind === "unavailable") {
      assert.strictEqual(status, 503)
      assert.strictEqual(body, unavailableBody)
    } else {
      assert.strictEqual(status, 500)
      assert.strictEqual(body, RoutingHandler.internalError.body)
    }
    // The answer's own headers are exactly the fixed ones (a substring search would match a short random text in
    // a legitimate value, such as "appl" in the content type); the transport's own headers carry nothing of it.
    const own = Object.fromEntries(Object.entries(headers).filter(([name]) => !TRANSPORT_HEADERS.has(name)))
    assert.deepStrictEqual(
      own,
      f.kind === "unavailable"
        ? { "content-type": "application/problem+json", "retry-after": "1" }
        : { "content-type": "application/problem+json" }
    )
  }

  it("the request core answers exactly the fixed 500 or 503 document, whatever the store fails with", async () => {
    let current: Failure = { kind: "Error", text: "x" }
    const handler = RoutingHandler.makeWith(storeFailing(() => current), staticTokens)
    await fc.assert(
      fc.asyncProperty(failure, fc.constantFrom("GET" as const, "POST" as const), async (f, method) => {
        current = f
        const response = await runCore(handler, coreRequest(method))
        expectFixed(f, response.status, response.body, response.headers)
      }),
      { numRuns: 2000 }
    )
  })

  for (const adapter of adapters) {
    it(`through ${adapter.name}: exactly the fixed 500 or 503 document`, async () => {
      let current: Failure = { kind: "Error", text: "x" }
      const store = Layer.succeed(RouteRepository.RouteRepository, storeFailing(() => current))
      const server = await adapter.start(Layer.mergeAll(store, tokens, quiet))
      try {
        await fc.assert(
          fc.asyncProperty(failure, fc.boolean(), async (f, create) => {
            current = f
            const response = await server.send(create ? post(sample) : get(Route.makeRouteId(0)))
            const headers: Record<string, string> = {}
            response.headers.forEach((value, name) => (headers[name] = value))
            expectFixed(f, response.status, response.text, headers)
            assert.strictEqual(response.headers.get("content-type"), "application/problem+json")
          }),
          { numRuns: 80 }
        )
      } finally {
        await server.close()
      }
    })
  }

  it("a store failing with an untagged value in its error channel (an untyped host store) still gets the 500 document", async () => {
    for (const value of [new Error("SELECT * FROM secret_table"), "ECONNREFUSED 127.0.0.1:5432", { detail: "pg" }]) {
      const repository = RouteRepository.RouteRepository.of({
        create: () => Effect.fail(value as never),
        findById: () => Effect.fail(value as never),
        list: () => Effect.fail(value as never),
        update: () => Effect.fail(value as never),
        remove: () => Effect.fail(value as never)
      })
      const handler = RoutingHandler.makeWith(repository, staticTokens)
      for (const method of ["GET", "POST"] as const) {
        const response = await runCore(handler, coreRequest(method)).catch((error) => ({
          status: -1,
          body: `the core failed: ${error}`
        }))
        assert.strictEqual(response.status, 500, `${method} with ${Util.inspect(value)}: ${response.body}`)
        assert.strictEqual(response.body, RoutingHandler.internalError.body)
      }
    }
  })
})

// ---------------------------------------------------------------------------------------------------------------
// The 413 path never buffers more than the limit
// ---------------------------------------------------------------------------------------------------------------

/** Just what the body reader uses of a Node request. */
class FakeIncomingMessage extends EventEmitter {
  readonly httpVersion = "1.1"
  pauses = 0
  pause() {
    this.pauses++
    return this
  }
}

const chunkSizes = fc.array(fc.integer({ min: 1, max: 1500 }), { minLength: 1, maxLength: 12 })
const limit = fc.integer({ min: 1, max: 4096 })

/** Index of the first chunk that takes the total past `max`, or -1. */
const crossing = (sizes: ReadonlyArray<number>, max: number) => {
  let total = 0
  return sizes.findIndex((size) => (total += size) > max)
}

const chunkOf = (size: number, i: number) => Buffer.alloc(size, i % 251)

describe("the 413 path never buffers more than the limit", () => {
  it("fromIncomingMessage stops at the first chunk past the limit: TooLarge, paused, no listener left", async () => {
    await fc.assert(
      fc.asyncProperty(limit, chunkSizes, async (max, sizes) => {
        const req = new FakeIncomingMessage()
        const fiber = Effect.runFork(Body.fromIncomingMessage(req as unknown as IncomingMessage)(max, 60_000))
        assert.strictEqual(req.listenerCount("data"), 1)
        const cross = crossing(sizes, max)
        sizes.forEach((size, i) => {
          req.emit("data", chunkOf(size, i))
          const reading = cross === -1 || i < cross
          assert.strictEqual(req.listenerCount("data"), reading ? 1 : 0, `after chunk ${i}`)
          assert.strictEqual(req.pauses, reading ? 0 : 1, `after chunk ${i}`)
        })
        if (cross === -1) req.emit("end")
        for (const event of ["data", "end", "close", "error"]) assert.strictEqual(req.listenerCount(event), 0, event)
        const exit = await Effect.runPromise(Fiber.await(fiber))
        if (cross === -1) {
          assert.isTrue(Exit.isSuccess(exit))
          const bytes = Exit.isSuccess(exit) ? exit.value : new Uint8Array()
          assert.isAtMost(bytes.length, max)
          assert.deepStrictEqual(Buffer.from(bytes), Buffer.concat(sizes.map(chunkOf)))
        } else {
          assert.deepStrictEqual(exit, Exit.fail("TooLarge"))
        }
      }),
      { numRuns: 500 }
    )
  })

  it("fromIncomingMessage lets go of the request when the reading is interrupted", async () => {
    const req = new FakeIncomingMessage()
    const fiber = Effect.runFork(Body.fromIncomingMessage(req as unknown as IncomingMessage)(1024, 60_000))
    req.emit("data", chunkOf(100, 0))
    await Effect.runPromise(Fiber.interrupt(fiber))
    for (const event of ["data", "end", "close", "error"]) assert.strictEqual(req.listenerCount(event), 0, event)
  })

  it("fromWebRequest stops pulling at the first chunk past the limit and cancels the stream", async () => {
    await fc.assert(
      fc.asyncProperty(limit, chunkSizes, async (max, sizes) => {
        let pulls = 0
        let cancelled = false
        const stream = new ReadableStream<Uint8Array>({
          pull: (controller) => {
            const size = sizes[pulls]
            pulls++
            if (size === undefined) controller.close()
            else controller.enqueue(new Uint8Array(chunkOf(size, pulls - 1)))
          },
          cancel: () => void (cancelled = true)
        }, { highWaterMark: 0 }) // pulled only when read
        const request = new Request("http://localhost/v1/routing", {
          method: "POST",
          body: stream,
          duplex: "half"
        } as RequestInit)
        const exit = await Effect.runPromiseExit(Body.fromWebRequest(request)(max, 60_000))
        await new Promise((resolve) => setTimeout(resolve, 1))
        const cross = crossing(sizes, max)
        if (cross === -1) {
          assert.isTrue(Exit.isSuccess(exit))
          const bytes = Exit.isSuccess(exit) ? exit.value : new Uint8Array()
          assert.deepStrictEqual(Buffer.from(bytes), Buffer.concat(sizes.map(chunkOf)))
          assert.isFalse(cancelled)
        } else {
          assert.deepStrictEqual(exit, Exit.fail("TooLarge"))
          assert.strictEqual(pulls, cross + 1, "pulled past the chunk that crossed the limit")
          assert.isTrue(cancelled, "the stream was not cancelled")
        }
      }),
      { numRuns: 300 }
    )
  })

  for (const max of [1024, RoutingHandler.DEFAULT_MAX_BODY_BYTES]) {
    it(`node:http end to end (limit ${max}): 5 MB streamed without Content-Length is answered 413 early`, async () => {
      const listener = await NodeListener.fromLayer(Layer.merge(RouteRepository.layerMemory, tokens), {
        maxBodyBytes: max
      })
      let delivered = 0 // body bytes delivered to the request stream's readers
      let consumed = -1 // ... when the answer was written (the rest is read only to be discarded, CONTRACT §3)
      let socketBytes = -1 // bytes read from the socket (headers included) when the answer was written
      const server = Http.createServer((req, res) => {
        req.on("data", (chunk: Buffer) => void (delivered += chunk.length))
        const writeHead = res.writeHead.bind(res) as (...args: Array<unknown>) => Http.ServerResponse
        res.writeHead = ((...args: Array<unknown>) => {
          consumed = delivered
          socketBytes = req.socket.bytesRead
          return writeHead(...args)
        }) as typeof res.writeHead
        listener(req, res)
      })
      const origin = await listen(server)
      const total = 5 * 1024 * 1024
      try {
        const answer = await new Promise<{ status: number; connection: string | undefined; body: string }>(
          (resolve, reject) => {
            let answered = false
            const req = Http.request(`${origin}/v1/routing`, {
              method: "POST",
              headers: { authorization: `Bearer ${ADMIN}`, ...json, "transfer-encoding": "chunked" }
            })
            req.on("response", (res) => {
              answered = true
              let body = ""
              res.on("data", (chunk) => (body += chunk))
              res.on("end", () => resolve({ status: res.statusCode!, connection: res.headers.connection, body }))
            })
            // Once answered, the server may stop reading: errors writing the rest are expected.
            req.on("error", (error) => answered || reject(error))
            const chunk = Buffer.alloc(64 * 1024, "{")
            let sent = 0
            const pump = () => {
              while (sent < total && !answered) {
                sent += chunk.length
                if (!req.write(chunk)) return void req.once("drain", pump)
              }
              if (!answered) req.end()
            }
            pump()
          }
        )
        assert.strictEqual(answer.status, 413)
        assert.strictEqual(answer.connection, "close")
        assert.strictEqual(JSON.parse(answer.body).code, "payload_too_large")
        assert.isBelow(consumed, max + 64 * 1024, "body bytes taken from the request")
        assert.isAbove(socketBytes, 0)
        assert.isBelow(socketBytes, max + 4 * 64 * 1024, "bytes read from the socket")
      } finally {
        await closeServer(server)
        await listener.dispose()
      }
    })
  }
})

// ---------------------------------------------------------------------------------------------------------------
// No header injection
// ---------------------------------------------------------------------------------------------------------------

const assertCleanHeaders = (response: Received) =>
  response.headers.forEach((value, name) => assert.notMatch(value, /[\r\n]/, `header ${name}`))

const CRLF = fc.constantFrom("\r", "\n", "\r\n", "\r\nSet-Cookie: x=1", "\nLocation: //evil.example")

/** A valid body with a line break put somewhere: in a value, a middleware name or a key. */
const bodyWithLineBreak = fc
  .tuple(fc.constantFrom("method", "path", "handler", "middleware", "key"), CRLF, fc.nat())
  .map(([field, crlf, at]) => {
    const body: Record<string, unknown> = { ...sample, middleware: ["auth", "log"] }
    const insert = (s: string) => s.slice(0, at % (s.length + 1)) + crlf + s.slice(at % (s.length + 1))
    if (field === "key") body[insert("extra")] = 1
    else if (field === "middleware") body.middleware = ["auth", insert("log")]
    else body[field] = insert(body[field] as string)
    return { field, body }
  })

describe("no header injection", () => {
  for (const adapter of adapters) {
    describe(adapter.name, () => {
      it("Location is exactly /v1/routing/{id} for every create; no header value carries a line break", async () => {
        const server = await adapter.start(Layer.merge(RouteRepository.layerMemory, tokens))
        try {
          let n = 0
          await fc.assert(
            fc.asyncProperty(fc.constantFrom("/", "/a/:b", "/%0D%0A/:x", "/Set-Cookie=x;y"), async (path) => {
              const created = await server.send(post({ method: methodFor(n++), path, handler: "h" }))
              assert.strictEqual(created.status, 201, created.text)
              assertCleanHeaders(created)
              assert.isTrue(Route.isRouteId(created.json.id))
              assert.strictEqual(created.headers.get("location"), `/v1/routing/${created.json.id}`)
              assert.isNull(created.headers.get("set-cookie"))
            }),
            { numRuns: 100 }
          )
        } finally {
          await server.close()
        }
      })

      it("a CR or LF anywhere in the body is refused 400 invalid_route, never stored", async () => {
        const server = await adapter.start(Layer.merge(RouteRepository.layerMemory, tokens))
        try {
          await fc.assert(
            fc.asyncProperty(bodyWithLineBreak, async ({ body, field }) => {
              const response = await server.send(post(body))
              assertCleanHeaders(response)
              assertProblem(response, "invalid_route", ["errors"])
              const paths = response.json.errors.map((e: { path: string }) => e.path)
              if (field === "key") assert.isTrue(paths.some((p: string) => /[\r\n]/.test(p)))
              else assert.isTrue(paths.some((p: string) => p.startsWith(field)), JSON.stringify(paths))
              assert.isNull(response.headers.get("location"))
              assert.isNull(response.headers.get("set-cookie"))
            }),
            { numRuns: 100 }
          )
        } finally {
          await server.close()
        }
      })

      it("GET /v1/routing/%0D%0ASet-Cookie:x answers 404 with no Set-Cookie", async () => {
        const server = await adapter.start(Layer.merge(RouteRepository.layerMemory, tokens))
        try {
          for (
            const id of [
              "%0D%0ASet-Cookie:x",
              "%0ASet-Cookie:%20x=1",
              "x%0D%0ALocation:%20evil",
              "%E5%98%8A%E5%98%8D"
            ]
          ) {
            const response = await server.send(get(id))
            assertProblem(response, "route_not_found")
            assertCleanHeaders(response)
            assert.isNull(response.headers.get("set-cookie"))
            assert.isNull(response.headers.get("location"))
          }
          // With a "/" in it, it is no item path at all: the host's (or the adapter's) 404, still nothing injected.
          const response = await server.send(get("x%0D%0ALocation:%20//evil.example"))
          assert.strictEqual(response.status, 404)
          assertCleanHeaders(response)
          assert.isNull(response.headers.get("set-cookie"))
          assert.isNull(response.headers.get("location"))
        } finally {
          await server.close()
        }
      })
    })
  }

  it("the request core builds Location from a route id only, whatever id a store hands back", async () => {
    for (const id of ["x\r\nSet-Cookie: a=b", "../../admin", "//evil.example/x", "a b"]) {
      const repository = RouteRepository.RouteRepository.of({
        create: (input) =>
          Effect.succeed(
            new Route.StoredRoute({ ...input, id: id as Route.RouteId, createdAt: new Date(0), revision: 1 }, true)
          ),
        findById: (id) => Effect.fail(new RouteRepository.RouteNotFound({ id })),
        list: () => Effect.succeed({ items: [], hasMore: false }),
        update: (id) => Effect.fail(new RouteRepository.RouteNotFound({ id })),
        remove: (id) => Effect.fail(new RouteRepository.RouteNotFound({ id }))
      })
      const handler = RoutingHandler.makeWith(repository, staticTokens)
      const response = await runCore(handler, coreRequest("POST"))
      for (const [name, value] of Object.entries(response.headers)) {
        assert.notMatch(value, /[\r\n]/, `${JSON.stringify(id)}: header ${name}`)
      }
      if (response.status === 201) {
        assert.match(response.headers.location ?? "", /^\/v1\/routing\/[0-9a-f]{8}-[0-9a-f]{4}-7/, JSON.stringify(id))
      } else {
        assert.strictEqual(response.status, 500, JSON.stringify(id))
      }
    }
  })
})
