/**
 * The agent's startup-snapshot entry (daemon/runtime/bundle.ts bundles it as CommonJS for
 * `node --build-snapshot`): the two vendor model SDKs, then the agent. In the snapshot the SDKs
 * are part of the heap every agent starts from, so a chat's first model call does not load them
 * from node_modules (resolve, read, compile: docs/runtime.md, "The model SDKs in the snapshot").
 * The plain agent (dist/agent/main.js, the host's tests, an image without a blob) still loads
 * them on first use (agent/models/sdk.ts).
 */
import './models/preload.js';
import './main.js';
