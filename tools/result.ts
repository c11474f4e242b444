import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';

/**
 * An expected tool failure: the tool answers `isError: true` with a message the model and
 * the user can act on, and the stable code in `_meta.error_code` (tests assert on it). A plain
 * Error, not an AppError: it is a tool result the model reads (surface `tool`), never an HTTP answer.
 */
export class ToolError extends Error {
  readonly code: string;
  constructor(code: string, message: string, opts: { cause?: unknown } = {}) {
    super(message, opts.cause === undefined ? undefined : { cause: opts.cause });
    this.name = 'ToolError';
    this.code = code;
  }
}

export const NOT_CONNECTED_MESSAGE = 'connect your workspace account, then start a new chat session';

export function toolOk(data: Record<string, unknown>): CallToolResult {
  return { content: [{ type: 'text', text: JSON.stringify(data) }], structuredContent: data };
}

export function toolFail(err: ToolError): CallToolResult {
  return {
    isError: true,
    content: [{ type: 'text', text: `${err.message} (${err.code})` }],
    _meta: { error_code: err.code },
  };
}

/**
 * Run a tool body: ToolError becomes an isError result; anything else is a bug and is
 * reported as ERR_TOOL_INTERNAL without internals (details go to the stderr log).
 */
export async function runTool(
  log: { error(obj: object, msg: string): void },
  tool: string,
  fn: () => Promise<CallToolResult>,
): Promise<CallToolResult> {
  try {
    return await fn();
  } catch (err) {
    if (err instanceof ToolError) return toolFail(err);
    log.error({ err, tool }, 'tool failed');
    return toolFail(
      new ToolError('ERR_TOOL_INTERNAL', `${tool} failed unexpectedly; try again or start a new chat session`),
    );
  }
}
