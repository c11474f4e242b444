/**
 * Airlock's host-side MCP client as the conformance suite runs it
 * (`npx conformance client --command "node dist/test/conformance/connector-client.js"`): the suite
 * appends the scenario server's URL and sets MCP_CONFORMANCE_SCENARIO. It does what the registry
 * and the egress gateway do with a connector: connect (Streamable HTTP, else HTTP+SSE), list and
 * check the tools, and call one (`add_numbers` in the tools_call scenario).
 */
import { checkTools, connectUpstream, listAllTools } from '../../domain/connectors/index.js';

const url = process.argv.at(-1)!;
const { client } = await connectUpstream('streamable_http', url, async () => ({}));
try {
  const listed = await listAllTools(client, []);
  const { tools } = checkTools('conformance', listed, []);
  const add = tools.find((t) => t.name === 'add_numbers');
  if (add) {
    const r = await client.callTool({ name: 'add_numbers', arguments: { a: 2, b: 3 } });
    process.stdout.write(`${JSON.stringify(r)}\n`);
  }
} finally {
  await client.close();
}
