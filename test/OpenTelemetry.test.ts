/**
 * The OpenTelemetry names of docs/observability.md, with a real SDK (in-memory span exporter, metric reader) and
 * `@opentelemetry/instrumentation-http`, alone and with the framework's own instrumentation, in every router form and
 * integration: a request a stored route serves (and a HEAD served by its GET) ends with its server span named
 * `<METHOD> <pattern>`, `http.route` and the route's id, and its duration point carrying `http.route`; a request no
 * stored route served, and a native route of the framework (the control), keep what the instrumentations gave them.
 * Each host runs in a process of its own (`test/fixtures/otelHost.ts`, as the run compiled it), its instrumentations
 * registered before the modules they patch are loaded.
 */
import { afterAll, assert, describe, it, onTestFinished } from "@effect/vitest"
import { type ChildProcess, spawn } from "node:child_process"
import { nodeArguments } from "./utils/spawned.js"

interface SpanView {
  readonly name: string
  readonly kind: number
  readonly scope: string
  readonly spanId: string
  readonly parentSpanId: string | undefined
  readonly attributes: Readonly<Record<string, unknown>>
}

interface Recorded {
  readonly spans: ReadonlyArray<SpanView>
  readonly points: ReadonlyArray<Readonly<Record<string, unknown>>>
}

const INTERNAL = 0
const SERVER = 1
const HTTP_SCOPE = "@opentelemetry/instrumentation-http"

const nextMessage = <A>(process: ChildProcess): Promise<A> =>
  new Promise((resolve, reject) => {
    process.once("message", (message) => resolve(message as A))
    process.once("exit", (code) => reject(new Error(`the host exited (${code})`)))
  })

type Host = Awaited<ReturnType<typeof startHost>>

const startHost = async (form: string, framework: boolean) => {
  let output = ""
  const child = spawn(process.execPath, nodeArguments("test/fixtures/otelHost.ts"), {
    env: {
      PATH: process.env.PATH ?? "",
      HOME: process.env.HOME ?? "",
      FORM: form,
      OTEL_FRAMEWORK: framework ? "1" : ""
    },
    stdio: ["ignore", "pipe", "pipe", "ipc"]
  })
  child.stdout!.on("data", (chunk) => (output += chunk))
  child.stderr!.on("data", (chunk) => (output += chunk))
  const started = await nextMessage<{ origin: string; id: string; conditioned: string }>(child).catch(
    (error: Error) => {
      child.kill("SIGKILL")
      throw new Error(`${error.message}:\n${output}`)
    }
  )
  return {
    ...started,
    child,
    send: async (method: string, path: string, init: RequestInit = {}) => {
      const response = await fetch(started.origin + path, { ...init, method })
      return { status: response.status, text: await response.text() }
    },
    /** Drops the spans recorded so far, so that what a test reads is its own requests'. */
    forget: async (): Promise<void> => {
      const done = nextMessage(child)
      child.send("forget")
      await done
    },
    // Spans end when their response has closed, just after the client has read it: asked until they are all there.
    recorded: async (spans: number): Promise<Recorded> => {
      for (;;) {
        const reply = nextMessage<Recorded>(child)
        child.send("collect")
        const recorded = await reply
        if (recorded.spans.filter((span) => span.scope === HTTP_SCOPE).length >= spans) return recorded
        await new Promise((resolve) => setTimeout(resolve, 50))
      }
    }
  }
}

// One host process per form, started by its first test and stopped after its last: the integrations' serve both
// describes' tests (a process start, loading the SDK, the framework and the library, is most of a test's cost).
const hosts = new Map<string, Promise<Host>>()
const hostOf = (form: string, framework: boolean): Promise<Host> => {
  const key = `${form}:${framework}`
  const host = hosts.get(key) ?? startHost(form, framework)
  hosts.set(key, host)
  return host
}
const stopHost = async (form: string, framework: boolean) => {
  const key = `${form}:${framework}`
  const host = hosts.get(key)
  hosts.delete(key)
  await host?.then((host) => host.child.kill("SIGKILL"), () => {})
}
afterAll(async () => {
  await Promise.all([...hosts.values()].map((host) => host.then((host) => host.child.kill("SIGKILL"), () => {})))
})

const integration = (form: string) => form === "fastify" || form === "express" || form === "hono"

const forms: ReadonlyArray<readonly [form: string, framework: boolean, label: string]> = [
  ["node", false, "RouterListener on node:http"],
  ["effect", false, "RouterHttpApp on Effect's Node server, Effect's tracer on the SDK"],
  ["fastify", false, "the Fastify integration"],
  ["fastify", true, "the Fastify integration with @fastify/otel"],
  ["express", false, "the Express integration"],
  ["express", true, "the Express integration with @opentelemetry/instrumentation-express"],
  ["hono", false, "the Hono integration on @hono/node-server"]
]

const serverSpans = (recorded: Recorded, method: string, status: number) =>
  recorded.spans.filter((span) =>
    span.kind === SERVER && span.attributes["http.request.method"] === method &&
    span.attributes["http.response.status_code"] === status
  )

