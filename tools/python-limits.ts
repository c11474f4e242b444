/** run_python's bounds per call (docs/tools.md#run_python; AGENT_PYTHON_LIMITS). */
export interface PythonLimits {
  /** Wall clock of one call, seconds. */
  wallS: number;
  /** CPU time of one call, seconds (RLIMIT_CPU soft limit, reset per call). */
  cpuS: number;
  /** Address space of the interpreter, MiB (RLIMIT_AS). */
  memoryMb: number;
  /** stdout + stderr of one call, bytes. */
  outputBytes: number;
  /** Processes (and threads) the interpreter's process group may hold at once. */
  procs: number;
  /** Largest file the code may write, MiB (RLIMIT_FSIZE). */
  fileMb: number;
}

export const DEFAULT_PYTHON_LIMITS: PythonLimits = {
  wallS: 60,
  cpuS: 30,
  memoryMb: 1024,
  outputBytes: 1024 * 1024,
  procs: 32,
  fileMb: 64,
};

const LIMIT_KEYS: Record<string, keyof PythonLimits> = {
  wall_s: 'wallS',
  cpu_s: 'cpuS',
  memory_mb: 'memoryMb',
  procs: 'procs',
  file_mb: 'fileMb',
};

/** AGENT_PYTHON_LIMITS (`wall_s=60,cpu_s=30,…`, made by core/sandbox-env.ts) over the defaults; bad items are ignored. */
export function parsePythonLimits(raw: string | undefined): PythonLimits {
  const l = { ...DEFAULT_PYTHON_LIMITS };
  for (const item of (raw ?? '').split(',')) {
    const [k, v] = item.split('=');
    const n = Number(v);
    if (!Number.isInteger(n) || n < 1) continue;
    if (k === 'output_kb') l.outputBytes = n * 1024;
    else if (k in LIMIT_KEYS) l[LIMIT_KEYS[k]] = n;
  }
  return l;
}
