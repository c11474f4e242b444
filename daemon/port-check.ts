/**
 * The web listener's address is checked before anything starts (issue 41): a start on a port in
 * use failed with a bare "listen EADDRINUSE" after the demo's emulators and the sandbox pool had
 * started, and left a pool container behind. Now it stops first, with its code and nothing made.
 */
import { createServer } from 'node:net';
import { AppError } from '../core/index.js';

/** Throws ERR_PORT_IN_USE when `host:port` cannot be listened on (port 0 always can). */
export async function assertPortFree(host: string, port: number): Promise<void> {
  if (port === 0) return;
  const s = createServer();
  try {
    await new Promise<void>((resolve, reject) =>
      s.once('error', reject).listen({ host, port, exclusive: true }, resolve),
    );
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    const where = `${host.includes(':') ? `[${host}]` : host}:${port}`;
    if (code === 'EADDRINUSE')
      throw new AppError(
        'ERR_PORT_IN_USE',
        `${where} is in use by another program: stop it or choose another AIRLOCK_PORT; nothing was started`,
      );
    if (code === 'EACCES')
      throw new AppError(
        'ERR_PORT_IN_USE',
        `${where} may not be listened on by this user (a port below 1024 needs privileges): choose another AIRLOCK_PORT; nothing was started`,
      );
    throw err;
  } finally {
    await new Promise((resolve) => (s.listening ? s.close(resolve) : resolve(undefined)));
  }
}
