/**
 * The fleet (docs/dashboard.md task 6, over `GET /v1/routing/followers`): each follower, the revision it applied, how
 * far behind the registry it is, and those that left in the last minutes.
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
}

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
  const refresh = async () => {
    const answer = await call<Fleet>(session, "/followers", { signal }).catch(() => undefined)
    if (answer === undefined) return
    if (answer.value === undefined) {
      summary.textContent = describe(answer.problem!)
      return
    }
    const fleet = answer.value
    const connected = fleet.items.filter((f) => f.connected).length
    summary.textContent = `Registry revision ${fleet.revision}; ${connected} follower${
      connected === 1 ? "" : "s"
    } connected, ${fleet.items.length - connected} left.`
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
    )
  )
  return { element, refresh }
}
