/**
 * MurmurHash3, x86 32-bit (Austin Appleby's `MurmurHash3_x86_32`), over the UTF-8 bytes of a string, encoded on the
 * fly: a split's bucket is computed on every request it serves, and this costs no allocation (docs/router.md says why
 * it is the project's own, with the measurement).
 *
 * @internal
 */

const C1 = 0xcc9e2d51
const C2 = 0x1b873593

// The state of one hash: single-threaded and never re-entered, so module variables spare a closure per call.
let h = 0
let k = 0
let shift = 0
let length = 0

const mixBlock = (): void => {
  let k1 = Math.imul(k, C1)
  k1 = (k1 << 15) | (k1 >>> 17)
  h ^= Math.imul(k1, C2)
  h = (h << 13) | (h >>> 19)
  h = (Math.imul(h, 5) + 0xe6546b64) | 0
  k = 0
  shift = 0
}

// One byte, little-endian into the current 4-byte block.
const push = (byte: number): void => {
  k |= byte << shift
  shift += 8
  length++
  if (shift === 32) mixBlock()
}

/**
 * The 32-bit hash (unsigned) of `text`'s UTF-8 bytes with `seed`. A lone surrogate is encoded as U+FFFD, as
 * `TextEncoder` encodes it.
 */
export const hash = (text: string, seed = 0): number => {
  h = seed | 0
  k = 0
  shift = 0
  length = 0
  for (let i = 0; i < text.length; i++) {
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
  if (shift > 0) {
    let k1 = Math.imul(k, C1)
    k1 = (k1 << 15) | (k1 >>> 17)
    h ^= Math.imul(k1, C2)
  }
  h ^= length
  h ^= h >>> 16
  h = Math.imul(h, 0x85ebca6b)
  h ^= h >>> 13
  h = Math.imul(h, 0xc2b2ae35)
  h ^= h >>> 16
  return h >>> 0
}
