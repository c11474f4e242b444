/**
 * run_python in a real sandbox (runc; listed for runsc in test/run.ts): an uploaded CSV of
 * 100,000 rows analysed with pandas by the scripted model's code, the answer's numbers checked
 * against a reference computed here in JS, the matplotlib PNG written under out/; state kept
 * between calls and lost (and said so) after a `docker kill`; the hostile table, each case ending
 * with its error while the chat and the sandbox go on.
 */
import t from 'tap';
import * as openaiModel from '../../emulator/model-openai.js';
import type { ModelStep } from '../../emulator/model-openai.js';
import { streamTurn } from '../helpers/chat.js';
import { dockerOrSkip, ensureTestImage, execIn, GLIBC_TUNABLE_LINES, SANDBOX_RUNTIME } from './helpers.js';
import { chatRig, MODEL_KEY } from './chat-e2e-rig.js';
import { makeDocx, makePdf } from '../helpers/documents.js';

const REGIONS = ['North', 'South', 'East', 'West', 'Central'];
const QUARTERS = ['2026Q1', '2026Q2', '2026Q3', '2026Q4'];

/** 100,000 rows of region,quarter,revenue (whole numbers: exact sums in both languages), seeded. */
function makeCsv(): string {
  let seed = 12345;
  const rnd = () => ((seed = (seed * 1103515245 + 12345) % 2147483648), seed / 2147483648);
  const lines = ['region,quarter,revenue'];
  for (let i = 0; i < 100_000; i++) {
    const r = Math.floor(rnd() * REGIONS.length);
    const q = Math.floor(rnd() * QUARTERS.length);
    // Each region trends differently, so one clearly grows fastest.
    const revenue = Math.round(100 + rnd() * 900 * (1 + r * 0.1 * q));
    lines.push(`${REGIONS[r]},${QUARTERS[q]},${revenue}`);
  }
  return lines.join('\n') + '\n';
}

/** The largest quarter-over-quarter growth of a region's total revenue, computed in JS. */
function reference(csv: string): { region: string; quarter: string; growth: number } {
  const sums = new Map<string, number>();
  for (const line of csv.trim().split('\n').slice(1)) {
    const [r, q, v] = line.split(',');
    sums.set(`${r}|${q}`, (sums.get(`${r}|${q}`) ?? 0) + Number(v));
  }
  let best = { region: '', quarter: '', growth: -Infinity };
  for (const r of REGIONS) {
    for (let i = 1; i < QUARTERS.length; i++) {
      const g = sums.get(`${r}|${QUARTERS[i]}`)! / sums.get(`${r}|${QUARTERS[i - 1]}`)! - 1;
      if (g > best.growth) best = { region: r, quarter: QUARTERS[i], growth: g };
    }
  }
  return best;
}

const ANALYSIS = `
df = pd.read_csv("uploads/sales.csv")
t = df.groupby(["region", "quarter"])["revenue"].sum().unstack("quarter").sort_index(axis=1)
g = t.pct_change(axis=1).iloc[:, 1:]
region, quarter = g.stack().idxmax()
import json, os
print(json.dumps({"rows": len(df), "region": region, "quarter": quarter, "growth": float(g.loc[region, quarter])}))
os.makedirs("out", exist_ok=True)
ax = g.T.plot(kind="bar", title="Quarter-over-quarter growth")
ax.figure.savefig("out/growth.png")
`;

/** The last tool result the model was sent, from the request body. */
const lastToolResult = (body: any): string =>
  String([...body.messages].reverse().find((m: any) => m.role === 'tool')?.content ?? '');

