/**
 * Container entry point (ENTRYPOINT of the sandbox image when it has no supervisor snapshot; see
 * snapshot.ts). Reads only its own small env: AIRLOCK_SANDBOX_CHILD_UID (tests only; default
 * 1001). Logs JSON lines to stderr.
 *
 * Its first act is to launch the idle agent child; only then does it load the supervisor (the
 * proxy, the protocol schemas), so the two boots overlap (docs/runtime.md, "Cold start, step by
 * step"). So this file imports only the light launch modules statically, and the supervisor with
 * import().
 */
import { launchFirst, serve } from './boot.js';

const boot = launchFirst();
const { Supervisor } = await import('./supervisor.js');
await serve(Supervisor, boot);
