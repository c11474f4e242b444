import t from 'tap';
import { spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { tempDir } from '../helpers/app.js';
import { errorCode, startMcp } from '../helpers/mcp.js';
import { makeDocx, makePdf, makePptx } from '../helpers/documents.js';
import { makeZip } from '../helpers/xlsx.js';

/**
 * read_document in the real tools MCP server: DOCX (headings), PPTX (slides in number order),
 * TXT, Markdown and JSON uploads as text with their structure; the cut marker and pages; a zip
 * bomb, a DOCTYPE, a broken file and a wrong type refused with their codes. PDFs are compared
 * with pdftotext when the host has it (always in test/docker/run-python.test.ts's image).
 */
const text = (r: CallToolResult) => r.content.map((c) => (c.type === 'text' ? c.text : '')).join('');
const hasPdftotext = spawnSync('pdftotext', ['-v'], { stdio: 'ignore' }).status === 0;

t.test('read_document reads uploaded documents with their structure and refuses hostile ones', async (t) => {
  const ws = tempDir(t);
  const attachments = join(ws, '.agent-attachments');
  mkdirSync(attachments);
  const up = join(ws, 'uploads');
  mkdirSync(up);
  writeFileSync(
    join(up, 'memo.docx'),
    makeDocx([
      { heading: 1, text: 'Contract summary' },
      'Parties: ACME & Co <ltd>.',
      { heading: 2, text: 'Term' },
      'Twelve months.',
    ]),
  );
  const slides = Array.from({ length: 11 }, (_, i) => [`Slide title ${i + 1}`, `point ${i + 1}`]);
  writeFileSync(join(up, 'deck.pptx'), makePptx(slides));
  writeFileSync(join(up, 'notes.txt'), 'line one\nline two\n');
  writeFileSync(join(up, 'readme.md'), '# Title\n\nSome *text*.\n');
  writeFileSync(join(up, 'data.json'), '{"a": [1, 2]}');
  writeFileSync(join(up, 'long.txt'), 'x'.repeat(5000));
  const zeros = Buffer.alloc(40 * 1024 * 1024);
  writeFileSync(
    join(up, 'bomb.docx'),
    makeDocx(
      ['a'],
      [
        { name: 'x1', data: zeros },
        { name: 'x2', data: zeros },
      ],
    ),
  );
  writeFileSync(
    join(up, 'liar.docx'),
    makeZip([{ name: 'word/document.xml', data: `<w:document>${'y'.repeat(100_000)}</w:document>`, declaredSize: 10 }]),
  );
  writeFileSync(
    join(up, 'doctype.docx'),
    makeZip([
      {
        name: 'word/document.xml',
        data: '<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol">]><w:document xmlns:w="x"><w:body><w:p><w:r><w:t>&lol;</w:t></w:r></w:p></w:body></w:document>',
      },
    ]),
  );
  writeFileSync(join(up, 'broken.docx'), Buffer.from('PK\u0003\u0004 not really a zip'));
  writeFileSync(join(up, 'fake.pdf'), 'hello');
  writeFileSync(join(up, 'sales.csv'), 'a,b\n');
  const tools = await startMcp(t, 'tools', { AGENT_ATTACHMENTS_DIR: attachments });
  const read = async (args: Record<string, unknown>) => (await tools.call('read_document', args)) as CallToolResult;

  const docx = await read({ name: 'memo.docx' });
  t.equal(errorCode(docx), undefined, text(docx));
  t.equal(
    (docx.structuredContent as { text: string }).text,
    '# Contract summary\nParties: ACME & Co <ltd>.\n## Term\nTwelve months.',
  );

  const pptx = (await read({ name: 'uploads/deck.pptx' })).structuredContent as { text: string; parts: number };
  t.equal(pptx.parts, 11);
  t.match(
    pptx.text,
    /^=== slide 1 ===\nSlide title 1\npoint 1\n\n=== slide 2 ===\nSlide title 2/,
    'slides in number order (slide10 is not second)',
  );
  t.match(pptx.text, /=== slide 11 ===\nSlide title 11\npoint 11$/);
  t.same((await read({ name: 'deck.pptx', pages: '10-11' })).structuredContent, {
    name: 'deck.pptx',
    parts: 11,
    shown: '10-11',
    truncated: false,
    text: '=== slide 10 ===\nSlide title 10\npoint 10\n\n=== slide 11 ===\nSlide title 11\npoint 11',
  });
  t.equal(errorCode(await read({ name: 'deck.pptx', pages: '12' })), 'ERR_TOOL_INVALID_INPUT');

  t.equal((await read({ name: 'notes.txt' })).structuredContent?.text, 'line one\nline two');
  t.equal((await read({ name: 'readme.md' })).structuredContent?.text, '# Title\n\nSome *text*.');
  t.equal((await read({ name: 'data.json' })).structuredContent?.text, '{"a": [1, 2]}');
  const long = (await read({ name: 'long.txt', max_chars: 1000 })).structuredContent as {
    text: string;
    truncated: boolean;
  };
  t.equal(long.truncated, true);
  t.match(long.text, /^x{1000}\n\n\[… cut here: 4000 more characters/, 'cut with a marker that says how much is left');

  t.equal(errorCode(await read({ name: 'bomb.docx' })), 'ERR_UPLOAD_ZIP_BOMB');
  t.equal(
    errorCode(await read({ name: 'liar.docx' })),
    'ERR_UPLOAD_ZIP_BOMB',
    'an entry larger than it declares stops at its declared size',
  );
  t.equal(errorCode(await read({ name: 'broken.docx' })), 'ERR_DOCUMENT_INVALID');
  t.equal(errorCode(await read({ name: 'fake.pdf' })), 'ERR_UPLOAD_MISMATCH');
  t.equal(errorCode(await read({ name: 'sales.csv' })), 'ERR_UPLOAD_TYPE', 'tables are read_file_table’s');
  const missing = await read({ name: '../../etc/passwd' });
  t.equal(errorCode(missing), 'ERR_UPLOAD_NOT_FOUND');
  t.match(text(missing), /the uploaded documents are: .*memo\.docx/);

  t.equal(errorCode(await read({ name: 'doctype.docx' })), 'ERR_DOCUMENT_INVALID', 'a part with a DOCTYPE');

  t.test(
    'PDF text is what pdftotext gives, page by page',
    {
      skip:
        hasPdftotext || process.env.CI === 'true'
          ? false
          : 'pdftotext (poppler-utils) is not installed on this host; the Docker test covers it',
    },
    async (t) => {
      const pages = [
        ['Quarterly report', 'Revenue grew 12 percent (Q3)'],
        ['Second page', 'Costs fell'],
        ['Third page'],
      ];
      const file = join(up, 'report.pdf');
      writeFileSync(file, makePdf(pages));
      const ref = spawnSync('pdftotext', ['-enc', 'UTF-8', file, '-'], { encoding: 'utf8' }).stdout.split('\f');
      const r = (await read({ name: 'report.pdf' })).structuredContent as { text: string; parts: number };
      t.equal(r.parts, 3);
      t.equal(
        r.text,
        ref
          .slice(0, 3)
          .map((p, i) => `=== page ${i + 1} ===\n${p.trimEnd()}`)
          .join('\n\n'),
      );
      t.match(r.text, /Revenue grew 12 percent \(Q3\)/);
    },
  );
});