const docker = await dockerOrSkip(t);
if (docker) {
  const image = await ensureTestImage(docker);
  const { start } = chatRig(docker, image);

  t.test('run_python: pandas on an uploaded CSV, state, a lost sandbox, the hostile table', async (t) => {
    // Each turn: the model calls the tools of `calls`, then answers from the last result.
    const plan: (ModelStep | ((body: any) => ModelStep))[] = [];
    const model = await openaiModel.start({
      apiKey: MODEL_KEY,
      respond: (body) => {
        const s = plan.shift();
        return typeof s === 'function' ? s(body) : (s ?? { kind: 'reply', text: 'ok' });
      },
    });
    t.teardown(() => model.close());
    const { d, c } = await start(t, {
      AIRLOCK_MODEL_PROVIDER: 'openai',
      AIRLOCK_MODEL: 'gpt-e2e',
      AIRLOCK_MODEL_BASE_URL: model.url,
      AIRLOCK_MODEL_API_KEY: MODEL_KEY,
      AIRLOCK_PYTHON_WALL_S: '20',
      AIRLOCK_PYTHON_OUTPUT_KB: '256',
      AIRLOCK_MAX_STEPS: '20',
    });
    let n = 0;
    // One turn: the model calls run_python with each of `calls`, then answers (from the last result when `answer` is given).
    const turn = async (
      message: string,
      calls: (string | { name: string; arguments: Record<string, unknown> })[],
      sessionId?: string,
      answer?: (lastResult: string) => string,
    ) => {
      plan.push({
        kind: 'reply',
        tool_calls: calls.map((call) => ({
          ...(typeof call === 'string' ? { name: 'run_python', arguments: { code: call } } : call),
          id: `call_${++n}`,
        })),
      });
      plan.push((body) => ({ kind: 'reply', text: answer ? answer(lastToolResult(body)) : 'done' }));
      const r = await streamTurn(c, { message, ...(sessionId ? { session_id: sessionId } : {}) });
      t.equal(r.status, 200);
      return r;
    };

    const csv = makeCsv();
    const up = await fetch(`${c.base}/api/chat/files`, {
      method: 'POST',
      headers: {
        cookie: c.cookieHeader(),
        'x-csrf-token': c.csrf!,
        'content-type': 'application/octet-stream',
        'x-file-name': 'sales.csv',
      },
      body: csv,
    });
    t.equal(up.status, 201, 'the 100,000-row CSV is uploaded');
    const ref = reference(csv);

    const first = await turn('which region grew fastest quarter over quarter?', [ANALYSIS], undefined, (result) => {
      const r = JSON.parse((JSON.parse(result) as { stdout: string }).stdout.trim().split('\n').at(-1)!) as {
        region: string;
        quarter: string;
        growth: number;
      };
      return `${r.region} grew fastest: ${(r.growth * 100).toFixed(4)}% in ${r.quarter}.`;
    });
    const sid = first.events.at(-1).session_id as string;
    const end = first.events.find((e) => e.type === 'tool_end');
    t.equal(end?.ok, true, JSON.stringify(end).slice(0, 2000));
    const out = end?.output as {
      stdout: string;
      files: { path: string; size: number }[];
      attachments: { name: string; path: string; size: number }[];
    };
    const got = JSON.parse(out.stdout.trim().split('\n').at(-1)!) as {
      rows: number;
      region: string;
      quarter: string;
      growth: number;
    };
    t.equal(got.rows, 100_000);
    t.equal(got.region, ref.region, 'the region pandas found is the reference one');
    t.equal(got.quarter, ref.quarter);
    t.ok(Math.abs(got.growth - ref.growth) < 1e-12, `growth ${got.growth} vs ${ref.growth}`);
    const text = first.events
      .filter((e) => e.type === 'text_delta')
      .map((e) => e.text)
      .join('');
    t.equal(
      text,
      `${ref.region} grew fastest: ${(ref.growth * 100).toFixed(4)}% in ${ref.quarter}.`,
      "the answer's numbers are the reference's",
    );
    t.match(out.files, [{ path: 'out/growth.png' }], 'the chart written under out/ is listed');
    t.ok(
      first.events.some((e) => e.type === 'tool_progress' && e.stream === 'stdout' && /"rows": 100000/.test(e.text)),
      'stdout was streamed as tool_progress',
    );
    const sb = d.runtime!.sessions.list().find((s) => s.sessionId === sid)!;
    const png = await execIn(
      docker!,
      sb.containerId!,
      ['sh', '-c', 'head -c 8 /workspace/out/growth.png | od -An -tx1'],
      { user: '1001' },
    );
    t.match(png.stdout.replace(/\s+/g, ''), /^89504e470d0a1a0a$/, 'a real PNG');
    // Kept with the chat: the page's route serves the copy, the same bytes as out/growth.png.
    t.match(
      out.attachments,
      [{ path: 'out/growth.png', name: /^[0-9a-f-]{36}\.png$/ }],
      'the chart is kept with the chat',
    );
    const served = await c.request('GET', `/api/chat/attachments/${out.attachments[0].name}`);
    t.equal(served.headers.get('content-type'), 'image/png');
    const whole = await execIn(docker!, sb.containerId!, ['sh', '-c', 'od -An -tx1 -v /workspace/out/growth.png'], {
      user: '1001',
    });
    t.equal(
      Buffer.from(await served.arrayBuffer()).toString('hex'),
      whole.stdout.replace(/\s+/g, ''),
      'the chat shows the chart the code drew',
    );

    // State: a variable of the first call is read in the next turn.
    const second = await turn('how many rows?', ['len(df), region'], sid);
    const e2 = second.events.find((e) => e.type === 'tool_end');
    t.match(
      e2?.output,
      { stdout: `(100000, '${ref.region}')\n`, new_interpreter: false },
      'df and region carried over',
    );

    // The hostile table: each call ends with its error, the next one runs.
    const hostile: [string, RegExp][] = [
      ['while True: print("x" * 65536)', /ERR_PYTHON_OUTPUT_LIMIT/],
      ['import os\nwhile True:\n    try: os.fork()\n    except OSError: pass', /ERR_PYTHON_PROCESS_LIMIT/],
      ['import time\ntime.sleep(100000)', /ERR_PYTHON_TIMEOUT/],
      ['import socket\nsocket.create_connection(("93.184.216.34", 80), timeout=3)', /OSError|unreachable|timed out/i],
      ['open("/proc/1/environ").read()', /PermissionError/],
      ['open("/etc/airlock-was-here", "w").write("x")', /OSError|Read-only|PermissionError/],
      ['open("/workspace/../opt/airlock/x", "w")', /OSError|Read-only|PermissionError/],
      [
        'with open("/workspace/big.bin", "wb") as f:\n    while True: f.write(b"0" * 1048576)',
        /OSError|File too large|No space|quota/i,
      ],
    ];
    if (SANDBOX_RUNTIME === 'runsc') {
      // gVisor lets uid 1001 read root's /proc/1/environ (runc refuses): checked apart, below.
      hostile.splice(
        hostile.findIndex(([code]) => code.includes('/proc/1/environ')),
        1,
      );
    }
    const bad = await turn(
      'try these',
      [
        ...hostile.map(([code]) => code),
        'import os\nos.remove("/workspace/big.bin") if os.path.exists("/workspace/big.bin") else None\nprint("still here")',
      ],
      sid,
    );
    const ends = bad.events.filter((e) => e.type === 'tool_end');
    t.equal(ends.length, hostile.length + 1, 'every call ended');
    hostile.forEach(([code, re], i) => {
      t.equal(ends[i]?.ok, false, `refused: ${code.split('\n')[0]}`);
      t.match(ends[i]?.error, re, `${code.split('\n')[0]} → ${String(ends[i]?.error).slice(0, 200)}`);
    });
    t.match(ends.at(-1)?.output, { stdout: 'still here\n' }, 'the sandbox goes on after the hostile table');
    t.equal(bad.events.at(-1).stop_reason, 'end_turn', 'and so does the chat');
    t.equal(
      d.runtime!.sessions.list().find((s) => s.sessionId === sid)?.containerId,
      sb.containerId,
      'in the same sandbox',
    );
    if (SANDBOX_RUNTIME === 'runsc') {
      // What it reads there is the container's env, which holds nothing secret by rule (the
      // engine shows it to whoever may inspect the container): the image's names and the child uid.
      const env = await turn(
        'and this',
        ['print(sorted(set(k.split("=")[0] for k in open("/proc/1/environ").read().split("\\0") if k)))'],
        sid,
      );
      const read = env.events.find((e) => e.type === 'tool_end');
      t.equal(read?.ok, true, 'gVisor lets uid 1001 read /proc/1/environ');
      const names = JSON.parse(String(read?.output?.stdout ?? '[]').replace(/'/g, '"')) as string[];
      const tunables = new Set([...GLIBC_TUNABLE_LINES].map((l) => l.split('=')[0]));
      t.same(
        names.filter(
          (n) =>
            !tunables.has(n) &&
            ![
              'AIRLOCK_SANDBOX_CHILD_UID',
              'GLIBC_TUNABLES',
              'HOME',
              'HOSTNAME',
              'LANG',
              'NODE_COMPILE_CACHE',
              'NODE_ENV',
              'PATH',
            ].includes(n),
        ),
        [],
        `it holds only the image's env and the child uid: ${names.join(', ')}`,
      );
    }

    // Documents: read_document's PDF text is pdftotext's (run here in the same image), DOCX by construction.
    const upload = (name: string, body: Buffer) =>
      fetch(`${c.base}/api/chat/files`, {
        method: 'POST',
        headers: {
          cookie: c.cookieHeader(),
          'x-csrf-token': c.csrf!,
          'content-type': 'application/octet-stream',
          'x-file-name': name,
        },
        body: new Uint8Array(body),
      });
    t.equal(
      (
        await upload(
          'report.pdf',
          makePdf([
            ['Quarterly report', 'Revenue grew 12 percent (Q3)'],
            ['Second page', 'Costs fell'],
          ]),
        )
      ).status,
      201,
    );
    t.equal((await upload('memo.docx', makeDocx([{ heading: 1, text: 'Memo' }, 'Body text.']))).status, 201);
    const bomb = makeDocx(
      ['a'],
      [
        { name: 'x1', data: Buffer.alloc(40 * 1024 * 1024) },
        { name: 'x2', data: Buffer.alloc(40 * 1024 * 1024) },
      ],
    );
    const refused = await upload('bomb.docx', bomb);
    t.equal(refused.status, 422, 'a DOCX zip bomb is refused at upload');
    t.match(await refused.json(), { error: { code: 'ERR_UPLOAD_ZIP_BOMB' } });
    const docs = await turn(
      'read them',
      [
        { name: 'read_document', arguments: { name: 'report.pdf' } },
        { name: 'read_document', arguments: { name: 'memo.docx' } },
        'open("uploads/report.pdf", "rb").read(5)',
      ],
      sid,
    );
    const de = docs.events.filter((e) => e.type === 'tool_end');
    const pdfRef = await execIn(
      docker!,
      sb.containerId!,
      ['pdftotext', '-enc', 'UTF-8', '/workspace/uploads/report.pdf', '-'],
      { user: '1001' },
    );
    const refPages = pdfRef.stdout.split('\f').slice(0, 2);
    t.match(
      de[0]?.output,
      { parts: 2, text: refPages.map((p, i) => `=== page ${i + 1} ===\n${p.trimEnd()}`).join('\n\n') },
      "the PDF's text is pdftotext's, page by page",
    );
    t.match((de[0]?.output as { text: string }).text, /Revenue grew 12 percent \(Q3\)/);
    t.match(de[1]?.output, { text: '# Memo\nBody text.' });
    t.match(de[2]?.output, { stdout: "b'%PDF-'\n" }, 'Python opens the uploaded document too');

    // A lost sandbox: the next call runs in a fresh interpreter and the model is told so; files remain.
    await docker!.getContainer(sb.containerId!).kill();
    const after = await turn(
      'again',
      ['print("df" in globals(), __import__("os").path.exists("out/growth.png"))'],
      sid,
    );
    const e3 = after.events.find((e) => e.type === 'tool_end');
    t.equal(e3?.ok, true, JSON.stringify(after.events.at(-1)));
    t.match(
      e3?.output,
      { stdout: 'False True\n', new_interpreter: true },
      'state gone, the workspace file still there',
    );
    t.match((e3?.output as { note: string }).note, /new Python interpreter/);
    t.match(lastToolResult(model.requests.at(-1)!.body), /new Python interpreter/, 'the model was told');
  });
}
