/** Connectors: remote MCP servers an admin registers (docs/connectors.md). */
export * from './store.js';
export * from './service.js';
export { checkTools, listAllTools, type Discovered, type ListedTool } from './discover.js';
export {
  connectUpstream,
  connectOver,
  connectorFetch,
  cleanMessage,
  MAX_UPSTREAM_RESPONSE_BYTES,
  type CredentialHeaders,
} from './upstream.js';
