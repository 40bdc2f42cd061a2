// The simulator's painter, in plain JavaScript so that the render threads (paint-thread.mjs) load
// it without a TypeScript loader; core/media/seed.ts re-exports it with its types (paint.d.mts).
import { Buffer } from 'node:buffer';

/**
 * Paints the scene into a packed 8-bit RGB buffer, the raw input sharp expects. `phase` in [0, 1)
 * animates it for video: the disc travels a closed loop and the gradient turns, so phase 0 and 1
 * look the same and a clip of any length moves visibly from frame to frame.
 *
 * @param {import('./paint.d.mts').Scene} scene
 * @param {number} width
 * @param {number} height
 * @param {number} [phase]
 * @returns {Buffer}
 */
export function paintScene(scene, width, height, phase = 0) {
  const out = Buffer.allocUnsafe(width * height * 3);
  const turn = 2 * Math.PI * phase;
  const angle = scene.angle + turn / 4;
  const ux = Math.cos(angle) / width;
  const uy = Math.sin(angle) / height;
  // Offsets that map the gradient's projection onto [0, 1] whatever its direction.
  const gMin = Math.min(0, ux * width) + Math.min(0, uy * height);
  const gSpan = Math.abs(ux * width) + Math.abs(uy * height) || 1;

  const short = Math.min(width, height);
  const r = scene.radius * short;
  const cx = (scene.cx + 0.2 * Math.sin(turn)) * width;
  const cy = (scene.cy + 0.2 * Math.sin(2 * turn)) * height;
  const [r0, g0, b0] = scene.from;
  const [r1, g1, b1] = scene.to;
  const [rd, gd, bd] = scene.disc;
  const dr = r1 - r0;
  const dg = g1 - g0;
  const db = b1 - b0;
  const kx = ux / gSpan;
  // The disc, with its one-pixel soft edge, only touches this box: elsewhere its coverage is 0, so
  // the square root is taken for a few percent of the pixels instead of all of them.
  const bx0 = Math.max(0, Math.floor(cx - r - 1));
  const bx1 = Math.min(width, Math.ceil(cx + r + 1));
  const by0 = Math.max(0, Math.floor(cy - r - 1));
  const by1 = Math.min(height, Math.ceil(cy + r + 1));

  for (let y = 0; y < height; y++) {
    const t0 = (uy * y - gMin) / gSpan;
    let o = y * width * 3;
    const discRow = y >= by0 && y < by1 && bx0 < bx1;
    const plainEnd = discRow ? bx0 : width;
    for (let x = 0; x < plainEnd; x++) {
      const t = t0 + kx * x;
      out[o++] = r0 + dr * t;
      out[o++] = g0 + dg * t;
      out[o++] = b0 + db * t;
    }
    if (!discRow) continue;
    const dy = y + 0.5 - cy;
    for (let x = bx0; x < bx1; x++) {
      const t = t0 + kx * x;
      let red = r0 + dr * t;
      let green = g0 + dg * t;
      let blue = b0 + db * t;
      const dx = x + 0.5 - cx;
      // Coverage of the disc with a one-pixel soft edge, so it does not alias when it moves.
      const cover = Math.min(1, Math.max(0, r - Math.sqrt(dx * dx + dy * dy) + 0.5));
      if (cover > 0) {
        red += (rd - red) * cover;
        green += (gd - green) * cover;
        blue += (bd - blue) * cover;
      }
      out[o++] = red;
      out[o++] = green;
      out[o++] = blue;
    }
    for (let x = bx1; x < width; x++) {
      const t = t0 + kx * x;
      out[o++] = r0 + dr * t;
      out[o++] = g0 + dg * t;
      out[o++] = b0 + db * t;
    }
  }
  return out;
}
