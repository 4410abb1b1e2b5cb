/**
 * The path grammar as one JSON Schema `pattern` (ECMA-262, no lookaround, so every JSON Schema
 * validator can run it). It says everything `parsePath` checks except two things a regular expression cannot say
 * well: the 2048-character bound (the schema's `maxLength`) and a name used twice.
 *
 * @internal
 */
import { MAX_SEGMENTS } from "./grammar.js"

// A percent-escape in uppercase hex of any byte but a letter, digit or "- . _ ~" (those are written plainly).
const ESCAPE = "%(?:[0189A-F][0-9A-F]|2[0-9A-CF]|3[A-F]|40|5[B-E]|60|7[B-DF])"
// One unit of static text other than ".", then any unit.
const NOT_DOT = `(?:[-A-Za-z0-9_~!$&'+,;=@]|${ESCAPE})`
const UNIT = `(?:[-A-Za-z0-9._~!$&'+,;=@]|${ESCAPE})`
// A unit that cannot continue a name: what static text after a parameter starts with, since a name ends there.
const AFTER_NAME = `(?:[-.~!$&'+,;=@]|${ESCAPE})`
// A static segment that is not "." or "..": some unit other than "." after any dots, or three dots or more.
const STATIC = `\\.*${NOT_DOT}${UNIT}*|\\.{3,}`
const NAME = "[A-Za-z_][A-Za-z0-9_]{0,63}"
const PARAM = `:${NAME}`
// A segment with one parameter or more (a whole-segment parameter or a mixed segment): static text may come before
// the first one, and static text that starts with a unit outside [A-Za-z0-9_] follows every one but the last, and
// may follow that one too.
const WITH_PARAMS = `${UNIT}*(?:${PARAM}${AFTER_NAME}${UNIT}*)*${PARAM}(?:${AFTER_NAME}${UNIT}*)?`
const SEGMENT = `/(?:${WITH_PARAMS}|${STATIC})`

/**
 * `/` alone, or 1–64 `/segment`, each static, a parameter `:name` or a mixed segment, the last one possibly a
 * wildcard `*name`.
 */
export const PATH_PATTERN = `^(?:/|(?:${SEGMENT}){1,${MAX_SEGMENTS}}|(?:${SEGMENT}){0,${MAX_SEGMENTS - 1}}/\\*${NAME})$`
