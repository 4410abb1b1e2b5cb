/**
 * The fleet (docs/dashboard.md task 6, over `GET /v1/routing/followers`): each follower, the revision it applied, how
 * far behind the registry it is, and those that left in the last minutes. It reads one page of `PAGE` followers at a
 * time, with the whole fleet's counts, never the whole list: a fleet of tens of thousands costs the page what one of
 * a hundred does.
 */
import { call, describe, type Session } from "./api.js"
import { h, replace, time } from "./dom.js"

interface Follower {
  readonly name: string
  readonly address: string
  readonly via: string | null
  readonly connectedAt: string
  readonly appliedRevision: number
  readonly reportedAt: string
  readonly connected: boolean
}

interface Fleet {
  readonly revision: number
  readonly items: ReadonlyArray<Follower>
  readonly counts: { readonly followers: number; readonly connected: number; readonly behind: number }
  readonly nextCursor: string | null
}

/** Followers shown at once. */
const PAGE = 100

/** How often the fleet is asked again while the page is open. */
const REFRESH_MILLIS = 5_000

const behind = (fleet: Fleet, follower: Follower) => {
  const n = fleet.revision - follower.appliedRevision
  return n <= 0 ? "current" : `${n} revision${n === 1 ? "" : "s"} behind`
}

export const fleet = (
  session: Session,
  signal: AbortSignal
): { element: HTMLElement; refresh: () => Promise<void> } => {
  const body = h("tbody")
  const summary = h("p", { "aria-live": "polite" })
  // The cursors of the pages before the one shown (the first page's is undefined), and the next page's.
  const before: Array<string | undefined> = []
  let cursor: string | undefined
  let next: string | null = null
  const previousButton = h("button", { type: "button", disabled: true, onclick: () => void turn(-1) }, "Previous")
  const nextButton = h("button", { type: "button", disabled: true, onclick: () => void turn(1) }, "Next")
  const refresh = async () => {
    const answer = await call<Fleet>(session, "/followers", {
      query: { limit: String(PAGE), cursor },
      signal
    }).catch(() => undefined)
    if (answer === undefined) return
    if (answer.value === undefined) {
      summary.textContent = describe(answer.problem!)
      return
    }
    const fleet = answer.value
    const { behind: late, connected, followers } = fleet.counts
    next = fleet.nextCursor
    previousButton.toggleAttribute("disabled", before.length === 0)
    nextButton.toggleAttribute("disabled", next === null)
    summary.textContent = `Registry revision ${fleet.revision}; ${connected} follower${
      connected === 1 ? "" : "s"
    } connected (${late} behind), ${followers - connected} left.${
      followers > PAGE ? ` Showing ${before.length * PAGE + 1}–${before.length * PAGE + fleet.items.length}.` : ""
    }`
    replace(
      body,
      ...fleet.items.map((f) =>
        h(
          "tr",
          { class: f.connected ? "" : "left" },
          h("td", {}, f.name),
          h("td", {}, behind(fleet, f)),
          h("td", {}, f.connected ? "connected" : "left"),
          h("td", {}, String(f.appliedRevision)),
          h("td", {}, f.via ?? "direct"),
          h("td", {}, f.address),
          h("td", {}, time(f.reportedAt))
        )
      )
    )
  }
  const turn = (step: 1 | -1) => {
    if (step === 1 && next !== null) {
      before.push(cursor)
      cursor = next
    } else if (step === -1 && before.length > 0) {
      cursor = before.pop()
    }
    return refresh()
  }
  const timer = setInterval(() => void refresh(), REFRESH_MILLIS)
  signal.addEventListener("abort", () => clearInterval(timer), { once: true })
  const element = h(
    "section",
    { class: "fleet", "aria-labelledby": "fleet-heading" },
    h(
      "div",
      { class: "heading" },
      h("h2", { id: "fleet-heading" }, "Fleet"),
      h("button", { type: "button", onclick: () => void refresh() }, "Refresh")
    ),
    summary,
    // The side column is narrower than seven columns: the table scrolls sideways in a region the keyboard can reach.
    h(
      "div",
      { class: "scroll", tabindex: "0", role: "region", "aria-label": "Followers, scrollable" },
      h(
        "table",
        { "aria-label": "Followers" },
        h(
          "thead",
          {},
          h(
            "tr",
            {},
            ...["Name", "Behind", "State", "Applied revision", "Via", "Address", "Reported"].map((name) =>
              h("th", { scope: "col" }, name)
            )
          )
        ),
        body
      )
    ),
    h("div", { class: "pages" }, previousButton, nextButton)
  )
  return { element, refresh }
}
