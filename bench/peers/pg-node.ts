/**
 * The Postgres write peers on plain `node:http` and `pg.Pool`, over the library's own migration: `POST /v1/routing`,
 * `PATCH` and `DELETE /v1/routing/{id}` (with `If-Match`), bearer tokens, the library's validation and problem
 * documents. Two modes (PEER_MODE):
 *
 * - `insert`: one statement per write and nothing else (no revision counter, no log): what a plain server does, and
 *   the ceiling the issue measured against (Postgres itself shares the fsyncs of concurrent commits).
 * - `full` (default): the same transaction as the library, written as an expert would for speed: route row, log entry
 *   and a revision in commit order. Writes waiting at the same moment form one group, committed in one transaction
 *   that locks the revision counter first (so revisions follow the commit order across processes) and runs one
 *   statement per kind: every create in one `INSERT … SELECT FROM json_to_recordset` with its log entries, every
 *   update of a distinct route in one `UPDATE … FROM`, every delete in one `DELETE … USING`, then the counter once. A
 *   conflict is left out by `ON CONFLICT DO NOTHING`; a precondition or a missing route by the statement's condition;
 *   a second change of one route in a group waits for the next group. One group at a time per process.
 */
import * as Http from "node:http"
import type Pg from "pg"
import * as Route from "route-registry/Route"
import { migrate } from "./fastify-pg.js"
import {
  type Answer,
  closeServer,
  COLLECTION,
  DEFAULT_BODY_TIMEOUT_MILLIS,
  DEFAULT_MAX_BODY_BYTES,
  INTERNAL_ERROR,
  invalidRoute,
  ITEM_PREFIX,
  listen,
  makeAuthorizer,
  newRecord,
  type Options,
  readBody,
  routeConflict,
  routeNotFound,
  runMain,
  type Started
} from "./shared.js"

type Write =
  | { readonly kind: "create"; readonly input: Route.CreateRoute }
  | { readonly kind: "update"; readonly id: string; readonly patch: Route.RoutePatch; readonly ifMatch?: number }
  | { readonly kind: "delete"; readonly id: string; readonly ifMatch?: number }

const json = (status: number, value: unknown, headers: Record<string, string> = {}): Answer => ({
  status,
  headers: { "content-type": "application/json", ...headers },
  body: JSON.stringify(value)
})
const PRECONDITION_FAILED = json(412, { code: "precondition_failed" })

const COLUMNS = "id, method, path, middleware, handler, created_at, revision"
const routeOf = (row: any) => ({
  id: row.id,
  method: row.method,
  path: row.path,
  middleware: row.middleware,
  handler: row.handler,
  createdAt: new Date(row.created_at).toISOString(),
  revision: Number(row.revision)
})
const stored = (status: number, row: any) => json(status, routeOf(row), { etag: `"${row.revision}"` })
const LOG_AFTER = (alias: string) =>
  `jsonb_build_object('id', ${alias}.id, 'method', ${alias}.method, 'path', ${alias}.path, 'middleware',
    to_jsonb(${alias}.middleware), 'handler', ${alias}.handler, 'createdAt', ${alias}.created_at)`

/** One statement per write, no log, no counter. */
const insertMode = (pool: Pg.Pool, table: string) => async (write: Write): Promise<Answer> => {
  if (write.kind === "create") {
    const r = newRecord(write.input)
    const shape = Route.shapeOf(write.input.path)
    const inserted = await pool.query(
      `INSERT INTO "${table}" (id, method, path, path_shape, middleware, handler, created_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (method, path_shape, when_key) DO NOTHING RETURNING ${COLUMNS}`,
      [r.id, r.method, r.path, shape, r.middleware, r.handler, r.createdAt]
    )
    if (inserted.rowCount !== 0) return stored(201, inserted.rows[0])
    const held = await pool.query(`SELECT id FROM "${table}" WHERE method = $1 AND path_shape = $2`, [r.method, shape])
    return routeConflict(r.method, r.path, held.rows[0]?.id ?? "unknown")
  }
  if (write.kind === "update") {
    const p = write.patch
    const updated = await pool.query(
      `UPDATE "${table}" SET method = COALESCE($2, method), path = COALESCE($3, path),
         path_shape = COALESCE($4, path_shape), middleware = COALESCE($5, middleware), handler = COALESCE($6, handler)
       WHERE id = $1 AND ($7::bigint IS NULL OR revision = $7) RETURNING ${COLUMNS}`,
      [
        write.id,
        p.method ?? null,
        p.path ?? null,
        p.path === undefined ? null : Route.shapeOf(p.path),
        p.middleware ?? null,
        p.handler ?? null,
        write.ifMatch ?? null
      ]
    )
    return updated.rowCount !== 0 ? stored(200, updated.rows[0]) : routeNotFound(write.id)
  }
  const deleted = await pool.query(
    `DELETE FROM "${table}" WHERE id = $1 AND ($2::bigint IS NULL OR revision = $2)`,
    [write.id, write.ifMatch ?? null]
  )
  return deleted.rowCount !== 0 ? { status: 204, headers: {}, body: "" } : routeNotFound(write.id)
}

