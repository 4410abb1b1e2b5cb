/**
 * The one error a bad configuration fails with, whichever module checks it.
 *
 * @since 0.2.0
 */
import { Schema } from "effect"

/**
 * A configuration value is out of its range or of the wrong type; `option` names it and `message` says what is
 * allowed.
 *
 * @since 0.2.0
 */
export class InvalidOption extends Schema.TaggedError<InvalidOption>()("InvalidOption", {
  option: Schema.String,
  message: Schema.String
}) {}
