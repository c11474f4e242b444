// Shared pieces of the admin pages: labelled fields, status areas with the server's error as
// people should see it, actions that keep keyboard focus, tables, clipped long text, user fields.
import type { ComponentChildren, JSX } from 'preact';
import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import type { AdminUser, AdminUserList } from '../../../admin-api.js';
import { api, ApiError } from '../api.js';
import { ErrorText } from '../error-text.js';
import { focusKey, focusLost, rendered, restoreFocus } from './focus.js';

export function fmtTime(s: string | null | undefined): string {
  if (!s) return '';
  const d = new Date(s);
  return Number.isNaN(d.getTime()) ? String(s) : d.toLocaleString();
}

/** A list from "a, b, c": blank gives null when `nullable` (no restriction), else []. */
export function parseList(text: string, nullable: true): string[] | null;
export function parseList(text: string, nullable?: false): string[];
export function parseList(text: string, nullable = false): string[] | null {
  const items = text
    .split(/[,\n]/)
    .map((s) => s.trim())
    .filter(Boolean);
  return items.length ? items : nullable ? null : [];
}

/** A labelled control: the label's for= is `id`; a hint is linked with aria-describedby (see hintFor). */
export function Field({
  id,
  label,
  hint,
  children,
}: {
  id: string;
  label: string;
  hint?: ComponentChildren;
  children: ComponentChildren;
}) {
  return (
    <div class="field">
      <label for={id}>{label}</label>
      {children}
      {hint ? (
        <div class="hint muted" id={`${id}-hint`}>
          {hint}
        </div>
      ) : null}
    </div>
  );
}

/** The aria-describedby of a control whose Field has a hint. */
export const hintFor = (id: string) => `${id}-hint`;

export function Checkbox({
  id,
  label,
  checked,
  onChange,
  value,
}: {
  id: string;
  label: string;
  checked: boolean;
  onChange(v: boolean): void;
  value?: string;
}) {
  return (
    <div class="check">
      <input
        type="checkbox"
        id={id}
        value={value}
        checked={checked}
        onChange={(e) => onChange(e.currentTarget.checked)}
      />
      <label for={id}>{label}</label>
    </div>
  );
}

export function Select({
  options,
  value,
  onChange,
  ...rest
}: { options: [string, string][]; value: string; onChange(v: string): void } & Omit<
  JSX.HTMLAttributes<HTMLSelectElement>,
  'onChange' | 'value'
>) {
  return (
    <select {...rest} value={value} onChange={(e) => onChange(e.currentTarget.value)}>
      {options.map(([v, text]) => (
        <option key={v} value={v}>
          {text}
        </option>
      ))}
    </select>
  );
}

/** Long text in a cell: wraps, clamped to a few lines by its class, the whole text as a tooltip. */
export function Clip({ text, cls = 'clip' }: { text: string | null | undefined; cls?: string }) {
  const s = text ?? '';
  return (
    <span class={cls} title={s}>
      {s}
    </span>
  );
}

export function Section({
  title,
  children,
  headingId,
}: {
  title: string;
  children?: ComponentChildren;
  headingId?: string;
}) {
  const id = headingId ?? `h-${title.toLowerCase().replace(/[^a-z0-9]+/g, '-')}`;
  return (
    <section class="panel" aria-labelledby={id}>
      <h2 id={id}>{title}</h2>
      {children}
    </section>
  );
}

export function PageTitle({ title, intro }: { title: string; intro?: string }) {
  return (
    <>
      <h1>{title}</h1>
      {intro ? <p class="muted">{intro}</p> : null}
    </>
  );
}

export function Json({ value }: { value: unknown }) {
  return <pre>{JSON.stringify(value, null, 2)}</pre>;
}

export interface Column<T> {
  title: string;
  render(row: T): ComponentChildren;
}

