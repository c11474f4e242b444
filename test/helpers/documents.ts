/**
 * Real documents made by tests: DOCX and PPTX (OOXML zips with the parts Word and PowerPoint
 * write for text) and PDF (a hand-built PDF 1.4 file with one Helvetica text object per line and
 * a correct xref table, which poppler's pdftotext reads).
 */
import { makeZip, type ZipInput } from './xlsx.js';

const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
const CT = (main: string, extra = '') =>
  `<?xml version="1.0" encoding="UTF-8" standalone="yes"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/><Default Extension="xml" ContentType="application/xml"/><Override PartName="${main}" ContentType="application/vnd.openxmlformats-officedocument.${main.includes('word') ? 'wordprocessingml.document.main' : 'presentationml.presentation.main'}+xml"/>${extra}</Types>`;
const RELS = (target: string) =>
  `<?xml version="1.0" encoding="UTF-8" standalone="yes"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="${target}"/></Relationships>`;

/** A DOCX of paragraphs; `{heading: n}` makes a Heading n paragraph. Extra parts (a bomb) may be added. */
export function makeDocx(paras: (string | { heading: number; text: string })[], extra: ZipInput[] = []): Buffer {
  const body = paras
    .map((p) =>
      typeof p === 'string'
        ? `<w:p><w:r><w:t xml:space="preserve">${esc(p)}</w:t></w:r></w:p>`
        : `<w:p><w:pPr><w:pStyle w:val="Heading${p.heading}"/></w:pPr><w:r><w:t>${esc(p.text)}</w:t></w:r></w:p>`,
    )
    .join('');
  const doc = `<?xml version="1.0" encoding="UTF-8" standalone="yes"?><w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body>${body}<w:sectPr/></w:body></w:document>`;
  return makeZip([
    { name: '[Content_Types].xml', data: Buffer.from(CT('/word/document.xml')) },
    { name: '_rels/.rels', data: Buffer.from(RELS('word/document.xml')) },
    { name: 'word/document.xml', data: Buffer.from(doc) },
    ...extra,
  ]);
}

/** A PPTX of slides, each a list of text paragraphs. */
export function makePptx(slides: string[][]): Buffer {
  const slide = (paras: string[]) =>
    `<?xml version="1.0" encoding="UTF-8" standalone="yes"?><p:sld xmlns:a="http://schemas.openxmlformats.org/drawingml/2006/main" xmlns:p="http://schemas.openxmlformats.org/presentationml/2006/main"><p:cSld><p:spTree><p:sp><p:txBody><a:bodyPr/>${paras.map((t) => `<a:p><a:r><a:t>${esc(t)}</a:t></a:r></a:p>`).join('')}</p:txBody></p:sp></p:spTree></p:cSld></p:sld>`;
  return makeZip([
    { name: '[Content_Types].xml', data: Buffer.from(CT('/ppt/presentation.xml')) },
    { name: '_rels/.rels', data: Buffer.from(RELS('ppt/presentation.xml')) },
    {
      name: 'ppt/presentation.xml',
      data: Buffer.from(
        '<?xml version="1.0" encoding="UTF-8"?><p:presentation xmlns:p="http://schemas.openxmlformats.org/presentationml/2006/main"/>',
      ),
    },
    // Slide 10 before slide 2 in the archive: the reader orders by number.
    ...slides.map((s, i) => ({ name: `ppt/slides/slide${i + 1}.xml`, data: Buffer.from(slide(s)) })).reverse(),
  ]);
}

/** A PDF whose pages each hold the given lines (ASCII), drawn top-down in 12 pt Helvetica. */
export function makePdf(pages: string[][]): Buffer {
  const objs: string[] = [];
  const add = (s: string) => objs.push(s); // its object number
  add('<< /Type /Catalog /Pages 2 0 R >>');
  add('PAGES');
  add('<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>');
  const kids: number[] = [];
  for (const lines of pages) {
    const content = lines
      .map((l, i) => `BT /F1 12 Tf 72 ${740 - i * 16} Td (${l.replace(/([\\()])/g, '\\$1')}) Tj ET`)
      .join('\n');
    const c = add(`<< /Length ${Buffer.byteLength(content)} >>\nstream\n${content}\nendstream`);
    kids.push(
      add(
        `<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 3 0 R >> >> /Contents ${c} 0 R >>`,
      ),
    );
  }
  objs[1] = `<< /Type /Pages /Kids [${kids.map((k) => `${k} 0 R`).join(' ')}] /Count ${kids.length} >>`;
  let out = '%PDF-1.4\n';
  const offsets: number[] = [];
  objs.forEach((o, i) => {
    offsets.push(Buffer.byteLength(out));
    out += `${i + 1} 0 obj\n${o}\nendobj\n`;
  });
  const xref = Buffer.byteLength(out);
  out += `xref\n0 ${objs.length + 1}\n0000000000 65535 f \n${offsets.map((o) => `${String(o).padStart(10, '0')} 00000 n \n`).join('')}`;
  out += `trailer\n<< /Size ${objs.length + 1} /Root 1 0 R >>\nstartxref\n${xref}\n%%EOF\n`;
  return Buffer.from(out, 'latin1');
}
