import { createHash } from 'node:crypto';
import type { Scene } from './paint.mjs';

// The painter itself is plain JavaScript, so that render threads load it without a TypeScript
// loader (core/media/paint-pool.ts).
export type { Scene } from './paint.mjs';

type Rgb = readonly [number, number, number];

/**
 * The scene of a seed: the same prompt and generation id always give the same pixels, and two
 * different seeds visibly differ (other colours, another angle, the disc elsewhere).
 */
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

function hslToRgb(hue: number, s: number, l: number): Rgb {
  const h = hue - Math.floor(hue);
  const a = s * Math.min(l, 1 - l);
  const channel = (n: number): number => {
    const k = (n + h * 12) % 12;
    return Math.round(255 * (l - a * Math.max(-1, Math.min(k - 3, 9 - k, 1))));
  };
  return [channel(0), channel(8), channel(4)];
}
