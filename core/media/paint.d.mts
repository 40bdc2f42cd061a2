/**
 * What a seed looks like: the simulator's images and videos are painted from a scene derived
 * from a hash of the seed (core/media/seed.ts).
 */
export interface Scene {
  from: readonly [number, number, number];
  to: readonly [number, number, number];
  disc: readonly [number, number, number];
  /** Direction of the background gradient, radians. */
  angle: number;
  /** Disc centre as a fraction of the frame, and its radius as a fraction of the shorter side. */
  cx: number;
  cy: number;
  radius: number;
}

export function paintScene(scene: Scene, width: number, height: number, phase?: number): Buffer;
