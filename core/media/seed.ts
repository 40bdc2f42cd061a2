import { createHash } from 'node:crypto';

/**
 * What a seed looks like: the simulator's images and videos are painted from a scene derived
 * from a hash of the seed, so the same prompt and generation id always give the same pixels and
 * two different seeds visibly differ (other colours, another angle, the disc elsewhere).
 */
export interface Scene {
  from: Rgb;
  to: Rgb;
  disc: Rgb;
  /** Direction of the background gradient, radians. */
  angle: number;
  /** Disc centre as a fraction of the frame, and its radius as a fraction of the shorter side. */
  cx: number;
  cy: number;
  radius: number;
}

type Rgb = readonly [number, number, number];

export function sceneFromSeed(seed: string): Scene {
  const h = createHash('sha256').update(seed).digest();
  // Each field takes its own bytes of the digest so fields vary independently.
  const byte = (i: number): number => h[i] ?? 0;
  const unit = (i: number): number => (byte(i) * 256 + byte(i + 1)) / 65536;
  const hue = unit(0);
  return {
    from: hslToRgb(hue, 0.65, 0.55),
    // A hue a third to two thirds of the wheel away keeps the two ends of the gradient apart.
    to: hslToRgb(hue + 0.33 + unit(2) / 3, 0.7, 0.35),
    disc: hslToRgb(hue + 0.5, 0.8, 0.5 + unit(4) * 0.3),
    angle: unit(6) * 2 * Math.PI,
    cx: 0.25 + unit(8) * 0.5,
    cy: 0.25 + unit(10) * 0.5,
    radius: 0.12 + unit(12) * 0.15,
  };
}

/**
 * Paints the scene into a packed 8-bit RGB buffer, the raw input sharp expects. `phase` in [0, 1)
 * animates it for video: the disc travels a closed loop and the gradient turns, so phase 0 and 1
 * look the same and a clip of any length moves visibly from frame to frame.
 */
export function paintScene(scene: Scene, width: number, height: number, phase = 0): Buffer {
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

  let o = 0;
  for (let y = 0; y < height; y++) {
    const dy = y + 0.5 - cy;
    for (let x = 0; x < width; x++) {
      const t = (ux * x + uy * y - gMin) / gSpan;
      let red = r0 + (r1 - r0) * t;
      let green = g0 + (g1 - g0) * t;
      let blue = b0 + (b1 - b0) * t;
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
  }
  return out;
}

function hslToRgb(hue: number, s: number, l: number): Rgb {
  const h = hue - Math.floor(hue);
  const a = s * Math.min(l, 1 - l);
  const channel = (n: number): number => {
    const k = (n + h * 12) % 12;
    return Math.round(255 * (l - a * Math.max(-1, Math.min(k - 3, 9 - k, 1))));
  };
  return [channel(0), channel(8), channel(4)];
}
