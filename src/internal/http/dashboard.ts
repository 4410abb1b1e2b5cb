/**
 * The dashboard (docs/dashboard.md): a page and its assets, served by the routing API itself below `/v1/routing/ui/`. They
 * are built ahead of time (`npm run build` bundles `dashboard/` into `dashboard/dist/`) and carry no data: every datum
 * comes from the API, with the token the person signs in with. So serving them needs no token, and the page is the
 * same bytes under any mount (its asset and API addresses are relative to where it was loaded).
 *
 * @internal
 */
import type { Effect } from "effect"
import { Either, Exit } from "effect"
import * as Fs from "node:fs"
import { InvalidOption } from "../../InvalidOption.js"
import * as Answers from "./answers.js"
import { COLLECTION, type Request, type Response } from "./exchange.js"

/** Where the dashboard is served: the page at `${UI}/`, each asset below it by its content-hashed name. */
export const UI = `${COLLECTION}/ui`

/** The page and its assets, ready to send. */
export interface Assets {
  readonly page: Response
  readonly files: ReadonlyMap<string, Response>
}

// The build's output: src/internal/http and dist/internal/http are both three folders below the package.
const BUILT = new URL("../../../dashboard/dist/", import.meta.url)

// What the page may load and where it may connect: its own origin only, no inline script or style, no framing.
const CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "connect-src 'self'",
  "img-src 'self' data:",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'"
].join("; ")

const SECURITY_HEADERS = {
  "content-security-policy": CONTENT_SECURITY_POLICY,
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
  "cross-origin-opener-policy": "same-origin",
  "cross-origin-resource-policy": "same-origin"
}

const TYPES: Record<string, string> = {
  js: "text/javascript; charset=utf-8",
  css: "text/css; charset=utf-8",
  html: "text/html; charset=utf-8"
}

// An asset's name holds a hash of its content, so a new build has new names: a browser may keep one for ever.
const IMMUTABLE = "public, max-age=31536000, immutable"

const text = (type: string, cache: string, body: string): Response => ({
  status: 200,
  headers: { "content-type": type, "cache-control": cache, ...SECURITY_HEADERS },
  body
})

const PAGE = "index.html"

const read = (folder: URL): Assets => {
  const files = new Map<string, Response>()
  for (const name of Fs.readdirSync(folder)) {
    const type = TYPES[name.slice(name.lastIndexOf(".") + 1)]
    if (name !== PAGE && type !== undefined) {
      files.set(name, text(type, IMMUTABLE, Fs.readFileSync(new URL(name, folder), "utf8")))
    }
  }
  // The page names the current assets: a browser must ask again each time, and keeps it only to revalidate.
  return { page: text(TYPES.html!, "no-cache", Fs.readFileSync(new URL(PAGE, folder), "utf8")), files }
}

let loaded: Assets | undefined

/**
 * The built page and assets, read once per process; the `InvalidOption` naming `dashboard` when they were never built.
 */
export const load = (folder: URL = BUILT): Either.Either<Assets, InvalidOption> => {
  if (loaded !== undefined && folder === BUILT) return Either.right(loaded)
  try {
    const assets = read(folder)
    if (folder === BUILT) loaded = assets
    return Either.right(assets)
  } catch (error) {
    return Either.left(
      new InvalidOption({
        option: "dashboard",
        message: `dashboard is on but its built page cannot be read from ${folder.pathname} (${
          (error as Error).message
        }): run \`npm run build\` in the package, or turn the dashboard off`
      })
    )
  }
}

const METHODS = "GET"

// `/v1/routing/ui` sends the browser to `ui/`, so that the page's relative addresses resolve below it.
const TO_PAGE: Response = {
  status: 308,
  headers: { location: "ui/", ...SECURITY_HEADERS },
  body: ""
}

const NOT_FOUND = Answers.problem(
  "not_found",
  "The dashboard has no such file: its assets are named by their content, and an older page may name older ones."
)

/** `true` for the paths the dashboard answers. */
export const owns = (path: string): boolean =>
  path.startsWith(UI) && (path.length === UI.length || path.charCodeAt(UI.length) === 47)

/** The answer for a path the dashboard owns (`owns`): the page, an asset, a redirect to the page, or 404 or 405. */
export const serve = (assets: Assets, request: Request): Effect.Effect<Response> => {
  if (request.method !== "GET") {
    return Exit.succeed(Answers.methodNotAllowed(request.method, request.path, METHODS))
  }
  const rest = request.path.slice(UI.length)
  if (rest === "") return Exit.succeed(TO_PAGE)
  if (rest === "/") return Exit.succeed(assets.page)
  return Exit.succeed(assets.files.get(rest.slice(1)) ?? NOT_FOUND)
}
