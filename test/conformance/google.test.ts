/**
 * Google's official Node clients (@googleapis/gmail, sheets, drive, admin and their
 * google-auth-library; versions in package-lock.json) against our Google emulators, for every
 * call Airlock makes: messages.send with `raw`, spreadsheets.values.get, files.list with the
 * spreadsheet query search_spreadsheets sends, Directory users/groups/members with paging (the
 * service-account JWT flow included), and the OAuth authorization-code (PKCE), refresh and revoke
 * endpoints. Every client points at 127.0.0.1: rootUrl for the APIs, `endpoints` for OAuth, and
 * the JWT flow's fixed token URL redirected by a request interceptor on the client's transporter.
 */
import t from 'tap';
import { gmail, auth as gauth } from '@googleapis/gmail';
import { sheets } from '@googleapis/sheets';
import { drive } from '@googleapis/drive';
import { admin } from '@googleapis/admin';
import { SPREADSHEET_MIME, start as startGoogle } from '../../emulator/google.js';
import { start as startDirectory } from '../../emulator/directory.js';
import { start as startOAuth } from '../../emulator/google-oauth.js';

const GOOGLE_TOKEN_URL = 'https://oauth2.googleapis.com/token';

async function workspace(t: { teardown(fn: () => unknown): void }) {
  const g = await startGoogle({
    acceptTokens: ['ya29.conformance'],
    seed: {
      spreadsheets: [
        {
          id: 'sheet-1',
          name: 'Sample sales 2026',
          modifiedTime: '2026-01-02T00:00:00.000Z',
          sheets: {
            'Sales Q1': [
              ['Month', 'Sales'],
              ['Jan', 10],
              ['Feb', 12],
            ],
            Other: [['x']],
          },
        },
        { id: 'sheet-2', name: 'Older sample', modifiedTime: '2025-01-02T00:00:00.000Z', sheets: { S: [['1']] } },
      ],
      files: [{ id: 'doc-1', name: 'sample notes', mimeType: 'application/vnd.google-apps.document' }],
    },
  });
  t.teardown(() => g.close());
  const client = new gauth.OAuth2();
  client.setCredentials({ access_token: 'ya29.conformance' });
  return { g, client, rootUrl: `${g.url}/` };
}

t.test('gmail users.messages.send with raw', async (t) => {
  const { g, client, rootUrl } = await workspace(t);
  const api = gmail({ version: 'v1', auth: client, rootUrl });
  const mime = [
    'From: me@example.test',
    'To: Ana <ana@example.test>',
    'Subject: =?UTF-8?B?' + Buffer.from('Grüße').toString('base64') + '?=',
    'Content-Type: text/plain; charset=UTF-8',
    '',
    'Hallo, Welt',
  ].join('\r\n');
  const r = await api.users.messages.send({
    userId: 'me',
    requestBody: { raw: Buffer.from(mime).toString('base64url') },
  });
  t.equal(r.status, 200);
  t.match(r.data, { id: /^[0-9a-f]+$/, threadId: r.data.id, labelIds: ['SENT'] });
  t.equal(g.mailbox.length, 1);
  t.same(g.mailbox[0].to, ['ana@example.test']);
  t.equal(g.mailbox[0].subject, 'Grüße');
  const req = g.requests[g.requests.length - 1];
  t.equal(req.path, '/gmail/v1/users/me/messages/send');
  t.equal(req.headers.authorization, 'Bearer ya29.conformance');

  // The client's typed error for Google's error envelope.
  const bad = await api.users.messages.send({ userId: 'me', requestBody: { raw: '' } }).catch((e) => e);
  t.equal(bad.status, 400);
  t.match(bad.response?.data?.error, {
    code: 400,
    status: 'INVALID_ARGUMENT',
    errors: [{ reason: 'invalidArgument', domain: 'global' }],
  });
  const expired = new gauth.OAuth2();
  expired.setCredentials({ access_token: 'ya29.expired' });
  const e401 = await gmail({ version: 'v1', auth: expired, rootUrl })
    .users.messages.send({ userId: 'me', requestBody: { raw: 'eA' } })
    .catch((e) => e);
  t.equal(e401.status, 401);
  t.match(e401.response?.data?.error, { status: 'UNAUTHENTICATED', errors: [{ reason: 'authError' }] });
});

t.test('sheets spreadsheets.values.get with an A1 range naming a tab', async (t) => {
  const { client, rootUrl } = await workspace(t);
  const api = sheets({ version: 'v4', auth: client, rootUrl });
  const r = await api.spreadsheets.values.get({ spreadsheetId: 'sheet-1', range: "'Sales Q1'!A1:B3" });
  t.same(r.data, {
    range: "'Sales Q1'!A1:B3",
    majorDimension: 'ROWS',
    values: [
      ['Month', 'Sales'],
      ['Jan', '10'],
      ['Feb', '12'],
    ],
  });
  const first = await api.spreadsheets.values.get({ spreadsheetId: 'sheet-1', range: 'A1:Z200' });
  t.equal(first.data.values?.length, 3, 'a range without a tab reads the first tab');
  const missing = await api.spreadsheets.values.get({ spreadsheetId: 'nope', range: 'A1' }).catch((e) => e);
  t.equal(missing.status, 404);
});

t.test('drive files.list with the spreadsheet query search_spreadsheets sends', async (t) => {
  const { client, rootUrl } = await workspace(t);
  const api = drive({ version: 'v3', auth: client, rootUrl });
  const r = await api.files.list({
    q: `mimeType = '${SPREADSHEET_MIME}' and trashed = false and name contains 'sample'`,
    pageSize: 20,
    orderBy: 'modifiedTime desc',
    fields: 'files(id,name,modifiedTime)',
  });
  t.same(
    r.data.files?.map((f) => [f.id, f.name]),
    [
      ['sheet-1', 'Sample sales 2026'],
      ['sheet-2', 'Older sample'],
    ],
    'spreadsheets only, newest first',
  );
  const quoted = await api.files.list({ q: `mimeType = '${SPREADSHEET_MIME}' and name contains 'O\\'Brien'` });
  t.same(quoted.data.files, [], 'an escaped quote parses');
});

