// The upscale inputs: a few small images of odd sizes on a loopback HTTP server, which the API
// fetches at submit (development mode allows loopback). Odd sizes make "exactly scale × the
// input" a real check.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import sharp from 'sharp';

export interface InputImage {
  url: string;
  width: number;
  height: number;
}

const SIZES: [number, number, 'png' | 'jpeg'][] = [
  [64, 48, 'png'],
  [97, 61, 'png'],
  [150, 113, 'jpeg'],
  [33, 200, 'png'],
];

export async function startInputServer(): Promise<{ images: InputImage[]; close(): Promise<void> }> {
  const files = new Map<string, { data: Buffer; type: string }>();
  for (const [width, height, format] of SIZES) {
    const image = sharp({
      create: { width, height, channels: 3, background: { r: (width * 7) % 256, g: (height * 3) % 256, b: 128 } },
    });
    const data = await (format === 'png' ? image.png() : image.jpeg()).toBuffer();
    files.set(`/input/${width}x${height}.${format === 'png' ? 'png' : 'jpg'}`, { data, type: `image/${format}` });
  }
  const server = createServer((req, res) => {
    const file = files.get(req.url ?? '');
    if (!file) {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(200, { 'content-type': file.type, 'content-length': file.data.length }).end(file.data);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const images = [...files.keys()].map((path) => {
    const [width, height] = path.slice('/input/'.length).split('.')[0]!.split('x').map(Number) as [number, number];
    return { url: `http://127.0.0.1:${port}${path}`, width, height };
  });
  return {
    images,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
