/**
 * The supervisor's V8 startup snapshot entry: the image build bundles this file as CommonJS
 * (dist/supervisor/snapshot.cjs) and runs it once with `node --build-snapshot`, so the blob holds
 * the heap after the supervisor's modules were evaluated (the proxy, the protocol schemas and
 * the builtins they take at load). The image's ENTRYPOINT then starts the supervisor from the
 * blob: each container runs only launchFirst and serve (boot.ts), with nothing left to load.
 * docs/runtime.md, "Cold start, step by step", has why and the figures.
 *
 * node:http is not in the blob: Node cannot serialize its parser binding, so the snapshot bundle
 * loads it on first use (lazyHttp in daemon/runtime/bundle.ts): the credential proxy, at
 * `start`. Outside `--build-snapshot` this file does nothing (it is no entry point then).
 */
import { startupSnapshot } from 'node:v8';
import { Supervisor } from './supervisor.js';
import { rearmTimersAfterSnapshot, settleTimersBeforeSnapshot } from '../core/snapshot-timers.js';
import { launchFirst, serve } from './boot.js';
import { ChildOutboundSchema, ControlRequestSchema, SessionProfileSchema } from '../core/sandbox-protocol.js';

if (startupSnapshot.isBuildingSnapshot()) {
  // A warm-up: the schemas a session's start and first turn check each parse a sample, so zod's
  // compiled fast paths are in the blob. No env is read; no file, socket or process is touched.
  const spec = { session_id: 's', user_id: 1, placeholders: {}, agent_env: {} };
  for (const m of [
    { type: 'warm', id: '1' },
    { type: 'start', id: '2', spec },
    { type: 'prompt', id: '3', turn_id: 't', prompt: '' },
  ])
    ControlRequestSchema.safeParse(m);
  for (const m of [
    { type: 'ready' },
    { type: 'configured' },
    { type: 'turn_end', turn_id: 't', stop_reason: 'end_turn' },
  ])
    ChildOutboundSchema.safeParse(m);
  SessionProfileSchema.safeParse({ version: 1, session_id: 's', proxy: { host: '127.0.0.1', port: 8700 }, routes: [] });
  startupSnapshot.setDeserializeMainFunction(() => {
    // Node's timer state in the blob may be stale (core/snapshot-timers.ts says why).
    rearmTimersAfterSnapshot();
    void serve(Supervisor, launchFirst());
  });
  // Last: whatever timer loading cleared, one that fires leaves Node's timer state sound in the blob.
  void settleTimersBeforeSnapshot();
}