t.test('admin directory users, groups and members with paging, through the service-account JWT flow', async (t) => {
  const dir = await startDirectory({ audience: GOOGLE_TOKEN_URL });
  t.teardown(() => dir.close());
  dir.seed({ users: 5, groups: 3, memberships: 7 });
  const sa = dir.serviceAccount;
  const jwt = new gauth.JWT({
    email: sa.client_email,
    key: sa.private_key,
    keyId: sa.private_key_id,
    subject: `admin@${dir.domain}`,
    scopes: [
      'https://www.googleapis.com/auth/admin.directory.user.readonly',
      'https://www.googleapis.com/auth/admin.directory.group.readonly',
      'https://www.googleapis.com/auth/admin.directory.group.member.readonly',
    ],
  });
  // The JWT flow posts to Google's fixed token URL: send it to the emulator instead.
  jwt.transporter.interceptors.request.add({
    resolved: async (cfg) => {
      if (String(cfg.url).startsWith(GOOGLE_TOKEN_URL)) cfg.url = new URL(dir.tokenUrl);
      return cfg;
    },
  });
  const api = admin({ version: 'directory_v1', auth: jwt, rootUrl: `${dir.url}/` });

  const users: string[] = [];
  let pageToken: string | undefined;
  let pages = 0;
  do {
    const r = await api.users.list({ customer: 'my_customer', maxResults: 2, pageToken, orderBy: 'email' });
    users.push(...(r.data.users ?? []).map((u) => u.primaryEmail!));
    pageToken = r.data.nextPageToken ?? undefined;
    pages++;
  } while (pageToken);
  t.equal(pages, 3, 'five users in pages of two');
  t.same(users.sort(), dir.users.map((u) => u.primaryEmail).sort());
  const u0 = (await api.users.list({ customer: 'my_customer', maxResults: 1 })).data.users![0];
  t.match(u0, {
    kind: 'admin#directory#user',
    id: String,
    primaryEmail: String,
    name: { fullName: String },
    suspended: Boolean,
  });

  const groups = await api.groups.list({ customer: 'my_customer', maxResults: 2 });
  t.equal(groups.data.groups?.length, 2);
  t.ok(groups.data.nextPageToken);
  const rest = await api.groups.list({ customer: 'my_customer', maxResults: 2, pageToken: groups.data.nextPageToken! });
  t.equal(rest.data.groups?.length, 1);
  const all = [...groups.data.groups!, ...rest.data.groups!];
  let members = 0;
  for (const g of all) {
    const m = await api.members.list({ groupKey: g.id!, maxResults: 200 });
    members += m.data.members?.length ?? 0;
    for (const x of m.data.members ?? [])
      t.match(x, { kind: 'admin#directory#member', email: String, role: /^(MEMBER|MANAGER|OWNER)$/, type: 'USER' });
  }
  t.equal(members, 7);
  const none = await api.members.list({ groupKey: 'no-such-group' }).catch((e) => e);
  t.equal(none.status, 404);
  t.ok(
    dir.requests.some((r) => r.path === '/token'),
    'the token came from the emulator',
  );
});

t.test('OAuth: authorization code with PKCE, refresh, revoke (google-auth-library OAuth2Client)', async (t) => {
  const o = await startOAuth({
    clientId: 'client-1.apps.googleusercontent.com',
    clientSecret: 'secret-1',
    email: 'ana@example.test',
  });
  t.teardown(() => o.close());
  const redirectUri = 'http://127.0.0.1:9/callback';
  const client = new gauth.OAuth2({
    clientId: 'client-1.apps.googleusercontent.com',
    clientSecret: 'secret-1',
    redirectUri,
    endpoints: { oauth2AuthBaseUrl: o.authorizeUrl, oauth2TokenUrl: o.tokenUrl, oauth2RevokeUrl: o.revokeUrl },
  });
  const { codeVerifier, codeChallenge } = await client.generateCodeVerifierAsync();
  const url = client.generateAuthUrl({
    access_type: 'offline',
    scope: ['openid', 'email', 'https://www.googleapis.com/auth/gmail.send'],
    code_challenge: codeChallenge,
    code_challenge_method: 'S256' as never,
    state: 'st-1',
  });
  const consent = await fetch(url, { redirect: 'manual' });
  t.equal(consent.status, 302);
  const back = new URL(consent.headers.get('location')!);
  t.equal(back.searchParams.get('state'), 'st-1');
  const { tokens } = await client.getToken({ code: back.searchParams.get('code')!, codeVerifier });
  t.match(tokens, { access_token: /^ya29\./, refresh_token: /^1\/\//, token_type: 'Bearer', expiry_date: Number });
  client.setCredentials(tokens);

  const refreshed = await client.refreshAccessToken();
  t.match(refreshed.credentials.access_token, /^ya29\./);
  t.not(refreshed.credentials.access_token, tokens.access_token, 'a new access token');

  const revoked = await client.revokeToken(tokens.refresh_token!);
  t.equal(revoked.status, 200);
  t.ok(o.revoked.includes(tokens.refresh_token!), 'the emulator revoked the grant');
  const again = await client.refreshAccessToken().catch((e) => e);
  t.match(again.response?.data, { error: 'invalid_grant' }, 'a revoked grant does not refresh');
});