interface Waiting {
  readonly write: Write
  readonly resolve: (answer: Answer) => void
}

/** Group commit: the writes waiting at the same moment in one transaction, one statement per kind. */
const fullMode = (pool: Pg.Pool, table: string) => {
  const history = `"${table}_history"`
  const counter = `"${table}_revision"`
  let queue: Array<Waiting> = []
  let running = false

  const group = async (client: Pg.PoolClient, batch: Array<Waiting>) => {
    const answers = new Map<Waiting, Answer>()
    const later: Array<Waiting> = []
    await client.query("BEGIN")
    let base = Number((await client.query(`SELECT revision FROM ${counter} FOR UPDATE`)).rows[0].revision)
    const creates = batch.filter((w) => w.write.kind === "create")
    if (creates.length > 0) {
      const rows = creates.map((w, ord) => {
        const input = (w.write as { input: Route.CreateRoute }).input
        const r = newRecord(input)
        return { ...r, ord, path_shape: Route.shapeOf(input.path), created_at: r.createdAt }
      })
      const inserted = await client.query(
        `WITH input AS (SELECT * FROM json_to_recordset($1::json) AS x(ord int, id uuid, method text, path text,
           path_shape text, middleware text[], handler text, created_at timestamptz)),
         ins AS (INSERT INTO "${table}" (id, method, path, path_shape, middleware, handler, created_at, revision)
           SELECT id, method, path, path_shape, middleware, handler, created_at, $2::bigint + ord + 1 FROM input
           ORDER BY ord ON CONFLICT (method, path_shape, when_key) DO NOTHING RETURNING ${COLUMNS}),
         log AS (INSERT INTO ${history} (revision, at, actor, action, route_id, before, after)
           SELECT revision, created_at, 'bench', 'create', id, NULL, ${LOG_AFTER("ins")} FROM ins)
         SELECT * FROM ins`,
        [JSON.stringify(rows), base]
      )
      const byId = new Map(inserted.rows.map((row) => [row.id, row]))
      for (const [i, w] of creates.entries()) {
        const row = byId.get(rows[i]!.id)
        if (row !== undefined) answers.set(w, stored(201, row))
        else {
          const held = await client.query(`SELECT id FROM "${table}" WHERE method = $1 AND path_shape = $2`, [
            rows[i]!.method,
            rows[i]!.path_shape
          ])
          answers.set(w, routeConflict(rows[i]!.method, rows[i]!.path, held.rows[0]?.id ?? "unknown"))
        }
      }
      base += creates.length
    }
    const touched = new Set<string>()
    const changes: Array<Waiting> = []
    for (const w of batch) {
      if (w.write.kind === "create") continue
      if (touched.has(w.write.id)) later.push(w)
      else {
        touched.add(w.write.id)
        changes.push(w)
      }
    }
    const updates = changes.filter((w) => w.write.kind === "update")
    if (updates.length > 0) {
      const rows = updates.map((w, ord) => {
        const write = w.write as Extract<Write, { kind: "update" }>
        const p = write.patch
        return {
          ord,
          id: write.id,
          method: p.method ?? null,
          path: p.path ?? null,
          path_shape: p.path === undefined ? null : Route.shapeOf(p.path),
          middleware: p.middleware ?? null,
          handler: p.handler ?? null,
          if_match: write.ifMatch ?? null
        }
      })
      // A change of method or path onto a shape another route holds fails the statement (the unique index) and the
      // group answers 500: the benchmark's updates change handlers only (a production peer would run such a write
      // under a savepoint, as the library does).
      const updated = await client.query(
        `WITH input AS (SELECT * FROM json_to_recordset($1::json) AS x(ord int, id uuid, method text, path text,
           path_shape text, middleware text[], handler text, if_match bigint)),
         old AS (SELECT t.* FROM "${table}" AS t JOIN input USING (id)),
         upd AS (UPDATE "${table}" AS t SET method = COALESCE(i.method, t.method), path = COALESCE(i.path, t.path),
             path_shape = COALESCE(i.path_shape, t.path_shape), middleware = COALESCE(i.middleware, t.middleware),
             handler = COALESCE(i.handler, t.handler), revision = $2::bigint + i.ord + 1
           FROM input AS i WHERE t.id = i.id AND (i.if_match IS NULL OR t.revision = i.if_match)
           RETURNING t.${COLUMNS.split(", ").join(", t.")}),
         log AS (INSERT INTO ${history} (revision, at, actor, action, route_id, before, after)
           SELECT upd.revision, now(), 'bench', 'update', upd.id, ${LOG_AFTER("old")}, ${LOG_AFTER("upd")}
           FROM upd JOIN old USING (id))
         SELECT * FROM upd`,
        [JSON.stringify(rows), base]
      )
      const byId = new Map(updated.rows.map((row) => [row.id, row]))
      for (const w of updates) {
        const id = (w.write as { id: string }).id
        const row = byId.get(id)
        answers.set(w, row !== undefined ? stored(200, row) : await missingOr(client, id))
      }
      base += updates.length
    }
    const deletes = changes.filter((w) => w.write.kind === "delete")
    if (deletes.length > 0) {
      const rows = deletes.map((w, ord) => {
        const write = w.write as Extract<Write, { kind: "delete" }>
        return { ord, id: write.id, if_match: write.ifMatch ?? null }
      })
      const deleted = await client.query(
        `WITH input AS (SELECT * FROM json_to_recordset($1::json) AS x(ord int, id uuid, if_match bigint)),
         del AS (DELETE FROM "${table}" AS t USING input AS i
           WHERE t.id = i.id AND (i.if_match IS NULL OR t.revision = i.if_match)
           RETURNING t.id, t.method, t.path, t.middleware, t.handler, t.created_at, $2::bigint + i.ord + 1 AS revision),
         log AS (INSERT INTO ${history} (revision, at, actor, action, route_id, before, after)
           SELECT revision, now(), 'bench', 'delete', id, ${LOG_AFTER("del")}, NULL FROM del)
         SELECT id FROM del`,
        [JSON.stringify(rows), base]
      )
      const gone = new Set(deleted.rows.map((row) => row.id))
      for (const w of deletes) {
        const id = (w.write as { id: string }).id
        answers.set(w, gone.has(id) ? { status: 204, headers: {}, body: "" } : await missingOr(client, id))
      }
      base += deletes.length
    }
    await client.query(`UPDATE ${counter} SET revision = $1`, [base])
    await client.query("COMMIT")
    return { answers, later }
  }

  const missingOr = async (client: Pg.PoolClient, id: string) =>
    (await client.query(`SELECT 1 FROM "${table}" WHERE id = $1`, [id])).rowCount === 0
      ? routeNotFound(id)
      : PRECONDITION_FAILED

  const next = async () => {
    if (running || queue.length === 0) return
    running = true
    const batch = queue
    queue = []
    const client = await pool.connect()
    try {
      const { answers, later } = await group(client, batch)
      for (const [w, answer] of answers) w.resolve(answer)
      queue.unshift(...later)
    } catch (error) {
      await client.query("ROLLBACK").catch(() => undefined)
      console.error(error)
      for (const w of batch) w.resolve(INTERNAL_ERROR)
    } finally {
      client.release()
      running = false
      void next()
    }
  }

  return (write: Write) =>
    new Promise<Answer>((resolve) => {
      queue.push({ write, resolve })
      if (!running && queue.length === 1) setImmediate(() => void next())
    })
}

