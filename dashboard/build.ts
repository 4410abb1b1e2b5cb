/**
 * Builds the dashboard: bundles `dashboard/src/main.ts` (and the CSS it imports) with esbuild into content-hashed
 * assets in `dashboard/dist/`, and writes the page that names them. `npm run build` runs it; the package ships the
 * result (package.json `files`), and the routing API serves it when its `dashboard` option is on.
 *
 * Run: `node --import tsx dashboard/build.ts`.
 */
import * as esbuild from "esbuild"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"

const here = Path.dirname(fileURLToPath(import.meta.url))
const out = Path.join(here, "dist")

/** The page: no inline script or style (the Content-Security-Policy allows neither), assets by relative address. */
const page = (script: string, style: string) =>
  `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>Route registry</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="${style}">
<script type="module" src="${script}"></script>
</head>
<body>
<noscript>The dashboard needs JavaScript.</noscript>
</body>
</html>
`

/** Builds into `dashboard/dist/`, replacing what was there; returns the names of the files written. */
export const build = async (): Promise<ReadonlyArray<string>> => {
  Fs.rmSync(out, { recursive: true, force: true })
  const result = await esbuild.build({
    entryPoints: [Path.join(here, "src", "main.ts")],
    bundle: true,
    format: "esm",
    target: "es2022",
    minify: true,
    legalComments: "none",
    entryNames: "[name]-[hash]",
    assetNames: "[name]-[hash]",
    outdir: out,
    metafile: true,
    logLevel: "warning"
  })
  const names = Object.keys(result.metafile.outputs).map((file) => Path.basename(file))
  const script = names.find((name) => name.endsWith(".js"))
  const style = names.find((name) => name.endsWith(".css"))
  if (script === undefined || style === undefined) throw new Error(`the dashboard's build wrote ${names.join(", ")}`)
  Fs.writeFileSync(Path.join(out, "index.html"), page(script, style))
  return [...names, "index.html"]
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const names = await build()
  // On stderr: `npm pack --json` prints its JSON on stdout, after the build that `prepare` runs.
  console.error(`dashboard: ${names.join(", ")} in ${Path.relative(process.cwd(), out)}/`)
}
