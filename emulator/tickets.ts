import express, { type Request, type Response } from 'express';
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import { z } from 'zod';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { requireBearerAuth } from '@modelcontextprotocol/sdk/server/auth/middleware/bearerAuth.js';
import {
  getOAuthProtectedResourceMetadataUrl,
  mcpAuthMetadataRouter,
} from '@modelcontextprotocol/sdk/server/auth/router.js';
import { InvalidTokenError } from '@modelcontextprotocol/sdk/server/auth/errors.js';
import type { AuthInfo } from '@modelcontextprotocol/sdk/server/auth/types.js';
import type { OAuthMetadata } from '@modelcontextprotocol/sdk/shared/auth.js';
import { startTicketsAuth, type TicketsAuth, type TicketsClient } from './tickets-auth.js';

/** One ticket of the demo tracker. */
export interface Ticket {
  id: number;
  title: string;
  body: string;
  /** The account (at the tracker's authorization server) that filed it. */
  reporter: string;
  created_at: string;
}

export interface TicketsOptions {
  /** username → password at the tracker's authorization server. */
  users: Record<string, string>;
  clients?: TicketsClient[];
  accessTokenTtlS?: number;
  /** Open dynamic client registration at the authorization server (RFC 7591). */
  dynamicRegistration?: boolean;
}

export interface TicketsEmulator {
  /** The MCP endpoint (Streamable HTTP): the protected resource. */
  url: string;
  auth: TicketsAuth;
  tickets: Ticket[];
  /** Bearer tokens the MCP server accepted, in order (tests check which token each call carried). */
  acceptedTokens: string[];
  close(): Promise<void>;
}

/** The tracker's tools, on a new SDK server per request (stateless Streamable HTTP). */
function ticketsServer(tickets: Ticket[], auth: AuthInfo | undefined): McpServer {
  const server = new McpServer({ name: 'acme-tickets', version: '1.0.0' }, { capabilities: { tools: {} } });
  const who = String(auth?.extra?.sub ?? 'unknown');
  server.registerTool(
    'create_ticket',
    {
      description: 'File a ticket in Acme Tickets. Give a short title and, optionally, a body.',
      inputSchema: { title: z.string().min(1).max(200), body: z.string().max(4000).optional() },
    },
    async (args) => {
      const t: Ticket = {
        id: tickets.length + 1,
        title: args.title,
        body: args.body ?? '',
        reporter: who,
        created_at: new Date().toISOString(),
      };
      tickets.push(t);
      return {
        content: [{ type: 'text', text: `Filed ticket #${t.id}: ${t.title}` }],
        structuredContent: { ticket: t },
      };
    },
  );
  server.registerTool(
    'list_tickets',
    {
      description: 'List the tickets in Acme Tickets, newest first.',
      inputSchema: { limit: z.number().int().min(1).max(100).optional() },
      annotations: { readOnlyHint: true },
    },
    async (args) => {
      const list = [...tickets].reverse().slice(0, args.limit ?? 20);
      return {
        content: [
          {
            type: 'text',
            text: list.length
              ? list.map((t) => `#${t.id} ${t.title} (by ${t.reporter})`).join('\n')
              : 'No tickets yet.',
          },
        ],
        structuredContent: { tickets: list },
      };
    },
  );
  return server;
}

/**
 * Acme Tickets, the demo connector (docs/connectors.md): a small ticket tracker as a real MCP
 * server built with the official SDK (Streamable HTTP, stateless: a transport per request),
 * behind the SDK's bearer auth and protected-resource metadata (RFC 9728), with its own
 * authorization server (emulator/tickets-auth.ts, oidc-provider). Access tokens are opaque and
 * checked against the authorization server's store, so a revoked one stops working at once.
 */
export async function startTickets(o: TicketsOptions): Promise<TicketsEmulator> {
  const app = express();
  app.disable('x-powered-by');
  const http: Server = await new Promise((resolve) => {
    const s = app.listen(0, '127.0.0.1', () => resolve(s));
  });
  const url = `http://127.0.0.1:${(http.address() as AddressInfo).port}/mcp`;
  const auth = await startTicketsAuth({
    resource: url,
    users: o.users,
    clients: o.clients,
    accessTokenTtlS: o.accessTokenTtlS,
    dynamicRegistration: o.dynamicRegistration,
  });
  const asMetadata = (await (await fetch(`${auth.url}/.well-known/openid-configuration`)).json()) as OAuthMetadata;
  const tickets: Ticket[] = [];
  const acceptedTokens: string[] = [];

  app.use(
    mcpAuthMetadataRouter({
      oauthMetadata: asMetadata,
      resourceServerUrl: new URL(url),
      scopesSupported: ['tickets'],
      resourceName: 'Acme Tickets',
    }),
  );
  const verifier = {
    async verifyAccessToken(token: string): Promise<AuthInfo> {
      const at = await auth.provider.AccessToken.find(token);
      if (!at || at.isExpired) throw new InvalidTokenError('unknown, revoked or expired token');
      acceptedTokens.push(token);
      const aud = Array.isArray(at.aud) ? at.aud[0] : at.aud;
      return {
        token,
        clientId: at.clientId,
        scopes: (at.scope ?? '').split(' ').filter(Boolean),
        expiresAt: at.exp,
        resource: aud ? new URL(aud) : undefined,
        extra: { sub: at.accountId },
      };
    },
  };
  const bearer = requireBearerAuth({
    verifier,
    requiredScopes: ['tickets'],
    resourceMetadataUrl: getOAuthProtectedResourceMetadataUrl(new URL(url)),
    expectedResource: new URL(url),
  });
  app.post('/mcp', express.json({ limit: '256kb' }), bearer, async (req: Request, res: Response) => {
    const server = ticketsServer(tickets, req.auth);
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
    res.on('close', () => void transport.close().then(() => server.close()));
    await server.connect(transport);
    await transport.handleRequest(req, res, req.body);
  });
  // Stateless: no SSE stream to resume and no session to end.
  app.all(
    '/mcp',
    (_req, res) =>
      void res
        .status(405)
        .set('allow', 'POST')
        .json({ jsonrpc: '2.0', error: { code: -32000, message: 'Method not allowed.' }, id: null }),
  );

  return {
    url,
    auth,
    tickets,
    acceptedTokens,
    async close() {
      await new Promise<void>((resolve) => {
        http.close(() => resolve());
        http.closeAllConnections();
      });
      await auth.close();
    },
  };
}
