// The walks of docs/architecture.md "Rooms": a mail from send_email to the mailbox, a chat turn,
// a token rotation. Each walk is a few chains; a chain is what one action does, in order: each
// step is a function the step before calls (`via` names the seam it is called through when that
// is not the function's own name) or a message it sends (`wire`: a word both ends spell, such as
// the message type). A room is a top folder, or one folder under domain/ or daemon/; `core/` is
// the shared library of every room and counts as a room of its own.
//
// `node lint/journeys.js` (npm run journeys) prints each chain with its rooms and checks that:
// every step's function is defined in its file; every link is written at both ends; and no chain
// enters a room twice (a room is one run of consecutive steps). test/unit/journeys.test.ts runs it
// and plants broken walks to show each check fires.
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** @typedef {{ file: string, fn: string, does: string, via?: string, wire?: string }} Step */
/** @typedef {{ name: string, chains: { name: string, steps: Step[] }[] }} Journey */

/** @type {Journey[]} */
export const JOURNEYS = [
  {
    name: 'A mail, from send_email to the mailbox',
    chains: [
      {
        name: 'the send is held and decided on the host',
        steps: [
          {
            file: 'tools/server.ts',
            fn: 'registerSendEmail',
            does: 'send_email builds the MIME message and posts it to its mail route',
          },
          { file: 'tools/http.ts', fn: 'callUpstream', does: 'one HTTP call with the placeholder and the call id' },
          {
            file: 'proxy/server.ts',
            fn: 'startCredentialProxy',
            wire: 'CALL_ID_HEADER',
            does: 'the in-sandbox proxy admits placeholder, method and path; a blocked send stops here',
          },
          { file: 'proxy/forward.ts', fn: 'forward', does: 'the admitted bytes go over the egress socket' },
          {
            file: 'daemon/host/egress.ts',
            fn: '#decideMail',
            wire: 'CALL_ID_HEADER',
            does: 'the gateway reads the exact bytes again and holds the send',
          },
          {
            file: 'daemon/runtime/session-start.ts',
            fn: 'gatewayHooks',
            via: 'hold',
            does: "the session's hook adds its user, turn and calls",
          },
          { file: 'daemon/runtime/sandbox-audit.ts', fn: 'mailHold', does: 'the session asks its auditor' },
          { file: 'domain/mail/gate.ts', fn: 'hold', does: 'the approval workflow: one decision per hold' },
          { file: 'domain/mail/gate.ts', fn: 'judgeHold', does: 'policy now, repeats, the hourly slot' },
          { file: 'domain/mail/store.ts', fn: 'reserveHold', does: 'the slot and the hold row, atomically' },
          {
            file: 'domain/mail/gate.ts',
            fn: 'ask',
            does: 'the card into the turn; waits for the user, the timeout or the turn end',
          },
        ],
      },
      {
        name: "the user's answer",
        steps: [
          {
            file: 'web/chat-session-routes.ts',
            fn: 'chatSessionRoutes',
            does: 'POST …/approvals/:id parses and authorises',
          },
          {
            file: 'daemon/host/connector-approvals.ts',
            fn: 'approvalDecider',
            via: 'decide',
            does: "the chat's one decider: a connector call, else a mail send",
          },
          {
            file: 'domain/mail/gate.ts',
            fn: 'decide',
            does: 'settles the waiting hold; the decision is written and audited',
          },
        ],
      },
      {
        name: 'to the mailbox',
        steps: [
          {
            file: 'daemon/host/egress.ts',
            fn: '#handle',
            does: 'an allowed send goes on with the real token injected',
          },
          { file: 'daemon/host/egress-upstream.ts', fn: 'exchange', does: 'the upstream exchange (Gmail)' },
        ],
      },
    ],
  },
  {
    name: 'A chat turn',
    chains: [
      {
        name: 'the prompt goes down',
        steps: [
          {
            file: 'web/chat-routes.ts',
            fn: 'chatRoutes',
            does: 'POST /api/chat/messages parses, authorises and streams',
          },
          { file: 'domain/chat/turn-service.ts', fn: 'start', does: 'places and stores the turn' },
          { file: 'domain/chat/turn-service.ts', fn: 'run', does: 'runs it over the TurnRunner' },
          {
            file: 'daemon/runtime/session-manager.ts',
            fn: 'runTurn',
            does: "the session's warm sandbox, or a new one",
          },
          { file: 'daemon/runtime/turn.ts', fn: 'turnIn', does: 'the turn in one sandbox, with its backstop' },
          {
            file: 'supervisor/supervisor.ts',
            fn: 'prompt',
            wire: "'prompt'",
            does: 'the supervisor takes the prompt on the control socket',
          },
          { file: 'agent/main.ts', fn: 'startTurn', wire: "'prompt'", does: 'the agent child reads it on stdin' },
          { file: 'agent/loop.ts', fn: 'runTurn', does: 'the model and the tools' },
        ],
      },
      {
        name: 'the events come up',
        steps: [
          { file: 'agent/main.ts', fn: 'startTurn', does: 'each event is a line on stdout' },
          {
            file: 'supervisor/supervisor.ts',
            fn: 'broadcast',
            wire: "'event'",
            does: 'forwarded on the control socket',
          },
          {
            file: 'daemon/runtime/sandbox-client.ts',
            fn: 'onEvent',
            wire: "'event'",
            does: 'read and checked on the host',
          },
          { file: 'daemon/runtime/turn.ts', fn: 'turnIn', via: 'onEvent', does: "handed to the turn's onEvent" },
          { file: 'domain/chat/turn-recorder.ts', fn: 'onEvent', does: 'numbered, stored in order' },
          { file: 'domain/chat/live-turns.ts', fn: 'push', does: 'to every reader of the turn' },
        ],
      },
      {
        name: 'a reader follows it',
        steps: [
          { file: 'web/chat-routes.ts', fn: 'chatRoutes', does: 'one NDJSON line per event' },
          { file: 'domain/chat/turn-service.ts', fn: 'follow', does: 'replay, then follow live' },
          { file: 'domain/chat/live-turns.ts', fn: 'follow', does: 'the events by seq' },
        ],
      },
    ],
  },
  {
    name: 'A token rotation',
    chains: [
      {
        name: 'a session is registered',
        steps: [
          {
            file: 'daemon/runtime/sessions.ts',
            fn: 'add',
            does: 'a sandbox took `start` (or was adopted): the session is live',
          },
          {
            file: 'daemon/serve.ts',
            fn: 'sessionHooks',
            via: 'onSessionLive',
            does: 'the composition root wires the hook',
          },
          { file: 'daemon/host/tokens.ts', fn: 'track', does: "the token service keeps the session's gateway" },
        ],
      },
      {
        name: 'a due token is refreshed and replaced',
        steps: [
          { file: 'daemon/host/tokens.ts', fn: 'rotateDue', does: 'every 30 s: accounts whose token has ≤ 300 s left' },
          { file: 'daemon/host/tokens.ts', fn: '#refreshNow', does: 'one refresh_token grant per account' },
          { file: 'daemon/host/tokens.ts', fn: 'pushToUser', does: "to each of the account's live sessions" },
          {
            file: 'daemon/host/egress.ts',
            fn: 'setTokens',
            does: "replaced in the session's egress gateway; nothing enters the sandbox",
          },
        ],
      },
      {
        name: 'the grant',
        steps: [
          { file: 'daemon/host/tokens.ts', fn: '#refreshNow', does: 'asks the token endpoint' },
          { file: 'core/accounts.ts', fn: 'tokenRequest', via: 'refresh', does: 'the OAuth token-endpoint client' },
        ],
      },
      {
        name: 'the new token is kept',
        steps: [
          { file: 'daemon/host/tokens.ts', fn: '#refreshNow', does: 'saves it before pushing it' },
          { file: 'domain/accounts.ts', fn: 'saveAccess', does: 'encrypted at rest' },
        ],
      },
    ],
  },
];