/** A table of `rows`; `rowKey` keeps each row's elements (and focus) across re-reads. */
export function Table<T>({
  id,
  rows,
  cols,
  empty = 'Nothing yet.',
  rowKey,
}: {
  id?: string;
  rows: T[];
  cols: Column<T>[];
  empty?: string;
  rowKey(r: T): string | number;
}) {
  return (
    <table id={id}>
      <thead>
        <tr>
          {cols.map((c) => (
            <th scope="col" key={c.title}>
              {c.title}
            </th>
          ))}
        </tr>
      </thead>
      <tbody>
        {rows.length ? (
          rows.map((r) => (
            <tr key={rowKey(r)}>
              {cols.map((c) => (
                <td key={c.title} data-label={c.title}>
                  {c.render(r)}
                </td>
              ))}
            </tr>
          ))
        ) : (
          <tr>
            <td colSpan={cols.length} class="muted">
              {empty}
            </td>
          </tr>
        )}
      </tbody>
    </table>
  );
}

/** The server's error as people should see it: message, code, status, the field, and every problem when there are several. */
export function ErrorBox({ error }: { error: unknown }) {
  if (!(error instanceof ApiError)) {
    return (
      <div class="banner error" role="alert">
        {error instanceof Error ? error.message : String(error)}
      </div>
    );
  }
  const d = error.detail;
  const problems = Array.isArray(d.problems) && d.problems.length > 1 ? d.problems : [];
  return (
    <div class="banner error" role="alert">
      <strong>
        <ErrorText
          code={error.code}
          message={error.message}
          extra={error.status ? <span class="muted"> (HTTP {error.status})</span> : null}
        />
      </strong>
      {d.field ? (
        <div>
          Field: <code>{d.field}</code>
        </div>
      ) : null}
      {problems.length ? (
        <ul class="problems">
          {problems.map((p, i) => (
            <li key={i}>{p.message}</li>
          ))}
        </ul>
      ) : null}
    </div>
  );
}

export type Notice = { kind: 'ok'; text: string } | { kind: 'error'; error: unknown } | null;

/** A status area: the last action's confirmation or error. */
export function Status({ id, notice }: { id: string; notice: Notice }) {
  return (
    <div class="status-area" id={id} aria-live="polite">
      {notice?.kind === 'ok' ? (
        <div class="banner info" role="status">
          {notice.text}
        </div>
      ) : notice?.kind === 'error' ? (
        <ErrorBox error={notice.error} />
      ) : null}
    </div>
  );
}

/** Where the admin page lives: focus is put back inside it. */
const pageRoot = (): Element => document.getElementById('main') ?? document.body;

export interface Actions {
  notice: Notice;
  setNotice(n: Notice): void;
  ok(text: string): void;
  /** The action running now (its key), so its button is disabled. */
  busy: string | null;
  /** Run `fn` as action `key`: errors go to the status area; afterwards focus is where the user was, or nearby. */
  run(key: string, fn: () => Promise<unknown>): Promise<boolean>;
}

/** One status area and the actions reporting to it. */
export function useActions(): Actions {
  const [notice, setNotice] = useState<Notice>(null);
  const [busy, setBusy] = useState<string | null>(null);
  const run = useCallback(async (key: string, fn: () => Promise<unknown>) => {
    const focused = document.activeElement;
    const where = focusKey(focused);
    setBusy(key);
    setNotice(null);
    let ok = true;
    try {
      await fn();
    } catch (e) {
      ok = false;
      setNotice({ kind: 'error', error: e });
    } finally {
      setBusy(null);
      await rendered();
      // A disabled button dropped focus, or the focused control went with a deleted row.
      if (focusLost()) {
        if (focused instanceof HTMLElement && focused.isConnected) focused.focus();
        if (focusLost()) restoreFocus(pageRoot(), where);
      }
    }
    return ok;
  }, []);
  const ok = useCallback((text: string) => setNotice({ kind: 'ok', text }), []);
  return { notice, setNotice, ok, busy, run };
}

/** Load once when shown: [data, error, reload]. */
export function useLoad<T>(
  load: () => Promise<T>,
  deps: unknown[] = [],
): [T | null, unknown, () => Promise<void>, (v: T) => void] {
  const [data, setData] = useState<T | null>(null);
  const [error, setError] = useState<unknown>(null);
  const loader = useRef(load);
  loader.current = load;
  const reload = useCallback(async () => {
    const v = await loader.current();
    setError(null);
    setData(v);
  }, []);
  useEffect(() => {
    let live = true;
    setData(null);
    loader
      .current()
      .then((v) => live && (setError(null), setData(v)))
      .catch((e: unknown) => live && setError(e));
    return () => {
      live = false;
    };
  }, deps);
  return [data, error, reload, setData];
}

