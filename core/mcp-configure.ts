/**
 * The MCP servers' side of `airlock/configure` (the agent child sends it once, at claim): the
 * session's tool env merged over the env the server started with, and its working folder. Both
 * servers (tools/, extensions/) register it the same way; core/ keeps it free of the MCP SDK.
 */
import { McpConfigureRequestSchema, type McpConfigureParams } from './sandbox-protocol.js';

/** What the SDK's low-level Server offers for a request of our own (McpServer.server). */
export interface ConfigureHandlerHost {
  setRequestHandler(
    schema: typeof McpConfigureRequestSchema,
    handler: (req: { params: McpConfigureParams }) => Record<string, never>,
  ): void;
}

/**
 * Accept `airlock/configure`: `apply` gets the merged env (start env, then the session's) after
 * the process moved to `cwd` (a pool member starts before the user's workspace is bound there).
 */
export function acceptConfigure(
  server: ConfigureHandlerHost,
  apply: (env: Record<string, string | undefined>) => void,
): void {
  server.setRequestHandler(McpConfigureRequestSchema, (req) => {
    if (req.params.cwd !== undefined) process.chdir(req.params.cwd);
    apply({ ...process.env, ...req.params.env });
    return {};
  });
}

/**
 * The `jsonSchemaValidator` both servers give the SDK's McpServer. A server uses one only to check
 * what a user answers to an elicitation, which ours never ask for; the SDK's default builds an Ajv
 * instance with its formats in the constructor, ~14 ms of every agent boot (profiled) for nothing.
 * Anything that did elicit would be refused here rather than accepted unchecked.
 */
export const noElicitationValidator = {
  getValidator: () => (_input: unknown) => ({
    valid: false as const,
    data: undefined,
    errorMessage: 'this server does not ask for input',
  }),
};
