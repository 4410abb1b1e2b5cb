/**
 * The bootstrap file (docs/resilience.md): a routes file in the CLI's export format (`route-registry export`), which a
 * process routes from on its very first start when its registry or database cannot be reached within its start
 * timeout and it has no valid snapshot. Its routes get ids and revision 0 of their own; the registry's table replaces
 * them whole, in one step, when it answers.
 *
 * @internal
 */
import { Effect, Either } from "effect"
import * as Fs from "node:fs/promises"
import * as Route from "../../Route.js"
import * as RoutesFile from "../cli/routesFile.js"

/** The routes of the bootstrap file at `file`, or why it cannot be routed from. */
export const read = (file: string, now: number): Effect.Effect<Either.Either<Array<Route.StoredRoute>, string>> =>
  Effect.promise(() =>
    Fs.readFile(file, "utf8").then(
      (text) =>
        Either.match(RoutesFile.parse(text), {
          onLeft: (problems) =>
            Either.left(
              `${problems.length} problem(s), the first at line ${problems[0]!.line}: ${problems[0]!.message}`
            ),
          onRight: (items) =>
            Either.right(items.map(({ route }) =>
              new Route.StoredRoute({
                ...route,
                id: Route.makeRouteId(now),
                createdAt: new Date(now),
                revision: 0
              }, true)
            ))
        }),
      (error: NodeJS.ErrnoException) =>
        Either.left(error.code === "ENOENT" ? "no such file" : `unreadable: ${error.message}`)
    )
  )
