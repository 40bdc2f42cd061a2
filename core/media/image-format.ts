export type ImageFormat = 'png' | 'jpeg' | 'webp' | 'gif' | 'avif';

const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
const JPEG_SIGNATURE = Buffer.from([0xff, 0xd8, 0xff]);
const AVIF_BRANDS: ReadonlySet<string> = new Set(['avif', 'avis']);

/**
 * The format the leading bytes declare, if it is one we accept. libvips would pick a loader by
 * itself, including SVG (an XML parser with external references) and TIFF; checking first keeps
 * every other loader away from client bytes. The decode still has to agree afterwards.
 */
export function sniffImageFormat(bytes: Buffer): ImageFormat | undefined {
  if (startsWith(bytes, PNG_SIGNATURE)) return 'png';
  if (startsWith(bytes, JPEG_SIGNATURE)) return 'jpeg';
  const head = bytes.subarray(0, 12).toString('latin1');
  if (head.startsWith('GIF87a') || head.startsWith('GIF89a')) return 'gif';
  if (head.startsWith('RIFF') && head.slice(8, 12) === 'WEBP') return 'webp';
  if (isAvif(bytes)) return 'avif';
  return undefined;
}

function startsWith(bytes: Buffer, signature: Buffer): boolean {
  return bytes.length >= signature.length && bytes.subarray(0, signature.length).equals(signature);
}

/** An ISO-BMFF `ftyp` box whose major or compatible brands name AVIF (HEIC is not decodable here). */
function isAvif(bytes: Buffer): boolean {
  if (bytes.length < 16 || bytes.toString('latin1', 4, 8) !== 'ftyp') return false;
  const boxEnd = Math.min(bytes.readUInt32BE(0), bytes.length);
  if (AVIF_BRANDS.has(bytes.toString('latin1', 8, 12))) return true;
  for (let offset = 16; offset + 4 <= boxEnd; offset += 4) {
    if (AVIF_BRANDS.has(bytes.toString('latin1', offset, offset + 4))) return true;
  }
  return false;
}
