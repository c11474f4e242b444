/**
 * Airlock's host-side connector OAuth client (domain/connector-oauth) as the conformance suite's
 * auth scenarios run it (`npx conformance client --command "node
 * dist/test/conformance/connector-auth-client.js" --scenario auth/...`): the suite appends the
 * scenario's MCP server URL and, for a pre-registered client, gives its credentials in
 * MCP_CONFORMANCE_CONTEXT. It does what Connect in the chat does (web/connector-oauth-routes.ts),
 * without the browser: discover the authorization server from the MCP server, obtain the client
 * (Airlock's client ID metadata document, else the pre-registered client, else one registered
 * dynamically and kept — here in memory, in the registry for the product), build the
 * authorization request (code + PKCE S256 + resource), follow the authorization endpoint's redirect to read the code (the user's consent,
 * which the suite grants at once), exchange it, then connect with the bearer token and call a tool.
 */
import { randomBytes } from 'node:crypto';
import {
  authorizationRequest,
  discover,
  exchangeCode,
  obtainClient,
  type ConnectorClient,
} from '../../domain/connector-oauth/client.js';
import { checkTools, connectUpstream, listAllTools } from '../../domain/connectors/index.js';

const url = process.argv.at(-1)!;
const context = JSON.parse(process.env.MCP_CONFORMANCE_CONTEXT ?? '{}') as {
  client_id?: string;
  client_secret?: string;
};
/** The client ID metadata document's URL the suite expects (Airlock's is `<public origin>/oauth/client-metadata.json`). */
const METADATA_DOCUMENT = 'https://conformance-test.local/client-metadata.json';
const REDIRECT_URI = 'http://localhost:3000/oauth/connectors/callback';

const server = await discover(url);
const secret = context.client_secret;
const settings = { clientId: context.client_id, clientSecret: secret ? { reveal: () => secret } : undefined };
let kept: ConnectorClient | undefined;
const keep = async (c: ConnectorClient) => (kept ??= c);
const client = await obtainClient(server, settings, METADATA_DOCUMENT, {
  redirectUri: REDIRECT_URI,
  scope: server.scope,
  keep,
});
const state = randomBytes(16).toString('hex');
const { url: authorizeUrl, verifier } = await authorizationRequest(server, client, REDIRECT_URI, state, server.scope);
const consent = await fetch(authorizeUrl, { redirect: 'manual' });
const back = new URL(consent.headers.get('location') ?? 'http://invalid/');
if (back.searchParams.get('state') !== state) throw new Error('the authorization endpoint returned another state');
const code = back.searchParams.get('code');
if (!code) throw new Error(`the authorization endpoint returned no code (${consent.status})`);
const tokens = await exchangeCode(server, client, { code, verifier, redirectUri: REDIRECT_URI });
const { client: mcp } = await connectUpstream('streamable_http', url, async () => ({
  authorization: `Bearer ${tokens.accessToken}`,
}));
try {
  const { tools } = checkTools('conformance', await listAllTools(mcp, []), []);
  const first = tools[0];
  if (first) process.stdout.write(`${JSON.stringify(await mcp.callTool({ name: first.name, arguments: {} }))}\n`);
} finally {
  await mcp.close();
}
