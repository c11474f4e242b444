import { inflateRawSync } from 'node:zlib';
import { AppError } from '../errors.js';

/**
 * A small ZIP reader for XLSX workbooks, on node:zlib only (no dependency: the sandbox image and
 * the host share it). Zip bombs are refused before anything is inflated: the central directory's
 * entry count and declared sizes are checked against the caps, and each entry is inflated with
 * `maxOutputLength` set to its declared size, so an entry that lies about its size stops at it
 * (zlib throws a RangeError) instead of filling memory. Encrypted entries and ZIP64 are refused.
 */
export const ZIP_MAX_ENTRIES = 1000;
/** Largest inflated size of one entry. */
export const ZIP_MAX_ENTRY_BYTES = 32 * 1024 * 1024;
/** Largest inflated size of all entries together. */
export const ZIP_MAX_TOTAL_BYTES = 64 * 1024 * 1024;

export interface ZipEntry {
  name: string;
  method: number;
  compressedSize: number;
  size: number;
  localOffset: number;
}

const bomb = (why: string) =>
  new AppError('ERR_UPLOAD_ZIP_BOMB', `the workbook is refused: ${why} (a zip bomb, or too big to read)`);
const invalid = (why: string) => new AppError('ERR_UPLOAD_XLSX_INVALID', `the workbook cannot be read: ${why}`);

function findEnd(buf: Buffer): number {
  const from = Math.max(0, buf.length - 22 - 0xffff);
  for (let i = buf.length - 22; i >= from; i--) if (buf.readUInt32LE(i) === 0x06054b50) return i;
  throw invalid('not a ZIP file');
}

/** The central directory, checked against the caps (nothing inflated yet). */
export function zipEntries(buf: Buffer): Map<string, ZipEntry> {
  if (buf.length < 22) throw invalid('not a ZIP file');
  const end = findEnd(buf);
  const count = buf.readUInt16LE(end + 10);
  const cdOffset = buf.readUInt32LE(end + 16);
  if (count === 0xffff || cdOffset === 0xffffffff) throw invalid('ZIP64 archives are not read');
  if (count > ZIP_MAX_ENTRIES) throw bomb(`${count} entries (at most ${ZIP_MAX_ENTRIES})`);
  const entries = new Map<string, ZipEntry>();
  let p = cdOffset;
  let total = 0;
  for (let i = 0; i < count; i++) {
    if (p + 46 > buf.length || buf.readUInt32LE(p) !== 0x02014b50) throw invalid('a broken central directory');
    const flags = buf.readUInt16LE(p + 8);
    const method = buf.readUInt16LE(p + 10);
    const compressedSize = buf.readUInt32LE(p + 20);
    const size = buf.readUInt32LE(p + 24);
    const nameLen = buf.readUInt16LE(p + 28);
    const skip = nameLen + buf.readUInt16LE(p + 30) + buf.readUInt16LE(p + 32);
    const localOffset = buf.readUInt32LE(p + 42);
    const name = buf.subarray(p + 46, p + 46 + nameLen).toString('utf8');
    p += 46 + skip;
    if (flags & 1) throw invalid('the workbook is encrypted');
    if (size === 0xffffffff || compressedSize === 0xffffffff || localOffset === 0xffffffff)
      throw invalid('ZIP64 archives are not read');
    if (size > ZIP_MAX_ENTRY_BYTES) throw bomb(`${name} unpacks to ${size} bytes (at most ${ZIP_MAX_ENTRY_BYTES})`);
    total += size;
    if (total > ZIP_MAX_TOTAL_BYTES) throw bomb(`the entries unpack to more than ${ZIP_MAX_TOTAL_BYTES} bytes`);
    if (method !== 0 && method !== 8) throw invalid(`${name} uses an unknown compression (${method})`);
    entries.set(name, { name, method, compressedSize, size, localOffset });
  }
  return entries;
}

/** One entry's bytes, never more than its declared size. */
export function zipRead(buf: Buffer, e: ZipEntry): Buffer {
  const p = e.localOffset;
  if (p + 30 > buf.length || buf.readUInt32LE(p) !== 0x04034b50) throw invalid(`a broken entry (${e.name})`);
  const start = p + 30 + buf.readUInt16LE(p + 26) + buf.readUInt16LE(p + 28);
  const data = buf.subarray(start, start + e.compressedSize);
  if (data.length !== e.compressedSize) throw invalid(`a truncated entry (${e.name})`);
  let out: Buffer;
  if (e.method === 0) out = data;
  else {
    try {
      out = inflateRawSync(data, { maxOutputLength: Math.max(1, e.size) });
    } catch (err) {
      if (err instanceof RangeError) throw bomb(`${e.name} unpacks to more than it declares`);
      throw invalid(`a corrupt entry (${e.name})`);
    }
  }
  if (out.length !== e.size) throw invalid(`${e.name} is not the size it declares`);
  return out;
}
