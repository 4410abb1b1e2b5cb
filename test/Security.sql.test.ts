/**
 * Security: SQL only through parameters. A scanner of the store's sources, and hostile but valid values sent through
 * the Postgres store, directly and over HTTP.
 */
import * as Statement from "@effect/sql/Statement"
import { afterAll, assert, beforeAll, describe, it, onTestFinished } from "@effect/vitest"
import { Effect, Layer, ManagedRuntime } from "effect"
import * as Fs from "node:fs"
import * as Route from "route-registry/Route"
import * as RouteRepository from "route-registry/RouteRepository"
import ts from "typescript"
import { nodeListener } from "./utils/adapters.js"
import { methodFor } from "./utils/arbitraries.js"
import { assertProblem, get, post, tokens } from "./utils/httpContract.js"
import * as TestDatabase from "./utils/TestDatabase.js"

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

  // The files that put values into SQL. internal/pg/deadline.ts is not among them: its statements are constant text
  // with only numbers it computed itself (a timeout, a savepoint counter), sent through the driver's raw calls.
  const storeFiles = [
    // Its statements moved to internal/pg/: it must not write SQL of its own again but through them.
    { file: "PgRouteRepository.ts", literals: ["deadline.mark"], templates: 0 },
    { file: "internal/pg/schema.ts", literals: [], templates: 4 },
    { file: "internal/pg/store.ts", literals: [], templates: 4 },
    { file: "internal/pg/keys.ts", literals: [], templates: 4 },
    { file: "internal/pg/row.ts", literals: [], templates: 1 },
    { file: "internal/pg/feed.ts", literals: [], templates: 2 },
    // Its literal is a constant of its own: the alias of a row it joins.
    { file: "internal/pg/log.ts", literals: ["alias"], templates: 1 },
    { file: "internal/pg/restore.ts", literals: [], templates: 1 }
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
        assert.deepStrictEqual({ method, path, middleware: [...middleware] as Array<string>, handler }, bodies[i])
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
      onTestFinished(() => server.close())
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
    })
  })
})
