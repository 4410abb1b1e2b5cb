/**
 * A route's split (docs/router.md: disabled routes and splits): the rules of its fields, its canonical form, and which handler a key's bucket goes
 * to. Plain functions, as the rest of the grammar: the validators and the routers call them.
 *
 * @internal
 */
import * as Grammar from "./grammar.js"
import * as Murmur3 from "./murmur3.js"

/** One target of a split: a handler and its share in basis points. */
export interface SplitTarget {
  readonly handler: Grammar.HandlerName
  readonly weight: number
}

/** A split: where its key is read, the group its buckets are computed in, its targets, and the override header. */
export interface Split {
  readonly by: string
  readonly group?: string
  readonly targets: ReadonlyArray<SplitTarget>
  readonly override?: string
}

/** What a request's split decided: the handler, and the key and bucket when it had a key and no override won. */
export interface Choice {
  readonly handler: string
  readonly key: string | null
  readonly bucket: number | null
}

/** The buckets of a split: weights are basis points. */
export const BUCKETS = 10_000
export const MAX_TARGETS = 8
/** The most characters of a `group`, and of the name in `by` and `override`. */
export const MAX_GROUP_LENGTH = 256
export const MAX_KEY_NAME_LENGTH = 128

/** The sources a key may come from, as `by` names them. */
export const SOURCES = ["header", "cookie", "query"] as const
export type Source = typeof SOURCES[number]

// RFC 9110 §5.6.2 `token`: a header's or a cookie's name.
const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/

const describe = (u: unknown): string =>
  u === null ? "null" : Array.isArray(u) ? "an array" : typeof u === "object" ? "an object" : `a ${typeof u}`

const isRecord = (u: unknown): u is Record<string, unknown> => typeof u === "object" && u !== null && !Array.isArray(u)

const FIELDS = new Set(["by", "group", "targets", "override"])
const TARGET_FIELDS = new Set(["handler", "weight"])

/** One problem, at its path below the route (`split.targets[1].weight`). */
export interface Issue {
  readonly path: string
  readonly message: string
}

const checkBy = (by: unknown, add: (path: string, message: string) => void): void => {
  const example = "such as \"header:x-user-id\", \"cookie:uid\" or \"query:user\""
  if (typeof by !== "string") return add("split.by", `must be a string ${example} (got ${describe(by)})`)
  const colon = by.indexOf(":")
  const source = colon < 0 ? by : by.slice(0, colon)
  const name = colon < 0 ? "" : by.slice(colon + 1)
  if (!(SOURCES as ReadonlyArray<string>).includes(source)) {
    return add("split.by", `${JSON.stringify(by)} must start with "header:", "cookie:" or "query:" (${example})`)
  }
  if (name.length === 0 || name.length > MAX_KEY_NAME_LENGTH) {
    return add("split.by", `the name after "${source}:" must be 1–${MAX_KEY_NAME_LENGTH} characters (${example})`)
  }
  if (source !== "query" && !TOKEN.test(name)) {
    add("split.by", `${JSON.stringify(name)} is not a ${source} name: use letters, digits and !#$%&'*+.^_\`|~-`)
  }
  if (/[\u0000-\u001f\u007f]/.test(name)) add("split.by", "must not contain control characters")
}

const checkTargets = (
  targets: unknown,
  handler: string | undefined,
  add: (path: string, message: string) => void
): void => {
  const example = "such as [{\"handler\": \"checkoutV2\", \"weight\": 500}]"
  if (!Array.isArray(targets)) return add("split.targets", `must be an array ${example} (got ${describe(targets)})`)
  if (targets.length < 1 || targets.length > MAX_TARGETS) {
    add("split.targets", `must list 1 to ${MAX_TARGETS} targets (got ${targets.length})`)
  }
  const seen = new Map<string, number>()
  let total = 0
  targets.slice(0, MAX_TARGETS).forEach((target: unknown, i) => {
    const at = `split.targets[${i}]`
    if (!isRecord(target)) return add(at, `must be an object ${example.slice(8, -1)} (got ${describe(target)})`)
    for (const key of Object.keys(target)) {
      if (!TARGET_FIELDS.has(key)) {
        add(Grammar.memberPath(at, key), `unknown field "${key}": a target has only handler and weight`)
      }
    }
    const name = target.handler
    if (typeof name !== "string") add(`${at}.handler`, `is required: a handler name (got ${describe(name)})`)
    else {
      const problem = Grammar.checkName(name)
      if (problem !== undefined) add(`${at}.handler`, problem)
      else if (name === handler) {
        add(
          `${at}.handler`,
          `${JSON.stringify(name)} is the route's handler, which takes the buckets the targets leave`
        )
      } else if (seen.has(name)) {
        add(`${at}.handler`, `${JSON.stringify(name)} is already a target at split.targets[${seen.get(name)}]`)
      } else seen.set(name, i)
    }
    const weight = target.weight
    if (typeof weight !== "number" || !Number.isInteger(weight) || weight < 0 || weight > BUCKETS) {
      add(`${at}.weight`, `must be a whole number of basis points from 0 to ${BUCKETS} (got ${JSON.stringify(weight)})`)
    } else total += weight
  })
  if (total > BUCKETS) {
    add("split.targets", `the weights add up to ${total} basis points: at most ${BUCKETS} (100%) may be split off`)
  }
}

