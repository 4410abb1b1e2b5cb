/**
 * MurmurHash3, x86 32-bit (Austin Appleby's `MurmurHash3_x86_32`), over the UTF-8 bytes of strings, encoded on the
 * fly: a split's bucket is computed on every request it serves, and this costs no allocation (docs/router.md says why
 * it is the project's own, with the measurement). The parts of one input may be fed one after another (a split hashes
 * `<group>:<key>` without building the string), and the state after a prefix kept (a split hashes its
 * `<group>:` once per route version, then only each request's key).
 *
 * @internal
 */

const C1 = 0xcc9e2d51
const C2 = 0x1b873593

/** The state of a hash part way: [h, k (the block so far), shift (bits in it), length]. */
export type State = Int32Array

// The hash being computed. Single-threaded and never re-entered; a typed array, since module `let`s cost a hole check
// on every access.
const state: State = new Int32Array(4)

const mixK = (k: number): number => {
  const k1 = Math.imul(k, C1)
  return Math.imul((k1 << 15) | (k1 >>> 17), C2)
}

const mixH = (h: number, k: number): number => {
  h ^= mixK(k)
  h = (h << 13) | (h >>> 19)
  return (Math.imul(h, 5) + 0xe6546b64) | 0
}

// One byte, little-endian into the current 4-byte block.
const push = (byte: number): void => {
  const shift = state[2]!
  const k = state[1]! | (byte << shift)
  state[3]!++
  if (shift === 24) {
    state[0] = mixH(state[0]!, k)
    state[1] = 0
    state[2] = 0
  } else {
    state[1] = k
    state[2] = shift + 8
  }
}

/** Starts a hash with `seed`. */
export const start = (seed: number): void => {
  state[0] = seed | 0
  state[1] = 0
  state[2] = 0
  state[3] = 0
}

/** A copy of the state so far, for `hashAfter`. */
export const save = (): State => state.slice()

/**
 * Feeds the UTF-8 bytes of `text` (from its character `i` on); a lone surrogate is encoded as U+FFFD, as
 * `TextEncoder` encodes it.
 */
export const feed = (text: string, i = 0): void => {
  for (; i < text.length; i++) {
    let c = text.charCodeAt(i)
    if (c < 0x80) {
      push(c)
      continue
    }
    if (c < 0x800) {
      push(0xc0 | (c >> 6))
      push(0x80 | (c & 0x3f))
      continue
    }
    if (c >= 0xd800 && c <= 0xdfff) {
      const next = i + 1 < text.length ? text.charCodeAt(i + 1) : 0
      if (c <= 0xdbff && next >= 0xdc00 && next <= 0xdfff) {
        c = 0x10000 + ((c - 0xd800) << 10) + (next - 0xdc00)
        i++
        push(0xf0 | (c >> 18))
        push(0x80 | ((c >> 12) & 0x3f))
        push(0x80 | ((c >> 6) & 0x3f))
        push(0x80 | (c & 0x3f))
        continue
      }
      c = 0xfffd
    }
    push(0xe0 | (c >> 12))
    push(0x80 | ((c >> 6) & 0x3f))
    push(0x80 | (c & 0x3f))
  }
}

/**
 * The hash of a `save`d state followed by `text`'s UTF-8 bytes: as if fed after it, its ASCII in
 * locals from end to end (a split's key, on every request).
 */
export const hashAfter = (saved: State, text: string): number => {
  let h = saved[0]!
  let k = saved[1]!
  let shift = saved[2]!
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (c >= 0x80) {
      state[0] = h
      state[1] = k
      state[2] = shift
      state[3] = saved[3]! + i
      feed(text, i)
      return finish()
    }
    k |= c << shift
    if (shift === 24) {
      h = mixH(h, k)
      k = 0
      shift = 0
    } else shift += 8
  }
  return fmix(h, k, shift, saved[3]! + text.length)
}

/** Feeds one byte (an ASCII separator). */
export const feedByte: (byte: number) => void = push

/** The hash of everything fed since `start`, unsigned. */
export const finish = (): number => fmix(state[0]!, state[1]!, state[2]!, state[3]!)

// The tail block, the length, and the final mix.
const fmix = (h: number, k: number, shift: number, length: number): number => {
  if (shift > 0) h ^= mixK(k)
  h ^= length
  h ^= h >>> 16
  h = Math.imul(h, 0x85ebca6b)
  h ^= h >>> 13
  h = Math.imul(h, 0xc2b2ae35)
  h ^= h >>> 16
  return h >>> 0
}

/** The 32-bit hash (unsigned) of `text`'s UTF-8 bytes with `seed`. */
export const hash = (text: string, seed = 0): number => {
  start(seed)
  feed(text)
  return finish()
}
