/**
 * The check every numeric option of the library goes through, so that each is refused alike, naming the option and
 * its range.
 *
 * @internal
 */
import { InvalidOption } from "../InvalidOption.js"

/** Longest delay a Node timer takes (2^31 - 1 ms, about 24.8 days): a longer one would fire at once. */
export const MAX_TIMER_MILLIS = 2_147_483_647

/** A whole number from `least` to `most`, or the error naming the option and its allowed range. */
export const positiveInteger = (
  option: string,
  value: unknown,
  unit: string,
  { least = 1, most = Number.MAX_SAFE_INTEGER }: { readonly least?: number; readonly most?: number } = {}
): InvalidOption | undefined =>
  typeof value === "number" && Number.isSafeInteger(value) && value >= least && value <= most
    ? undefined
    : new InvalidOption({
      option,
      message: `${option} must be a whole number of ${unit} from ${least} to ${most} (got ${
        typeof value === "number" ? value : typeof value
      })`
    })