/**
 * Every problem of a split's value; `handler` is the route's handler when the input names it (a target must be
 * another handler).
 */
export const check = (value: unknown, handler: string | undefined): ReadonlyArray<Issue> => {
  const issues: Array<Issue> = []
  const add = (path: string, message: string) => void issues.push({ path, message })
  if (!isRecord(value)) {
    add("split", `must be an object such as {"by": "header:x-user-id", "targets": [...]} (got ${describe(value)})`)
    return issues
  }
  for (const key of Object.keys(value)) {
    if (!FIELDS.has(key)) {
      add(Grammar.memberPath("split", key), `unknown field "${key}": a split has only by, group, targets and override`)
    }
  }
  if (value.by === undefined) add("split.by", "is required: where the key is read, such as \"header:x-user-id\"")
  else checkBy(value.by, add)
  if (value.group !== undefined) {
    const group = value.group
    if (typeof group !== "string" || group.length === 0 || group.length > MAX_GROUP_LENGTH) {
      add(
        "split.group",
        `must be a text of 1–${MAX_GROUP_LENGTH} characters (got ${describe(group)}); leave it out ` +
          "to use the route's id"
      )
    } else if (/[\u0000-\u001f\u007f]/.test(group)) add("split.group", "must not contain control characters")
  }
  if (value.targets === undefined) add("split.targets", "is required: 1 to 8 targets, each a handler and a weight")
  else checkTargets(value.targets, handler, add)
  if (value.override !== undefined) {
    const override = value.override
    if (typeof override !== "string" || override.length > MAX_KEY_NAME_LENGTH || !TOKEN.test(override)) {
      add("split.override", `must be a header name such as "x-route-handler" (got ${JSON.stringify(override)})`)
    }
  }
  return issues
}

/** A valid split in its canonical form: its fields in order, defaults left out, names as given. */
export const canonical = (value: Record<string, unknown>): Split => {
  const targets = (value.targets as ReadonlyArray<Record<string, unknown>>).map((target) => ({
    handler: target.handler as Grammar.HandlerName,
    weight: target.weight as number
  }))
  return {
    by: value.by as string,
    ...(value.group === undefined ? {} : { group: value.group as string }),
    targets,
    ...(value.override === undefined ? {} : { override: value.override as string })
  }
}

/** The names of a split's targets, for catalog checking. */
export const targetHandlers = (split: Split): ReadonlyArray<string> => split.targets.map((target) => target.handler)

/** Equal splits, compared field by field (a patch repeating a stored split changes nothing). */
export const equal = (a: Split | undefined, b: Split | undefined): boolean =>
  a === b ||
  (a !== undefined && b !== undefined && a.by === b.by && a.group === b.group && a.override === b.override &&
    a.targets.length === b.targets.length &&
    a.targets.every((t, i) => t.handler === b.targets[i]!.handler && t.weight === b.targets[i]!.weight))

/**
 * A split made ready for one route's requests: the hash state after `<group>:` (so that a request hashes its key
 * alone), with the route's id and handler. Made once per route version.
 */
export interface Prepared {
  readonly split: Split
  readonly handler: string
  readonly prefix: Murmur3.State
}

// The hash state after `<group>:`.
const prefixOf = (group: string): Murmur3.State => {
  Murmur3.start(0)
  Murmur3.feed(group)
  Murmur3.feedByte(58 /* : */)
  return Murmur3.save()
}

/** `split` ready for the requests of the route with `routeId` and `handler`. */
export const prepare = (split: Split, routeId: string, handler: string): Prepared => ({
  split,
  handler,
  prefix: prefixOf(split.group ?? routeId)
})

/** The bucket of `key` in `group`: MurmurHash3 x86 32-bit, seed 0, over `<group>:<key>`, modulo 10,000. */
export const bucketOf = (group: string, key: string): number => Murmur3.hashAfter(prefixOf(group), key) % BUCKETS

/** The handler that takes `bucket`: the targets take ranges from 0 in order, the route's handler what is left. */
export const handlerAt = (split: Split, handler: string, bucket: number): string => {
  const targets = split.targets
  let end = 0
  for (let i = 0; i < targets.length; i++) {
    end += targets[i]!.weight
    if (bucket < end) return targets[i]!.handler
  }
  return handler
}

/** Whether `name` is one of the route's handlers: its own or a target's (an override must name one). */
export const isHandlerOf = (split: Split, handler: string, name: string): boolean =>
  name === handler || split.targets.some((target) => target.handler === name)

/**
 * The choice for a request: the override, when it names one of the route's handlers; else the key's bucket; no key
 * (absent or empty) goes to the route's handler. The key and its bucket are reported whichever decided.
 */
export const chooseWith = (prepared: Prepared, key: string | undefined, override: string | undefined): Choice => {
  const { handler, split } = prepared
  const overridden = override !== undefined && isHandlerOf(split, handler, override)
  if (key === undefined || key === "") return { handler: overridden ? override : handler, key: null, bucket: null }
  const bucket = Murmur3.hashAfter(prepared.prefix, key) % BUCKETS
  return { handler: overridden ? override : handlerAt(split, handler, bucket), key, bucket }
}

/** `chooseWith` for a split not prepared (one question, as `match` asks it). */
export const choose = (
  split: Split,
  routeId: string,
  handler: string,
  key: string | undefined,
  override: string | undefined
): Choice => chooseWith(prepare(split, routeId, handler), key, override)
