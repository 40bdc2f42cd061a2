/**
 * Why an input image was refused, one class each. All are the client's to fix (a 400, never
 * retried); the class name doubles as the Temporal failure type.
 */
export abstract class ImageInputError extends Error {
  readonly retryable = false;

  constructor(message: string) {
    super(message);
    this.name = new.target.name;
  }
}

/** Not PNG, JPEG, WebP, GIF or AVIF, whatever its name or Content-Type claimed. */
export class UnsupportedImageError extends ImageInputError {}

/** Starts like an accepted format but does not decode: truncated or damaged. */
export class CorruptImageError extends ImageInputError {}

/** Too many bytes, too many pixels (a decompression bomb among them), or a side too long. */
export class ImageTooLargeError extends ImageInputError {}
