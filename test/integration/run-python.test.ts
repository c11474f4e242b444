import t from 'tap';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { tempDir } from '../helpers/app.js';
import { errorCode, startMcp } from '../helpers/mcp.js';
import { waitFor } from '../helpers/wait.js';
import { PNG_1PX } from '../helpers/xlsx.js';
import { groupPids } from '../../tools/python-session.js';

/**
 * run_python in the real tools MCP server (a child process over stdio) with the host's python3
 * (the sandbox image's interpreter is tested in test/docker/run-python.test.ts): state kept
 * between calls, output streamed as progress, tracebacks, and every bound ending the call with
 * its code while the server goes on.
 */
const python = spawnSync('python3', ['-c', 'import resource'], { stdio: 'ignore' }).status === 0;

const text = (r: CallToolResult) => r.content.map((c) => (c.type === 'text' ? c.text : '')).join('');

t.test(
  'run_python: state, streaming, errors and bounds',
  { skip: python || process.env.CI === 'true' ? false : 'no python3 on this host' },
  async (t) => {
    const ws = tempDir(t);
    const attachments = join(ws, '.agent-attachments');
    mkdirSync(attachments);
    const tools = await startMcp(t, 'tools', {
      AGENT_ATTACHMENTS_DIR: attachments,
      AGENT_PYTHON_LIMITS: 'wall_s=10,cpu_s=1,memory_mb=400,output_kb=64,procs=8,file_mb=1',
    });
    const run = async (code: string, onprogress?: (p: { message?: string }) => void, signal?: AbortSignal) =>
      (await tools.client.callTool({ name: 'run_python', arguments: { code } }, undefined, {
        ...(onprogress ? { onprogress } : {}),
        ...(signal ? { signal } : {}),
      })) as CallToolResult;

    const first = await run('x = 6 * 7\nprint("hello")');
    t.equal(errorCode(first), undefined, text(first));
    const out = first.structuredContent as { stdout: string; new_interpreter: boolean; note?: string };
    t.equal(out.stdout, 'hello\n');
    t.equal(out.new_interpreter, true);
    t.match(out.note, /new Python interpreter/);

    const second = await run('x + 1');
    t.equal(
      (second.structuredContent as { stdout: string }).stdout,
      '43\n',
      'x from the first call; a last bare expression is printed',
    );
    t.equal((second.structuredContent as { new_interpreter: boolean }).new_interpreter, false);

    const chunks: string[] = [];
    // Output streams while the cell runs (the pauses keep the result from overtaking it).
    const streamed = await run(
      'import sys, time\nfor i in range(3): print("line", i)\ntime.sleep(0.3)\nsys.stderr.write("warn\\n")\ntime.sleep(0.3)\nprint("end")',
      (p) => chunks.push(p.message ?? ''),
    );
    t.equal(errorCode(streamed), undefined);
    const joined = chunks.join('|');
    t.match(joined, /^stdout\nline 0/, 'progress carries the stream name, then its text');
    t.match(joined, /stderr\nwarn/);
    t.notMatch(joined, /AIRLOCK-CELL-END/, 'the end marker never reaches the chat');

    const failed = await run('def f():\n    return 1 / 0\nprint("before")\nf()');
    t.equal(errorCode(failed), 'ERR_PYTHON_EXCEPTION');
    t.match(text(failed), /before[\s\S]*Traceback[\s\S]*line 2, in f[\s\S]*ZeroDivisionError: division by zero/);
    t.notMatch(text(failed), /File "<string>"/, "the driver's frames are left out");
    t.equal((await run('x')).structuredContent?.stdout, '42\n', 'an exception keeps the state');

    const cpu = await run('while True: pass');
    t.equal(errorCode(cpu), 'ERR_PYTHON_EXCEPTION');
    t.match(text(cpu), /CpuLimitExceeded/);
    t.equal((await run('x')).structuredContent?.stdout, '42\n', 'a CPU limit in Python code keeps the state');

    const mem = await run('b = bytearray(600 * 1024 * 1024)');
    t.match(text(mem), /MemoryError/);

    const loud = await run('while True: print("y" * 1000)');
    t.equal(errorCode(loud), 'ERR_PYTHON_OUTPUT_LIMIT', text(loud));
    const after = await run('print("x" in globals())');
    t.equal(
      (after.structuredContent as { stdout: string }).stdout,
      'False\n',
      'the next call runs in a fresh interpreter',
    );
    t.match((after.structuredContent as { note: string }).note, /earlier one ended/);

    const sleepy = await run('import time\ntime.sleep(3600)');
    t.equal(errorCode(sleepy), 'ERR_PYTHON_TIMEOUT');

    const forks = await run(
      'import os, time\npids = []\nfor i in range(50):\n    pid = os.fork()\n    if pid == 0:\n        time.sleep(3600)\n    pids.append(pid)\ntime.sleep(3600)',
    );
    t.equal(errorCode(forks), 'ERR_PYTHON_PROCESS_LIMIT', text(forks));

    const big = await run('open("big.bin", "wb").write(b"0" * (2 * 1024 * 1024))');
    t.match(text(big), /File too large|OSError/, 'RLIMIT_FSIZE');

    const file = await run(
      'import os\nos.makedirs("out", exist_ok=True)\nopen("out/result.csv", "w").write("a,b\\n1,2\\n")',
    );
    t.same(
      (file.structuredContent as { files: unknown[] }).files,
      [{ path: 'out/result.csv', size: 8 }],
      'files written under out/ are listed',
    );
    t.ok(existsSync(join(ws, 'out', 'result.csv')), 'the working folder is the workspace');

    // Stop: the call ends at once and the interpreter's group is gone.
    const pidCall = await run('import os\nos.getpid()');
    const pid = Number((pidCall.structuredContent as { stdout: string }).stdout);
    const ac = new AbortController();
    const started = Date.now();
    const stopped = run('import time\ntime.sleep(3600)', undefined, ac.signal).catch((e: unknown) => e);
    setTimeout(() => ac.abort(), 200);
    await stopped;
    t.ok(Date.now() - started < 8000, 'Stop ends the call before its wall clock (10 s)');
    await t.resolves(waitGone(pid), 'the interpreter was killed');
    const fresh = await run('print(1)');
    t.equal(
      (fresh.structuredContent as { new_interpreter?: boolean } | undefined)?.new_interpreter,
      true,
      `a fresh interpreter: ${JSON.stringify(fresh.content).slice(0, 300)}`,
    );

    t.notMatch(tools.stderr(), /AIRLOCK_PY_MARK/);
  },
);

