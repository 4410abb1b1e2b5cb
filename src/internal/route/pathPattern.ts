/**
 * The path grammar as one JSON Schema `pattern` (ECMA-262, no lookaround, so every JSON Schema
 * validator can run it). It says everything `parsePath` checks except two things a regular expression cannot say
 * well: the 2048-character bound (the schema's `maxLength`) and a parameter name used twice.
 *
 * @internal
 */
import { MAX_SEGMENTS } from "./grammar.js"

// A percent-escape in uppercase hex of any byte but a letter, digit or "- . _ ~" (those are written plainly).
const ESCAPE = "%(?:[0189A-F][0-9A-F]|2[0-9A-CF]|3[A-F]|40|5[B-E]|60|7[B-DF])"
// One unit of a static segment other than ".", then any unit.
const NOT_DOT = `(?:[-A-Za-z0-9_~!$&'+,;=@]|${ESCAPE})`
const UNIT = `(?:[-A-Za-z0-9._~!$&'+,;=@]|${ESCAPE})`
// A static segment that is not "." or "..": some unit other than "." after any dots, or three dots or more.
const STATIC = `\\.*${NOT_DOT}${UNIT}*|\\.{3,}`
const PARAM = ":[A-Za-z_][A-Za-z0-9_]{0,63}"

/**
 * `/` alone, or 1–64 `/segment`, each a parameter `:name` or a static segment.
 */
export const PATH_PATTERN = `^(?:/|(?:/(?:${PARAM}|${STATIC})){1,${MAX_SEGMENTS}})$`
