/**
 * A real browser for the dashboard's tests: Chromium driven by Playwright (`playwright-core`). On a fresh machine it
 * finds one by itself: Playwright's own Chromium when it was downloaded (`npx playwright-core install chromium`), else
 * the operating system's (`/usr/bin/chromium`), else it installs Debian's `chromium` package with apt-get (as root,
 * where Playwright's download is not reachable). The page it loads is the one that ships, built by the run's global
 * set-up (or `npm run build`).
 */
import { execFileSync } from "node:child_process"
import * as Fs from "node:fs"
import * as Http from "node:http"
import type { AddressInfo } from "node:net"
import { type Browser, chromium } from "playwright-core"

const SYSTEM_CHROMIUM = "/usr/bin/chromium"

// The flags of a quiet, reproducible headless run: no background traffic, no first-run pages. Playwright gives each
// launch a fresh profile (user data directory) of its own.
const ARGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
  "--no-first-run",
  // One renderer process for all pages of a site, rather than one for each page the tests open.
  "--process-per-site"
]

const exists = (path: string | undefined): path is string => path !== undefined && path !== "" && Fs.existsSync(path)

const installChromium = () => {
  if (process.getuid?.() !== 0) {
    throw new Error(
      "no Chromium found: run `npx playwright-core install chromium`, or install the system's package " +
        "(`apt-get install -y chromium`)"
    )
  }
  execFileSync("apt-get", ["update"], { stdio: "inherit" })
  execFileSync("apt-get", ["install", "-y", "--no-install-recommends", "chromium"], {
    stdio: "inherit",
    env: { ...process.env, DEBIAN_FRONTEND: "noninteractive" }
  })
}

/** The Chromium to drive: Playwright's own if present, else the system's, installed with apt-get if need be. */
export const executable = (): string => {
  const own = (() => {
    try {
      return chromium.executablePath()
    } catch {
      return undefined
    }
  })()
  if (exists(own)) return own
  if (!exists(SYSTEM_CHROMIUM)) installChromium()
  return SYSTEM_CHROMIUM
}

export const launch = (): Promise<Browser> =>
  chromium.launch({ executablePath: executable(), args: ARGS, headless: true })

/** A `node:http` server on a free local port; `close` ends it and its connections. */
export const listen = async (listener: Http.RequestListener): Promise<{
  readonly origin: string
  readonly close: () => Promise<void>
}> => {
  const server = Http.createServer(listener)
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const { port } = server.address() as AddressInfo
  return {
    origin: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      })
  }
}

/** Where the tests write their screenshots: docs/images when `UPDATE_SCREENSHOTS=1`, else a scratch folder. */
export const screenshotDir: string = process.env.UPDATE_SCREENSHOTS === "1"
  ? new URL("../../docs/images/", import.meta.url).pathname
  : Fs.mkdtempSync("/tmp/dashboard-screenshots-")