const ifMatchOf = (header: string | undefined) => {
  const match = header === undefined ? undefined : /^"(\d+)"$/.exec(header.trim())
  return match === null || match === undefined ? undefined : Number(match[1])
}

export const start = async (options: Options): Promise<Started> => {
  const database = options.database
  if (database === undefined) throw new Error("the Postgres peer needs a database (DATABASE_URL and TABLE)")
  await migrate(database)
  const write = process.env.PEER_MODE === "insert"
    ? insertMode(database.pool, database.table)
    : fullMode(database.pool, database.table)
  const authorize = makeAuthorizer(options.tokens)
  const send = (res: Http.ServerResponse, answer: Answer) => {
    res.writeHead(answer.status, answer.headers)
    res.end(answer.body)
  }
  const server = Http.createServer((req, res) => {
    const refused = authorize(req.headers.authorization, "routes:write")
    if (refused !== undefined) return send(res, refused)
    const url = req.url ?? "/"
    const id = url.startsWith(ITEM_PREFIX) ? url.slice(ITEM_PREFIX.length) : undefined
    const run = (w: Write) => write(w).then((answer) => send(res, answer), () => send(res, INTERNAL_ERROR))
    if (req.method === "DELETE" && id !== undefined) {
      if (!Route.isRouteId(id)) return send(res, routeNotFound(id))
      return void run({ kind: "delete", id, ifMatch: ifMatchOf(req.headers["if-match"]) } as Write)
    }
    if ((req.method === "POST" && url === COLLECTION) || (req.method === "PATCH" && id !== undefined)) {
      return readBody(req, DEFAULT_MAX_BODY_BYTES, DEFAULT_BODY_TIMEOUT_MILLIS, (body) => {
        if (!Buffer.isBuffer(body)) return send(res, json(400, { code: "malformed_json" }))
        let parsed: unknown
        try {
          parsed = JSON.parse(body.toString("utf8"))
        } catch {
          return send(res, json(400, { code: "malformed_json" }))
        }
        if (req.method === "POST") {
          const input = Route.validateCreate(parsed)
          if (input._tag === "Left") return send(res, invalidRoute(input.left))
          return void run({ kind: "create", input: input.right })
        }
        if (!Route.isRouteId(id!)) return send(res, routeNotFound(id!))
        const patch = Route.validatePatch(parsed)
        if (patch._tag === "Left") return send(res, invalidRoute(patch.left))
        void run({ kind: "update", id: id!, patch: patch.right, ifMatch: ifMatchOf(req.headers["if-match"]) } as Write)
      })
    }
    send(res, json(404, { code: "not_found" }))
  })
  return { server, port: await listen(server, options), seeded: [], close: () => closeServer(server) } as Started
}

runMain(import.meta.url, start)