/** Whether a process is still running: a zombie was killed and waits only to be reaped by its parent. */
function running(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[0] !== 'Z';
  } catch {
    return false;
  }
}

/** The interpreter's group has no running process left (bounded: a loaded machine reaps late). */
async function waitGone(pid: number): Promise<void> {
  await waitFor(
    () => groupPids(pid).filter(running).length === 0,
    `group ${pid} has no running process left`,
    15_000,
    20,
  );
}

t.test(
  'files written under out/ are kept with the chat: copied as they were, typed, bounded',
  { skip: python || process.env.CI === 'true' ? false : 'no python3 on this host' },
  async (t) => {
    const ws = tempDir(t);
    const attachments = join(ws, '.agent-attachments');
    mkdirSync(attachments);
    const tools = await startMcp(t, 'tools', { AGENT_ATTACHMENTS_DIR: attachments });
    const run = async (code: string) =>
      (await tools.client.callTool({ name: 'run_python', arguments: { code } })) as CallToolResult;
    const kept = (r: CallToolResult) =>
      (r.structuredContent as { attachments: { name: string; path: string; size: number }[] }).attachments;

    const first = await run(
      [
        // A real PNG without matplotlib (the host running the tests may not have it; the sandbox image does).
        'import os, base64',
        'os.makedirs("out", exist_ok=True)',
        `open("out/chart.png", "wb").write(base64.b64decode("${PNG_1PX.toString('base64')}"))`,
        'open("out/data.csv", "w").write("region,growth\\nNorth,3\\n")',
        'open("out/evil.svg", "w").write(\'<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>\')',
        'open("out/fake.png", "w").write("not a picture")',
        'open("out/notes.md", "w").write("# not a kept type")',
        'os.symlink("/etc/hostname", "out/link.csv")',
        'open("out/<img src=x onerror=alert(1)>.csv", "w").write("a")',
        'open("out/line\\nbreak.txt", "w").write("a")',
      ].join('\n'),
    );
    t.equal(errorCode(first), undefined, text(first));
    const files = kept(first);
    t.same(
      files.map((f) => f.path).sort(),
      ['out/chart.png', 'out/data.csv', 'out/evil.svg'],
      'the PNG, the CSV and the SVG are kept; a fake PNG, a .md, a link and hostile names are not',
    );
    for (const f of files) {
      t.match(f.name, /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\.(png|csv|svg)$/);
      t.same(readFileSync(join(attachments, f.name)), readFileSync(join(ws, f.path)), `${f.path}: the same bytes`);
      t.equal(f.size, statSync(join(ws, f.path)).size);
      t.equal(
        readFileSync(join(attachments, f.name.replace(/\.[a-z]+$/, '.title')), 'utf8'),
        f.path.slice(4),
        'its file name beside it',
      );
    }
    const csv = files.find((f) => f.path === 'out/data.csv')!;

    // A later call that rewrites out/data.csv keeps a new copy; the earlier answer's stays as it was.
    const second = await run('open("out/data.csv", "w").write("region,growth\\nSouth,9\\n")');
    t.same(
      kept(second).map((f) => f.path),
      ['out/data.csv'],
      'only what changed',
    );
    t.not(kept(second)[0].name, csv.name);
    t.equal(
      readFileSync(join(attachments, csv.name), 'utf8'),
      'region,growth\nNorth,3\n',
      'the first copy is unchanged',
    );

    // Bounded: at most 10 files a call.
    const many = await run('for i in range(12): open(f"out/t{i}.txt", "w").write(str(i))');
    t.equal(kept(many).length, 10, 'ten kept');
    t.equal((many.structuredContent as { files: unknown[] }).files.length, 12, 'all twelve listed');
  },
);
