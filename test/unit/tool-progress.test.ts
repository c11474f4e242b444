import t from 'tap';
import { AgentEventSchema } from '../../core/sandbox-protocol.js';
import { sanitize } from '../../domain/chat/events.js';
import { DEFAULT_PYTHON_LIMITS, parsePythonLimits } from '../../tools/python-limits.js';
import { renderParts } from '../../tools/read-document.js';

t.test('tool_progress passes the protocol and is rebuilt field by field', async (t) => {
  const e = { type: 'tool_progress', call_id: 'c1', tool: 'run_python', stream: 'stderr', text: 'warn\n' } as const;
  t.ok(AgentEventSchema.safeParse(e).success);
  t.notOk(AgentEventSchema.safeParse({ ...e, stream: 'other' }).success, 'only stdout and stderr');
  t.same(
    sanitize({ ...e, extra: 'x' } as never, 7),
    { type: 'tool_progress', seq: 7, call_id: 'c1', tool: 'run_python', stream: 'stderr', text: 'warn\n' },
    'no extra field passes',
  );
  t.equal((sanitize({ ...e, stream: 'evil' } as never, 1) as { stream: string }).stream, 'stdout');
  t.equal((sanitize({ ...e, text: 'y'.repeat(100_000) }, 1) as { text: string }).text.length, 64 * 1024, 'text capped');
});

t.test('AGENT_PYTHON_LIMITS over the defaults; bad items ignored', async (t) => {
  t.same(parsePythonLimits(undefined), DEFAULT_PYTHON_LIMITS);
  t.same(parsePythonLimits('wall_s=5,cpu_s=2,memory_mb=256,output_kb=8,procs=4,file_mb=1'), {
    wallS: 5,
    cpuS: 2,
    memoryMb: 256,
    outputBytes: 8192,
    procs: 4,
    fileMb: 1,
  });
  t.same(parsePythonLimits('wall_s=-1,cpu_s=x,nope=3'), DEFAULT_PYTHON_LIMITS);
});

t.test('read_document parts: pages, cut marker', async (t) => {
  const doc = { parts: [1, 2, 3].map((n) => ({ label: `page ${n}`, text: `text ${n}\n` })) };
  t.same(renderParts(doc, '2', 1000), { text: '=== page 2 ===\ntext 2', parts: 3, shown: '2-2', truncated: false });
  const cut = renderParts(doc, undefined, 20);
  t.equal(cut.truncated, true);
  const full = '=== page 1 ===\ntext 1\n\n=== page 2 ===\ntext 2\n\n=== page 3 ===\ntext 3';
  t.equal(
    cut.text,
    `${full.slice(0, 20)}\n\n[… cut here: ${full.length - 20} more characters. Ask for fewer pages (pages: "N-M") to read the rest.]`,
  );
  t.throws(() => renderParts(doc, '0-2', 100), { code: 'ERR_TOOL_INVALID_INPUT' });
  t.throws(() => renderParts(doc, 'a', 100), { code: 'ERR_TOOL_INVALID_INPUT' });
});
