import { AppError } from '../errors.js';
import { zipEntries, zipRead, type ZipEntry } from './zip.js';
import { unescapeXml } from './xlsx.js';

/**
 * Text of a DOCX or PPTX file (read_document, and the upload check), on the same capped ZIP
 * reader as XLSX (zip.ts: entry count and declared sizes checked before anything is inflated,
 * each entry inflated no further than it declares). Only the parts with text are read; a part
 * with a DOCTYPE is refused (no entity is expanded). Nothing embedded (macros, OLE objects,
 * external links) is ever opened.
 */
export interface DocumentText {
  /** Pages (PDF), slides (PPTX) or one section per document (DOCX, text files). */
  parts: { label: string; text: string }[];
}

const invalid = (why: string) => new AppError('ERR_DOCUMENT_INVALID', `the document cannot be read: ${why}`);

function entriesOf(buf: Buffer): Map<string, ZipEntry> {
  try {
    return zipEntries(buf);
  } catch (err) {
    if (err instanceof AppError && err.code === 'ERR_UPLOAD_ZIP_BOMB')
      throw new AppError('ERR_UPLOAD_ZIP_BOMB', err.message.replace('the workbook', 'the document'));
    if (err instanceof AppError) throw invalid(err.message.replace(/^the workbook cannot be read: /, ''));
    throw err;
  }
}

function xmlPart(buf: Buffer, entries: Map<string, ZipEntry>, name: string): string {
  const e = entries.get(name);
  if (!e) throw invalid(`${name} is missing`);
  let xml: string;
  try {
    xml = zipRead(buf, e).toString('utf8');
  } catch (err) {
    if (err instanceof AppError && err.code === 'ERR_UPLOAD_ZIP_BOMB') throw err;
    throw invalid(`${name} is corrupt`);
  }
  if (/<!DOCTYPE/i.test(xml.slice(0, 4096))) throw invalid(`${name} has a DOCTYPE`);
  return xml;
}

/** Paragraphs of a WordprocessingML or DrawingML body: runs' text, tabs and breaks; headings marked with #. */
function paragraphs(xml: string, para: string, run: string): string[] {
  const out: string[] = [];
  for (const p of xml.matchAll(new RegExp(`<${para}[\\s>][\\s\\S]*?</${para}>|<${para}/>`, 'g'))) {
    const body = p[0];
    let text = '';
    for (const m of body.matchAll(new RegExp(`<${run}(?:\\s[^>]*)?>([^<]*)</${run}>|<w:tab/>|<w:br/>|<a:br/>`, 'g'))) {
      text += m[1] !== undefined ? unescapeXml(m[1]) : m[0] === '<w:tab/>' ? '\t' : '\n';
    }
    const level =
      /<w:pStyle w:val="(?:Heading|heading )(\d)"/.exec(body)?.[1] ??
      (/<w:pStyle w:val="Title"/.test(body) ? '1' : undefined);
    out.push(level && text ? `${'#'.repeat(Number(level))} ${text}` : text);
  }
  return out;
}

/** A DOCX's text: one part, its paragraphs on lines of their own, headings as Markdown headings. */
export function docxText(buf: Buffer): DocumentText {
  const entries = entriesOf(buf);
  const xml = xmlPart(buf, entries, 'word/document.xml');
  return { parts: [{ label: 'document', text: paragraphs(xml, 'w:p', 'w:t').join('\n') }] };
}

/** A PPTX's text: one part per slide, in slide order (slideN.xml by N). */
export function pptxText(buf: Buffer): DocumentText {
  const entries = entriesOf(buf);
  if (!entries.has('ppt/presentation.xml')) throw invalid('ppt/presentation.xml is missing');
  const slides = [...entries.keys()]
    .map((n) => /^ppt\/slides\/slide(\d{1,4})\.xml$/.exec(n))
    .filter((m): m is RegExpExecArray => !!m)
    .sort((a, b) => Number(a[1]) - Number(b[1]));
  return {
    parts: slides.map((m, i) => ({
      label: `slide ${i + 1}`,
      text: paragraphs(xmlPart(buf, entries, m[0]), 'a:p', 'a:t').join('\n'),
    })),
  };
}

/** Whether a ZIP's central directory has the part a DOCX (word/document.xml) or PPTX (ppt/presentation.xml) must have. */
export function ooxmlHas(buf: Buffer, part: string): boolean {
  return entriesOf(buf).has(part);
}