describe("OpenTelemetry names the requests stored routes serve", () => {
  for (const [form, framework, label] of forms) {
    it(label, async () => {
      if (!integration(form)) onTestFinished(() => stopHost(form, framework))
      const host = await hostOf(form, framework)
      const served = await host.send("GET", "/users/42")
      assert.deepStrictEqual(
        served,
        { status: 200, text: JSON.stringify("/users/:id") },
        "the accessor reads the match"
      )
      assert.strictEqual((await host.send("HEAD", "/users/42")).status, 200)
      assert.strictEqual((await host.send("GET", "/nothing")).status, 404)
      assert.strictEqual((await host.send("GET", "/native/7")).status, 200)
      const versioned = await host.send("GET", "/users/42", { headers: { "x-version": "2" } })
      assert.strictEqual(versioned.status, 200)
      const recorded = await host.recorded(5)
      const spansOf = (method: string, id: string) =>
        serverSpans(recorded, method, 200).filter((span) =>
          span.attributes["url.path"] === "/users/42" && span.attributes["route_registry.route.id"] === id
        )
      // The HTTP instrumentation's span, and in the Effect form Effect's own server span too.
      const perRequest = form === "effect" ? 2 : 1

      for (const method of ["GET", "HEAD"]) {
        const spans = spansOf(method, host.id)
        assert.strictEqual(spans.length, perRequest, JSON.stringify(recorded.spans))
        for (const span of spans) {
          assert.strictEqual(span.name, `${method} /users/:id`)
          assert.strictEqual(span.attributes["http.route"], "/users/:id")
          // A route without conditions or tags adds no attribute for them.
          assert.strictEqual(span.attributes["route_registry.route.when"], undefined)
          assert.strictEqual(span.attributes["route_registry.route.tags"], undefined)
        }
        const routes = recorded.points.filter((point) =>
          point["http.request.method"] === method && point["http.response.status_code"] === 200
        ).map((point) => point["http.route"])
        // GET's other point is the native route's: named by the framework's instrumentation, or not at all. (The
        // conditioned route's requests share the point of their pattern.)
        const native = method === "HEAD" ? [] : [framework ? "/native/:id" : undefined]
        assert.sameMembers(routes, ["/users/:id", ...native])
      }

      // The request with `x-version: 2` names the route whose conditions it met, its conditions and its tags.
      const conditioned = spansOf("GET", host.conditioned)
      assert.strictEqual(conditioned.length, perRequest, JSON.stringify(recorded.spans))
      for (const span of conditioned) {
        assert.strictEqual(span.name, "GET /users/:id")
        assert.strictEqual(
          span.attributes["route_registry.route.when"],
          `{"headers":[{"name":"x-version","value":"2"}]}`
        )
        assert.deepStrictEqual(span.attributes["route_registry.route.tags"], ["team:accounts", "public"])
      }

      // What no stored route served carries no stored pattern and no route id; the framework's own route keeps its name.
      for (const span of recorded.spans) {
        if (span.attributes["http.route"] === "/users/:id") assert.strictEqual(span.attributes["url.path"], "/users/42")
        if (span.attributes["url.path"] !== "/users/42") {
          assert.strictEqual(span.attributes["route_registry.route.id"], undefined)
        }
      }
      for (const point of recorded.points) {
        if (point["http.response.status_code"] === 404) assert.notStrictEqual(point["http.route"], "/users/:id")
      }
      const native = serverSpans(recorded, "GET", 200).filter((span) => span.scope === HTTP_SCOPE)
        .find((span) => span.attributes["url.path"] === "/native/7")
      assert.isDefined(native)
      if (!framework) {
        // No instrumentation of the framework's: the control shows the library names nothing it did not serve.
        assert.strictEqual(native.attributes["http.route"], undefined)
      } else {
        assert.strictEqual(native.attributes["http.route"], "/native/:id")
        assert.strictEqual(native.name, "GET /native/:id")
      }
    })
  }
})

describe("telemetry: true in the integrations: the routing API's spans reach the host's OpenTelemetry SDK", () => {
  const integrations = forms.filter(([form]) => integration(form))
  for (const [form, framework, label] of integrations) {
    it(label, async () => {
      onTestFinished(() => stopHost(form, framework))
      const host = await hostOf(form, framework)
      await host.forget()
      const created = await host.send("POST", "/v1/routing", {
        headers: { authorization: "Bearer admin-token", "content-type": "application/json" },
        body: JSON.stringify({ method: "GET", path: "/traced/:id", handler: "show" })
      })
      assert.strictEqual(created.status, 201, created.text)
      const recorded = await host.recorded(1)
      const server = recorded.spans.find((span) =>
        span.scope === HTTP_SCOPE && span.kind === SERVER && span.attributes["http.request.method"] === "POST"
      )
      assert.isDefined(server, JSON.stringify(recorded.spans))
      const library = recorded.spans.filter((span) => span.scope === "route-registry")
      const request = library.find((span) => span.name === "POST /v1/routing")
      assert.isDefined(request, JSON.stringify(recorded.spans))
      // A step of the host's request, not a second server span: below its HTTP server span (a child, or, with the
      // framework's own instrumentation, a child of the framework's span of the request).
      const ancestors = (span: SpanView): Array<string> => {
        const parent = recorded.spans.find((other) => other.spanId === span.parentSpanId)
        return parent === undefined ? [] : [parent.spanId, ...ancestors(parent)]
      }
      assert.include(ancestors(request), server.spanId)
      assert.strictEqual(request.parentSpanId === server.spanId, !framework)
      assert.strictEqual(request.kind, INTERNAL)
      assert.deepInclude(request.attributes, {
        "http.route": "/v1/routing",
        "route_registry.operation": "create",
        "http.response.status_code": 201
      })
      const store = library.find((span) => span.name.startsWith("RouteRepository."))
      assert.isDefined(store, JSON.stringify(library))
      assert.strictEqual(store.parentSpanId, request.spanId)
      assert.strictEqual(store.attributes["route_registry.store.outcome"], "success")
    })
  }
})
