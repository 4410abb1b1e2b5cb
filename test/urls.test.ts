/**
 * What the library shows of a URL it was given: never a password, and a warning when a bearer token would cross the
 * network in clear text (a follower's URL, the command's registry URL).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Layer, Logger, Redacted } from "effect"
import * as RouteFollower from "route-registry/RouteFollower"
import * as Urls from "../src/internal/urls.js"

describe("Urls.redacted", () => {
  it("shows a password as ***, and a URL without one as given", () => {
    assert.strictEqual(Urls.redacted("http://user:s3cret@registry:3000/api"), "http://user:***@registry:3000/api")
    assert.strictEqual(Urls.redacted("https://registry:3000"), "https://registry:3000")
    assert.strictEqual(Urls.redacted("not a url"), "not a url")
  })
})

describe("Urls.hidingPassword", () => {
  it("hides the password wherever a message quotes the URL, and leaves other text alone", () => {
    const hide = Urls.hidingPassword("http://user:pw@registry:3000")
    assert.strictEqual(
      hide("Request cannot be constructed from a URL that includes credentials: http://user:pw@registry:3000/v1"),
      "Request cannot be constructed from a URL that includes credentials: http://user:***@registry:3000/v1"
    )
    assert.strictEqual(hide("pw stays where it is no password"), "pw stays where it is no password")
    assert.strictEqual(Urls.hidingPassword("http://registry:3000")("a :x@ text"), "a :x@ text")
  })
})

describe("Urls.cleartextWarning", () => {
  it("warns for http:// to another host, naming the URL without its password", () => {
    const warning = Urls.cleartextWarning("http://user:s3cret@registry.internal:3000", "the registry's URL")
    assert.include(warning, "the registry's URL http://user:***@registry.internal:3000")
    assert.include(warning, "unencrypted")
    assert.include(warning, "use https://")
    assert.notInclude(warning, "s3cret")
  })

  it("stays silent for https://, and for this machine over http://", () => {
    for (
      const url of ["https://registry:3000", "http://127.0.0.1:3000", "http://localhost:3000", "http://[::1]:3000"]
    ) {
      assert.isUndefined(Urls.cleartextWarning(url, "the URL"), url)
    }
  })
})

describe("RouteFollower.layer", () => {
  // 192.0.2.1 (TEST-NET-1) is another host, which answers nothing: the layer fails at startTimeout.
  it.live(
    "warns once that the token goes in clear text, and never shows the URL's password",
    () =>
      Effect.gen(function*() {
        const lines: Array<string> = []
        const logger = Logger.replace(
          Logger.defaultLogger,
          Logger.make(({ message }) => void lines.push(String(message)))
        )
        const exit = yield* Effect.exit(
          Layer.build(
            RouteFollower.layer({
              url: "http://user:s3cret@192.0.2.1:1",
              token: Redacted.make("t"),
              startTimeout: 200,
              retryInitial: 50
            })
          ).pipe(Effect.scoped, Effect.provide(logger))
        )
        assert.isTrue(Exit.isFailure(exit))
        const failure = Exit.isFailure(exit) ? String(exit.cause) : ""
        assert.include(failure, "http://user:***@192.0.2.1:1")
        assert.notInclude(failure, "s3cret")
        const warnings = lines.filter((line) => line.includes("unencrypted"))
        assert.strictEqual(warnings.length, 1, lines.join("\n"))
        assert.notInclude(lines.join("\n"), "s3cret")
      }),
    { timeout: 10_000 }
  )
})
