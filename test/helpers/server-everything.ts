/**
 * The MCP reference server (`@modelcontextprotocol/server-everything`, built with the official
 * SDK) in its Streamable HTTP mode (`node dist/index.js streamableHttp`, endpoint `/mcp`, port from
 * PORT). It takes no listen address, so a preload binds its listener to 127.0.0.1: tests talk to
 * loopback only.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

const LOOPBACK_PRELOAD = `data:text/javascript,${encodeURIComponent(
  "import net from 'node:net';const o=net.Server.prototype.listen;net.Server.prototype.listen=function(...a){if(typeof a[0]==='number'||(typeof a[0]==='string'&&/^\\d+$/.test(a[0]))){const cb=a.find((x)=>typeof x==='function');return o.call(this,Number(a[0]),'127.0.0.1',cb);}return o.apply(this,a);};",
)}`;

async function freePort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const port = (s.address() as { port: number }).port;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

export interface ServerEverything {
  url: string;
  child: ChildProcess;
  close(): Promise<void>;
}

/** Start it on a free loopback port; resolves once it listens. */
export async function startServerEverything(): Promise<ServerEverything> {
  const main = join(
    dirname(createRequire(import.meta.url).resolve('@modelcontextprotocol/server-everything/package.json')),
    'dist',
    'index.js',
  );
  const port = await freePort();
  const child = spawn(process.execPath, ['--import', LOOPBACK_PRELOAD, main, 'streamableHttp'], {
    env: { PATH: process.env.PATH ?? '', PORT: String(port) },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  await new Promise<void>((resolve, reject) => {
    let err = '';
    const timer = setTimeout(() => reject(new Error(`server-everything did not start: ${err.slice(0, 500)}`)), 30_000);
    child.stderr!.on('data', (d: Buffer) => {
      err += d.toString();
      if (/listening on port/i.test(err)) {
        clearTimeout(timer);
        resolve();
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`server-everything exited (${code}): ${err.slice(0, 500)}`));
    });
  });
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    child,
    close: () =>
      new Promise<void>((r) => {
        if (child.exitCode !== null) return r();
        child.once('exit', () => r());
        child.kill('SIGTERM');
      }),
  };
}
