// Every succeeded generation's file, fetched the way a client does: the signed URL of the record
// (listed through group A), which must answer 200 with the right type and a real file; an
// upscale's PNG must be exactly `scale ×` its input.
import type { Check, GenerationFact } from './ledger-checks';
import { everyRow } from './ledger-checks';
import { TOKEN_PATTERN } from './workload';
import type { PlannedRequest } from './workload';

const CONTENT_TYPES: Record<string, string> = {
  image: 'image/png',
  upscale: 'image/png',
  video: 'video/webm',
  chat: 'text/plain',
};
const PNG_MAGIC = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
const EBML_MAGIC = Buffer.from([0x1a, 0x45, 0xdf, 0xa3]);

/** Every generation of each account through GET /api/v1/generations, as id → outputUrl. */
export async function listedOutputs(baseUrl: string, tokens: string[]): Promise<Map<string, string>> {
  const urls = new Map<string, string>();
  for (const token of tokens) {
    let cursor: string | null = null;
    do {
      const res = await fetch(`${baseUrl}/api/v1/generations?limit=100${cursor ? `&cursor=${cursor}` : ''}`, {
        headers: { authorization: `Bearer ${token}` },
      });
      if (res.status !== 200) throw new Error(`GET /api/v1/generations answered ${res.status}: ${await res.text()}`);
      const page = (await res.json()) as { data: { id: string; outputUrl: string }[]; next_cursor: string | null };
      for (const g of page.data) urls.set(g.id, g.outputUrl);
      cursor = page.next_cursor;
    } while (cursor);
  }
  return urls;
}

/** What is wrong with the file, if anything; `sizes` gets its length. */
async function checkFile(
  g: GenerationFact,
  url: string | undefined,
  plan: PlannedRequest | undefined,
  sizes: number[],
): Promise<string | undefined> {
  if (!url) return `${g.id}: no outputUrl`;
  const res = await fetch(url);
  const body = Buffer.from(await res.arrayBuffer());
  sizes.push(body.length);
  const type = res.headers.get('content-type') ?? '';
  if (res.status !== 200) return `${g.id}: HTTP ${res.status}`;
  if (!type.startsWith(CONTENT_TYPES[g.kind] ?? '?')) return `${g.id}: content type ${type}`;
  if (body.length === 0) return `${g.id}: empty`;
  if (g.kind === 'video' && !body.subarray(0, 4).equals(EBML_MAGIC)) return `${g.id}: not a WebM`;
  if (g.kind === 'image' || g.kind === 'upscale') {
    if (!body.subarray(0, 8).equals(PNG_MAGIC)) return `${g.id}: not a PNG`;
    // IHDR is the first chunk: width and height at bytes 16 and 20.
    const [width, height] = [body.readUInt32BE(16), body.readUInt32BE(20)];
    const want =
      g.kind === 'upscale'
        ? plan?.upscale && {
            width: plan.upscale.input.width * plan.upscale.scale,
            height: plan.upscale.input.height * plan.upscale.scale,
          }
        : { width: Number(g.params.width), height: Number(g.params.height) };
    if (!want) return `${g.id}: no planned input`;
    if (width !== want.width || height !== want.height)
      return `${g.id}: ${width}×${height}, expected ${want.width}×${want.height}`;
  }
  return undefined;
}

/** Fetches every succeeded output, a few at a time. */
export async function outputChecks(
  baseUrl: string,
  tokens: string[],
  facts: GenerationFact[],
  plans: PlannedRequest[],
): Promise<{ check: Check; bytes: number }> {
  const urls = await listedOutputs(baseUrl, tokens);
  const succeeded = facts.filter((g) => g.status === 'succeeded');
  const problems = new Map<string, string>();
  const sizes: number[] = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: 6 }, async () => {
      while (next < succeeded.length) {
        const g = succeeded[next++]!;
        const index = Number(TOKEN_PATTERN.exec(g.prompt)?.[1]);
        try {
          const problem = await checkFile(g, urls.get(g.id), plans[index], sizes);
          if (problem) problems.set(g.id, problem);
        } catch (err) {
          problems.set(g.id, `${g.id}: ${(err as Error).message}`);
        }
      }
    }),
  );
  const bytes = sizes.reduce((a, b) => a + b, 0);
  const unlisted = facts.filter((g) => !urls.has(g.id));
  const check = everyRow(
    'every succeeded output serves its file',
    succeeded,
    (g) => problems.get(g.id),
    `${succeeded.length} files, right type, non-empty, upscales exactly scale × input`,
  );
  if (unlisted.length > 0)
    return {
      check: {
        ...check,
        ok: false,
        detail: `${check.detail}; not listed by the API: ${unlisted
          .slice(0, 5)
          .map((g) => g.id)
          .join(', ')}`,
      },
      bytes,
    };
  return { check, bytes };
}
