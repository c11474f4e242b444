import t from 'tap';
import { join } from 'node:path';
import { createLogger } from '../../core/index.js';
import { EgressGatewayService } from '../../daemon/host/egress.js';
import { buildProfile, buildRoutes, ROUTE_ENV } from '../../daemon/host/overlay.js';
import { SPREADSHEET_MIME, start as startGoogle } from '../../emulator/google.js';
import { startCredentialProxy, type ProxyDecision } from '../../proxy/index.js';
import { tempDir } from '../helpers/app.js';
import { errorCode, startMcp } from '../helpers/mcp.js';

/**
 * The real workspace tools (tools/, an MCP stdio server) call the Google emulator through the
 * real proxy and egress gateway, the way they do in a sandbox: what the tools build with
 * encodeURIComponent / URLSearchParams must pass the proxy's normalisation unchanged.
 */

const REAL = 'ya29.REAL-proxy-tools-token-0123456789abcdef';

t.test(
  'tool-built URLs with % in the Drive query and / in the sheet name pass, unchanged, with the real token',
  async (t) => {
    const google = await startGoogle({
      acceptTokens: [REAL],
      seed: {
        spreadsheets: [
          {
            id: 'sheet-growth',
            name: 'Growth 50% plan',
            modifiedTime: '2026-11-02T10:00:00.000Z',
            sheets: {
              'a/b': [
                ['Region', 'Share'],
                ['North', '50%'],
                ['South', '25%'],
              ],
              'x\\y': [['k', 'v']],
            },
          },
          {
            id: 'sheet-other',
            name: 'Growth 5 plan',
            modifiedTime: '2026-11-01T10:00:00.000Z',
            sheets: { Sheet1: [['a']] },
          },
        ],
      },
    });
    t.teardown(() => google.close());
    const routes = buildRoutes({
      google: { mailBaseUrl: google.url, sheetsBaseUrl: google.url, driveBaseUrl: google.url },
      model: { provider: 'demo' },
      hasAccountToken: true,
      hasModelKey: false,
    });
    const socketPath = join(tempDir(t, 'airlock-proxy-tools-'), 'egress.sock');
    const gateway = new EgressGatewayService({ log: createLogger({ level: 'silent' }) });
    const egress = await gateway.open('sess-tools', socketPath, {
      userId: 1,
      routes,
      tokens: { MAIL_ACCESS_TOKEN: REAL, SHEETS_ACCESS_TOKEN: REAL, SEARCH_ACCESS_TOKEN: REAL },
    });
    t.teardown(() => egress.close());
    const placeholders: Record<string, string> = {};
    for (const r of routes) placeholders[r.placeholder_env] = `ph-${r.name}-${Math.random().toString(36).slice(2)}`;
    const decisions: ProxyDecision[] = [];
    const proxy = await startCredentialProxy({
      profile: buildProfile('sess-tools', 0, routes),
      getPlaceholder: (n) => placeholders[n],
      egressSocket: socketPath,
      onDecision: (d) => decisions.push(d),
    });
    t.teardown(() => proxy.close());
    const base = `http://127.0.0.1:${proxy.port}`;
    const env: Record<string, string> = { AGENT_ATTACHMENTS_DIR: tempDir(t) };
    for (const r of routes) env[r.base_url_env] = base + r.prefix;
    for (const name of ['sheets', 'search'] as const)
      env[ROUTE_ENV[name].placeholder] = placeholders[ROUTE_ENV[name].placeholder];
    const tools = await startMcp(t, 'tools', env);

    const found = await tools.call('search_spreadsheets', { query: '50%' });
    t.notOk(found.isError, JSON.stringify(found.content));
    t.same(
      found.structuredContent,
      { files: [{ id: 'sheet-growth', name: 'Growth 50% plan', modified_time: '2026-11-02T10:00:00.000Z' }] },
      '% is matched literally',
    );

    const sheet = await tools.call('fetch_sheet', { spreadsheet_id: 'sheet-growth', range: 'a/b!A1:B2' });
    t.notOk(sheet.isError, JSON.stringify(sheet.content));
    t.same(
      sheet.structuredContent,
      {
        range: "'a/b'!A1:B2",
        rows: [
          ['Region', 'Share'],
          ['North', '50%'],
        ],
        truncated: false,
      },
      'Google quotes the title in its answer',
    );
    const quoted = await tools.call('fetch_sheet', { spreadsheet_id: 'sheet-growth', range: "'a/b'!B2:B3" });
    t.same(
      quoted.structuredContent,
      { range: "'a/b'!B2:B3", rows: [['50%'], ['25%']], truncated: false },
      'a quoted title works the same',
    );
    const backslash = await tools.call('fetch_sheet', { spreadsheet_id: 'sheet-growth', range: 'x\\y!A1:B1' });
    t.same(
      backslash.structuredContent,
      { range: "'x\\y'!A1:B1", rows: [['k', 'v']], truncated: false },
      'a backslash in a title (%5C) too',
    );

    // What reached Google is byte for byte what the tools built.
    const q = new URLSearchParams({
      q: `mimeType = '${SPREADSHEET_MIME}' and trashed = false and name contains '50%'`,
      pageSize: '20',
      orderBy: 'modifiedTime desc',
      fields: 'files(id,name,modifiedTime)',
    }).toString();
    t.match(q, /50%25/, 'the tools send %25 in the query');
    t.same(
      google.requests.map((r) => r.target),
      [
        `/drive/v3/files?${q}`,
        `/v4/spreadsheets/sheet-growth/values/${encodeURIComponent('a/b!A1:B2')}`,
        `/v4/spreadsheets/sheet-growth/values/${encodeURIComponent("'a/b'!B2:B3")}`,
        `/v4/spreadsheets/sheet-growth/values/${encodeURIComponent('x\\y!A1:B1')}`,
      ],
    );
    t.match(google.requests[1].target, /\/values\/a%2Fb!A1%3AB2$/, 'the encoded slash stays encoded');
    for (const r of google.requests)
      t.equal(r.headers.authorization, `Bearer ${REAL}`, `${r.path}: the real token, injected by the proxy`);
    const seen = JSON.stringify(google.requests);
    for (const p of Object.values(placeholders)) t.notOk(seen.includes(p), 'no placeholder reached Google');
    t.same(
      decisions.map((d) => [d.route, d.outcome, d.status]),
      [
        ['search', 'forwarded', 200],
        ['sheets', 'forwarded', 200],
        ['sheets', 'forwarded', 200],
        ['sheets', 'forwarded', 200],
      ],
    );

    // The same opening cannot be turned into a way out of the range segment.
    const n = google.requests.length;
    for (const range of ['../../../../search/drive/v3/files', '..\\..\\x', 'a/../../b']) {
      const r = await tools.call('fetch_sheet', { spreadsheet_id: 'sheet-growth', range });
      t.equal(errorCode(r), 'ERR_TOOL_FORBIDDEN', `${range}: refused by the proxy`);
      t.match(JSON.stringify(r.content), /ERR_PROXY_ROUTE_DENIED/);
    }
    const id = await tools.call('fetch_sheet', { spreadsheet_id: 'sheet-growth', range: 'A1' });
    t.notOk(id.isError, 'an ordinary range still works');
    t.equal(google.requests.length, n + 1, 'none of the refused ones reached Google');
  },
);
