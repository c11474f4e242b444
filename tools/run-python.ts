import { promises as fs } from 'node:fs';
import { dirname, join } from 'node:path';
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { z } from 'zod';
import type { ToolsEnv } from './env.js';
import { PythonSession } from './python-session.js';
import { ToolError, runTool, toolOk } from './result.js';
import { keepOutFiles } from './attachments.js';

/** Modules imported when the interpreter starts (names the code can use at once). */
export const PYTHON_PRELOAD = ['pandas as pd', 'numpy as np', 'matplotlib'];
/** How long streamed output is gathered before one progress notification carries it. */
const PROGRESS_FLUSH_MS = 50;
const PROGRESS_CHUNK_CHARS = 16 * 1024;
/** Files listed under out/ after a call (the chat shows them). */
const OUT_FILES_MAX = 50;

/** The interpreter's environment: nothing of the agent's (no placeholder, no base URL, no token). */
function pythonEnv(): Record<string, string> {
  return {
    PATH: '/usr/local/bin:/usr/bin:/bin',
    HOME: process.env.HOME ?? '/tmp',
    LANG: 'C.UTF-8',
    MPLBACKEND: 'Agg',
    MPLCONFIGDIR: '/tmp/.matplotlib',
    OPENBLAS_NUM_THREADS: '1',
    OMP_NUM_THREADS: '1',
    PYTHONDONTWRITEBYTECODE: '1',
  };
}

type Stat = { size: number; mtimeMs: number };

/** Regular files under out/ (one level of folders), by path relative to the workspace. */
async function outFiles(workspace: string): Promise<Map<string, Stat>> {
  const files = new Map<string, Stat>();
  const walk = async (rel: string, depth: number): Promise<void> => {
    const entries = await fs.readdir(join(workspace, rel), { withFileTypes: true }).catch(() => []);
    for (const e of entries) {
      if (files.size >= 500) return;
      const r = `${rel}/${e.name}`;
      if (e.isDirectory() && depth < 2) await walk(r, depth + 1);
      else if (e.isFile()) {
        const st = await fs.lstat(join(workspace, r)).catch(() => undefined);
        if (st) files.set(r, { size: st.size, mtimeMs: st.mtimeMs });
      }
    }
  };
  await walk('out', 0);
  return files;
}

/** The workspace run_python works in: the folder of the attachments folder (/workspace). */
export function workspaceOf(env: ToolsEnv): string {
  return dirname(env.attachmentsDir);
}

/** What a run_python call answers (structuredContent). */
const RUN_PYTHON_OUTPUT = {
  stdout: z.string(),
  stderr: z.string(),
  truncated: z.boolean(),
  files: z.array(z.object({ path: z.string(), size: z.number() })),
  attachments: z.array(z.object({ name: z.string(), path: z.string(), size: z.number() })),
  new_interpreter: z.boolean(),
  note: z.string().optional(),
  duration_ms: z.number(),
};

/**
 * run_python: Python code run in one interpreter per chat (tools/python-session.ts), its output
 * streamed as MCP progress notifications (the chat's `tool_progress` events).
 */
export function registerRunPython(
  server: McpServer,
  env: ToolsEnv,
  log: { info(o: object, m: string): void; error(o: object, m: string): void },
): PythonSession {
  const session = new PythonSession({
    python: process.env.AGENT_PYTHON || 'python3',
    cwd: workspaceOf(env),
    env: pythonEnv(),
    limits: () => env.python,
    preload: PYTHON_PRELOAD,
  });
  server.registerTool(
    'run_python',
    {
      description:
        'Run Python 3 code in this chat\'s interpreter (pandas as pd, numpy as np, matplotlib with plt are imported; openpyxl installed). Variables persist between calls. The working folder is /workspace: the user\'s uploads are in uploads/; write files to show or send to out/ (e.g. plt.savefig("out/chart.png")). The value of a last bare expression is printed. No network.',
      inputSchema: { code: z.string().min(1).max(100_000) },
      outputSchema: RUN_PYTHON_OUTPUT,
      annotations: { readOnlyHint: false, openWorldHint: false },
    },
    (args, extra) =>
      runTool(log, 'run_python', async () => {
        const token = extra._meta?.progressToken;
        let buf: { stream: 'stdout' | 'stderr'; text: string } | undefined;
        let n = 0;
        let timer: NodeJS.Timeout | undefined;
        let sent: Promise<void> = Promise.resolve();
        const flush = (): Promise<void> => {
          if (timer) clearTimeout(timer);
          timer = undefined;
          if (!buf || token === undefined) return sent;
          const b = buf;
          buf = undefined;
          // message: the stream's name and its text, as `stdout\n…` (docs/chat.md#tool-progress).
          const note = {
            method: 'notifications/progress' as const,
            params: { progressToken: token, progress: ++n, message: `${b.stream}\n${b.text}` },
          };
          sent = sent
            .then(() => extra.sendNotification(note))
            .catch((e: unknown) => log.error({ err: String(e) }, 'progress not sent'));
          return sent;
        };
        const onOutput = (stream: 'stdout' | 'stderr', text: string) => {
          if (token === undefined) return;
          if (buf && buf.stream !== stream) void flush();
          buf = { stream, text: (buf?.text ?? '') + text };
          if (buf.text.length >= PROGRESS_CHUNK_CHARS) void flush();
          else timer ??= setTimeout(() => void flush(), PROGRESS_FLUSH_MS);
        };
        const workspace = workspaceOf(env);
        const before = await outFiles(workspace);
        const lost = session.takeLost();
        try {
          const r = await session.run(args.code, onOutput, extra.signal);
          // Every progress notification goes out before the result (the client drops later ones),
          // and a turn of the event loop after it: the SDK client handles a notification a
          // microtask late, so one read in the same chunk as the result would come too late.
          await flush();
          if (n > 0) await new Promise((res) => setTimeout(res, 1));
          const after = await outFiles(workspace);
          const files = [...after]
            .filter(([p, s]) => before.get(p)?.mtimeMs !== s.mtimeMs || before.get(p)?.size !== s.size)
            .slice(0, OUT_FILES_MAX)
            .map(([p, s]) => ({ path: p, size: s.size }));
          const note = r.fresh
            ? `A new Python interpreter was started${lost ? ` (the earlier one ended: ${lost})` : ''}: nothing defined by earlier run_python calls exists in it; files in /workspace remain.`
            : undefined;
          log.info(
            { tool: 'run_python', ok: r.ok, ms: r.duration_ms, fresh: r.fresh, files: files.length },
            'python cell run',
          );
          if (!r.ok && r.error) {
            const out = [r.stdout && `stdout:\n${r.stdout}`, note, r.error.traceback.trimEnd()]
              .filter(Boolean)
              .join('\n');
            throw new ToolError('ERR_PYTHON_EXCEPTION', out);
          }
          // The files it wrote under out/, kept with the chat as they are now (the chat shows them).
          const { kept } = await keepOutFiles(env.attachmentsDir, files, log);
          return toolOk({
            stdout: r.stdout,
            stderr: r.stderr,
            truncated: r.truncated,
            files,
            attachments: kept,
            new_interpreter: r.fresh,
            ...(note ? { note } : {}),
            duration_ms: r.duration_ms,
          });
        } finally {
          await flush();
        }
      }),
  );
  return session;
}