/** The room of a repository path: its top folder, or one folder under domain/ or daemon/ (a file directly there is the folder's own). */
export function roomOf(file) {
  const parts = file.split('/');
  return (parts[0] === 'domain' || parts[0] === 'daemon') && parts.length > 2 ? `${parts[0]}/${parts[1]}` : parts[0];
}

const escape = (s) => s.replace(/[.*+?^${}()|[\]\\#]/g, '\\$&');

/** Whether `text` defines `fn`: a function, method, arrow or object member of that name. */
function defines(text, fn) {
  const name = escape(fn);
  return new RegExp(
    `(function\\s+${name}\\b|^\\s*(?:(?:export|private|public|static|async|readonly)\\s+)*\\*?\\s*${name}\\s*(?:<[^>]*>)?\\s*[(=:])`,
    'm',
  ).test(text);
}

/** Whether `text` names `word` (not as part of a longer name). */
function names(text, word) {
  return new RegExp(`(^|[^\\w$])${escape(word)}($|[^\\w$])`).test(text);
}

/** Every problem of `journeys` against the files under `root`, as sentences; none: the walks hold. */
export function checkJourneys(journeys, root) {
  const problems = [];
  const read = (f) => (existsSync(join(root, f)) ? readFileSync(join(root, f), 'utf8') : undefined);
  for (const j of journeys) {
    for (const c of j.chains) {
      const where = `${j.name} › ${c.name}`;
      const seen = [];
      c.steps.forEach((s, i) => {
        const text = read(s.file);
        if (text === undefined) return problems.push(`${where}: step ${i + 1}: ${s.file} does not exist`);
        if (!defines(text, s.fn)) problems.push(`${where}: step ${i + 1}: ${s.file} defines no ${s.fn}`);
        const room = roomOf(s.file);
        if (seen.at(-1) !== room) {
          if (seen.includes(room))
            problems.push(
              `${where}: step ${i + 1} (${s.file}) enters ${room}/ a second time (${[...seen, room].join(' → ')})`,
            );
          seen.push(room);
        }
        if (i === 0) return;
        const prev = c.steps[i - 1];
        const before = read(prev.file) ?? '';
        const word = s.wire ?? s.via ?? s.fn.replace(/^#/, '');
        if (!names(before, word))
          problems.push(`${where}: step ${i + 1}: ${prev.file} never names ${word}, the link to ${s.file}`);
        if ((s.wire || s.via) && !names(text, word))
          problems.push(`${where}: step ${i + 1}: ${s.file} never names ${word}, the link from ${prev.file}`);
      });
    }
  }
  return problems;
}

/** The walks as text: one line per step, its room first. */
export function describeJourneys(journeys) {
  const lines = [];
  for (const j of journeys) {
    lines.push(`${j.name}`);
    for (const c of j.chains) {
      lines.push(`  ${c.name}: ${[...new Set(c.steps.map((s) => roomOf(s.file)))].join(' → ')}`);
      for (const s of c.steps)
        lines.push(`    ${roomOf(s.file).padEnd(16)} ${`${s.file} ${s.fn}`.padEnd(56)} ${s.does}`);
    }
  }
  return lines.join('\n');
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const root = join(dirname(fileURLToPath(import.meta.url)), '..');
  console.log(describeJourneys(JOURNEYS));
  const problems = checkJourneys(JOURNEYS, root);
  for (const p of problems) console.error(`journeys: ${p}`);
  console.log(problems.length ? `\n${problems.length} problem(s)` : '\nevery chain crosses each room once');
  process.exitCode = problems.length ? 1 : 0;
}