export interface UserPicker {
  value: string;
  setValue(v: string): void;
  /** The input and its suggestions. */
  field: JSX.Element;
  /** The user's id (null when empty and optional), or a plain error when the text names nobody or several. */
  resolve(text?: string): Promise<number | null>;
}

const searchUsers = (q: string, limit: number) =>
  api<AdminUserList>('GET', `/api/admin/users?${new URLSearchParams({ q, limit: String(limit) })}`);

/**
 * A user field: type a username, e-mail or id (all digits = an id). Suggestions come from
 * GET /api/admin/users as you type, in a native <datalist> (keyboard and screen readers work).
 */
export function useUserPicker(id: string, opts: { required?: boolean; label?: string } = {}): UserPicker {
  const [value, setValueState] = useState('');
  const [options, setOptions] = useState<AdminUser[]>([]);
  const [invalid, setInvalid] = useState(false);
  const current = useRef('');
  const shown = useRef<string | null>(null);
  const timer = useRef<ReturnType<typeof setTimeout>>();
  useEffect(() => () => clearTimeout(timer.current), []);
  const setValue = useCallback((v: string) => {
    current.current = v;
    setValueState(v);
    setInvalid(false);
  }, []);
  const suggest = async () => {
    const q = current.current.trim();
    if (q === shown.current || /^[0-9]+$/.test(q)) return;
    try {
      const r = await searchUsers(q, 20);
      if (current.current.trim() !== q) return;
      shown.current = q;
      setOptions(r.users);
    } catch {
      // Suggestions are a convenience; the field still takes a username or an id.
    }
  };
  const resolve = async (text?: string): Promise<number | null> => {
    const v = (text ?? current.current).trim();
    if (!v) {
      if (opts.required) throw new Error('Name a user (username, e-mail or id).');
      return null;
    }
    if (/^[0-9]+$/.test(v)) return Number(v);
    const lc = v.toLowerCase();
    const r = await searchUsers(v, 200);
    const exact = r.users.filter((u) => u.username.toLowerCase() === lc || (u.email ?? '').toLowerCase() === lc);
    if (exact.length === 1) return exact[0].id;
    setInvalid(true);
    if (exact.length > 1) throw new Error(`"${v}" names more than one user: type the id instead.`);
    throw new Error(`No user is named "${v}". Type a username, an e-mail or an id.`);
  };
  const listId = `${id}-options`;
  const field = (
    <>
      <input
        type="text"
        id={id}
        list={listId}
        autocomplete="off"
        spellcheck={false}
        placeholder="username, e-mail or id"
        required={opts.required}
        aria-label={opts.label}
        aria-invalid={invalid ? 'true' : undefined}
        value={value}
        onInput={(e) => {
          setValue(e.currentTarget.value);
          clearTimeout(timer.current);
          timer.current = setTimeout(() => void suggest(), 150);
        }}
        onFocus={() => void suggest()}
      />
      <datalist id={listId}>
        {options.map((u) => {
          const extra = [`id ${u.id}`, u.email, u.display_name, u.is_active ? null : 'inactive']
            .filter(Boolean)
            .join(' · ');
          return (
            <option key={u.id} value={u.username} label={extra}>
              {extra}
            </option>
          );
        })}
      </datalist>
    </>
  );
  return { value, setValue, field, resolve };
}

/** A page that could not load: the server's error (or "not available" for a server without the API). */
export function LoadFailed({ error, unavailable }: { error: unknown; unavailable?: string }) {
  if (unavailable && error instanceof ApiError && error.status === 404 && error.code === 'ERR_NOT_FOUND') {
    return (
      <div class="banner info" role="status">
        {unavailable}.{' '}
        <details class="error-details">
          <summary>Details</summary>
          <code>{error.code}</code>
        </details>
      </div>
    );
  }
  return <ErrorBox error={error} />;
}

export const Loading = () => <p class="muted">Loading…</p>;
