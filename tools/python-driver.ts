/**
 * The Python side of run_python: a small driver run as `python3 -u -c DRIVER_SOURCE`. It reads
 * code cells as JSON lines on fd 3, runs each with exec() in one namespace that lives as long as
 * the process (so variables carry over between calls), and answers one JSON line per cell on
 * fd 4. The cell's own output goes to fd 1 and 2 as the code writes it (streamed by the tool);
 * after each cell the driver writes a marker (`MARK`, a per-process nonce from the env) to both,
 * so the tool knows it has read all of that cell's output. fd 0 is /dev/null: input() cannot
 * read the protocol.
 *
 * Limits set here (docs/tools.md#run_python): RLIMIT_AS for memory (a MemoryError the code sees),
 * a per-cell RLIMIT_CPU soft limit (the SIGXCPU handler raises CpuLimitExceeded in the cell, so
 * the state survives; a C loop that ignores it meets the wall clock), RLIMIT_FSIZE per file.
 * The wall clock, the output bytes and the process count are the tool's (tools/python-session.ts).
 */
export const DRIVER_SOURCE = String.raw`
import ast, json, math, os, resource, signal, sys, traceback
ctl_in = os.fdopen(3, 'r', encoding='utf-8')
ctl_out = os.fdopen(4, 'w', encoding='utf-8')
MARK = os.environ.pop('AIRLOCK_PY_MARK').encode()
LIM = json.loads(os.environ.pop('AIRLOCK_PY_LIMITS'))
LIM.setdefault('procs', 32)
mem = LIM['memory_mb'] * 1024 * 1024
resource.setrlimit(resource.RLIMIT_AS, (mem, mem))
fsz = LIM['file_mb'] * 1024 * 1024
resource.setrlimit(resource.RLIMIT_FSIZE, (fsz, fsz))
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)

class CpuLimitExceeded(Exception):
    pass

def on_xcpu(signum, frame):
    raise CpuLimitExceeded('the cell used more than %d s of CPU time' % LIM['cpu_s'])
signal.signal(signal.SIGXCPU, on_xcpu)

def cpu_used():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime

def send(obj):
    ctl_out.write(json.dumps(obj) + '\n')
    ctl_out.flush()

def marks():
    for fd in (1, 2):
        os.write(fd, MARK)

# Processes: a fork that would take the interpreter's group past the limit, or one made while
# the sandbox's memory runs low, ends the whole group at once, in the process about to fork,
# before the fork. Under gVisor each forked child of an interpreter with pandas loaded costs the
# sandbox about 18 MiB, and a sandbox out of memory is lost, so there the memory (gVisor's
# /proc/meminfo is the sandbox's) is what ends a fork bomb; under runc it is the count. The forks
# of a cell are counted in memory every process of the group shares, under a lock (POSIX record
# locks are per process), so the count is exact; only past the limit is /proc read for the
# group's real size (forks after others ended go on). fd 4 tells the tool why.
import fcntl, mmap, tempfile
FORKS = mmap.mmap(-1, 8)
FORK_LOCK = tempfile.TemporaryFile()
FORK_MEM_FLOOR_KB = 96 * 1024
PGID = os.getpgid(0)
def group_size():
    n = 0
    for d in os.listdir('/proc'):
        if d.isdigit():
            try:
                with open('/proc/' + d + '/stat', 'rb') as f:
                    st = f.read()
                if int(st[st.rfind(b')') + 2:].split()[2]) == PGID:
                    n += 1
            except Exception:
                pass
    return n
def mem_available_kb():
    try:
        with open('/proc/meminfo', 'rb') as f:
            for line in f:
                if line.startswith(b'MemAvailable:'):
                    return int(line.split()[1])
    except Exception:
        pass
    return None
def before_fork():
    fcntl.lockf(FORK_LOCK, fcntl.LOCK_EX)
    try:
        n = int.from_bytes(FORKS[0:8], 'little') + 1
        FORKS[0:8] = n.to_bytes(8, 'little')
        avail = mem_available_kb()
        low = avail is not None and avail < FORK_MEM_FLOOR_KB
        if low or (n > LIM['procs'] and group_size() >= LIM['procs']):
            try:
                os.write(4, b'{"proc_limit": true, "memory": true}\n' if low else b'{"proc_limit": true}\n')
            finally:
                os.killpg(0, signal.SIGKILL)
    finally:
        fcntl.lockf(FORK_LOCK, fcntl.LOCK_UN)
os.register_at_fork(before=before_fork)

ns = {'__name__': '__main__', '__builtins__': __builtins__}
pre = LIM.get('preload') or []
for mod in pre:
    try:
        ns[mod.split(' as ')[-1]] = __import__(mod.split(' as ')[0])
    except Exception:
        pass
if 'matplotlib' in ' '.join(pre):
    try:
        import matplotlib
        matplotlib.use('Agg')
        import matplotlib.pyplot as plt
        ns['plt'] = plt
    except Exception:
        pass
send({'ready': True, 'python': sys.version.split()[0]})

for line in ctl_in:
    req = json.loads(line)
    res = {'id': req['id'], 'ok': True}
    FORKS[0:8] = bytes(8)
    soft = math.ceil(cpu_used() + int(req.get('cpu_s', LIM['cpu_s'])))
    resource.setrlimit(resource.RLIMIT_CPU, (soft, resource.RLIM_INFINITY))
    try:
        tree = ast.parse(req['code'], '<cell>', 'exec')
        last = None
        if tree.body and isinstance(tree.body[-1], ast.Expr):
            last = ast.Expression(tree.body.pop().value)
        exec(compile(tree, '<cell>', 'exec'), ns)
        if last is not None:
            v = eval(compile(last, '<cell>', 'eval'), ns)
            if v is not None:
                print(repr(v))
    except BaseException as e:
        if isinstance(e, SystemExit):
            res['exit'] = True
        tb = traceback.format_exception(type(e), e, e.__traceback__)
        # Frames of this driver are not the model's code: keep those of <cell> and below.
        keep = [tb[0]] + [t for t in tb[1:] if 'File "<string>"' not in t]
        res.update(ok=False, error={'type': type(e).__name__, 'message': str(e)[:2000], 'traceback': ''.join(keep)[-8000:]})
    finally:
        resource.setrlimit(resource.RLIMIT_CPU, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
    try:
        sys.stdout.flush(); sys.stderr.flush()
    except Exception:
        pass
    marks()
    send(res)
    if res.get('exit'):
        break
`;
