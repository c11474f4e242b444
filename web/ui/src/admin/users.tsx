// The users page (docs/ui-admin.md "Users"): /api/admin/users with search and paging; deactivate
// or reactivate, promote or demote, reset a password (asked in an in-page dialog; the generated
// one is shown once, here only, with a Copy button).
// Never your own account nor the last active superuser: the server says so with its own code.
import { useState } from 'preact/hooks';
import type { AdminUser, AdminUserList } from '../../../admin-api.js';
import { api } from '../api.js';
import { Dialog } from '../dialog.js';
import { Field, fmtTime, Section, Status, Table, useActions, useLoad, type Column } from './common.js';
import { Form, Loaded, NameCell, Page, RowActions, RowButton } from './forms.js';

const BASE = '/api/admin/users';
const PAGE = 25;

export function UsersPage() {
  const status = useActions();
  const [q, setQ] = useState('');
  const [query, setQuery] = useState('');
  const [offset, setOffset] = useState(0);
  const [shown, setShown] = useState<{ user: string; password: string } | null>(null);
  const [asking, setAsking] = useState<AdminUser | null>(null);
  const [data, failed, reload] = useLoad(
    () =>
      api<AdminUserList>(
        'GET',
        `${BASE}?limit=${PAGE}&offset=${offset}${query ? `&q=${encodeURIComponent(query)}` : ''}`,
      ),
    [query, offset],
  );
  const name = (u: AdminUser) => u.display_name || u.username;
  const change = (u: AdminUser, body: Record<string, boolean>, done: string) =>
    status.run(`change-${u.id}`, async () => {
      await api('PATCH', `${BASE}/${u.id}`, body);
      await reload();
      status.ok(`${name(u)} ${done}.`);
    });
  const reset = (u: AdminUser) =>
    status.run(`reset-${u.id}`, async () => {
      setAsking(null);
      const r = await api<{ password?: string }>('POST', `${BASE}/${u.id}/password`, {});
      setShown({ user: name(u), password: r.password ?? '' });
      await reload(); // a single sign-on only account has a password now
      status.ok(`${name(u)} has a new password; their sessions ended.`);
    });
  const search = () => {
    setOffset(0);
    setQuery(q.trim());
  };
  const intro =
    'Everyone with an account. Deactivating someone ends their sessions and their running chats at once. You cannot change your own account here, and there is always at least one active superuser.';
  return (
    <Page cls="admin users" title="Users" intro={intro}>
      <Form class="row" role="search" onSubmit={search}>
        <Field id="users-q" label="Search by name or e-mail">
          <input id="users-q" type="search" value={q} onInput={(e) => setQ(e.currentTarget.value)} />
        </Field>
        <button type="submit" class="secondary">
          Search
        </button>
      </Form>
      {shown ? <NewPassword shown={shown} onDone={() => setShown(null)} /> : null}
      <Dialog id="users-reset-dialog" title="Reset the password?" open={!!asking} onClose={() => setAsking(null)}>
        {asking && (
          <>
            <p>Reset the password of {name(asking)}? Their sessions end at once; you will see the new password once.</p>
            <div class="row">
              <button type="button" class="danger" id="users-reset-confirm" onClick={() => void reset(asking)}>
                Reset password
              </button>
              <button type="button" class="secondary" onClick={() => setAsking(null)}>
                Cancel
              </button>
            </div>
          </>
        )}
      </Dialog>
      <Section title="Accounts">
        <Status id="users-status" notice={status.notice} />
        <Loaded failed={failed} loading={!data}>
          {data && <UserTable data={data} busy={status.busy} change={change} reset={(u) => setAsking(u)} />}
        </Loaded>
        {data ? (
          <nav class="row compact" aria-label="Pages">
            <span class="muted" id="users-count">
              {data.total === 0 ? 'No users' : `${data.offset + 1}–${data.offset + data.users.length} of ${data.total}`}
            </span>
            <button
              type="button"
              class="secondary"
              disabled={offset === 0}
              onClick={() => setOffset(Math.max(0, offset - PAGE))}
            >
              Previous
            </button>
            <button
              type="button"
              class="secondary"
              id="users-next"
              disabled={data.next_offset === null}
              onClick={() => setOffset(data.next_offset ?? offset)}
            >
              Next
            </button>
          </nav>
        ) : null}
      </Section>
    </Page>
  );
}

interface TableProps {
  data: AdminUserList;
  busy: string | null;
  change(u: AdminUser, body: Record<string, boolean>, done: string): Promise<boolean>;
  reset(u: AdminUser): void;
}

/** Username and e-mail under the name, each once: a synced account's username is its e-mail, and may be the name shown. */
function details(u: AdminUser): string {
  const name = u.display_name || u.username;
  const ids = [...new Set([u.username, u.email ?? 'no e-mail'])].filter((x) => x !== name);
  return [...ids, ...(u.sso_only ? ['single sign-on only (no password)'] : [])].join(' · ');
}

function UserTable({ data, busy, change, reset }: TableProps) {
  /** A button that flips one flag of the user: `text` is what it says while the flag is off, then on; `done` the status afterwards, likewise. */
  const flip = (u: AdminUser, flag: 'is_active' | 'is_superuser', text: [string, string], done: [string, string]) => {
    const v = u[flag];
    const shown = v ? text[1] : text[0];
    return (
      <RowButton
        text={shown}
        label={`${shown} ${u.display_name || u.username}`}
        disabled={busy === `change-${u.id}`}
        onClick={() => void change(u, { [flag]: !v }, v ? done[1] : done[0])}
      />
    );
  };
  const cols: Column<AdminUser>[] = [
    {
      title: 'User',
      render: (u) => (
        <NameCell
          name={u.display_name || u.username}
          badge={u.is_superuser && 'superuser'}
          warning={!u.is_active && 'deactivated'}
        >
          {details(u)}
        </NameCell>
      ),
    },
    { title: 'Last sign-in', render: (u) => fmtTime(u.last_login_at) },
    {
      title: 'Actions',
      render: (u) => (
        <RowActions>
          {flip(u, 'is_active', ['Reactivate', 'Deactivate'], ['is active again', 'is deactivated'])}
          {flip(u, 'is_superuser', ['Promote', 'Demote'], ['is a superuser now', 'is no longer a superuser'])}
          <RowButton
            text="Reset password"
            label={`Reset password of ${u.display_name || u.username}`}
            disabled={busy === `reset-${u.id}`}
            onClick={() => reset(u)}
          />
        </RowActions>
      ),
    },
  ];
  return <Table id="users-table" rows={data.users} rowKey={(u) => u.id} empty="No user matches." cols={cols} />;
}

/** The one-time password, with a Copy button (it is shown only here, only now). */
function NewPassword({ shown, onDone }: { shown: { user: string; password: string }; onDone(): void }) {
  const [copied, setCopied] = useState<boolean | null>(null);
  const copy = () =>
    navigator.clipboard.writeText(shown.password).then(
      () => setCopied(true),
      () => setCopied(false),
    );
  return (
    <div class="banner info" role="alert" id="users-new-password">
      New password for {shown.user}: <code>{shown.password}</code>. It is shown only now: hand it over safely; they can
      change it under Settings.{' '}
      <button type="button" class="secondary small" id="users-copy-password" onClick={() => void copy()}>
        {copied ? 'Copied' : 'Copy'}
      </button>{' '}
      <button type="button" class="secondary small" onClick={onDone}>
        Done
      </button>
      {copied === false && (
        <span class="muted"> The browser did not allow copying: select the password and copy it.</span>
      )}
    </div>
  );
}
