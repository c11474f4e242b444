import type { Db } from './db.js';

/** A user row as the rest of the program sees it (never the password hash). */
export interface User {
  id: number;
  username: string;
  email: string | null;
  display_name: string | null;
  is_superuser: boolean;
  is_active: boolean;
  created_at: string;
  last_login_at: string | null;
}

interface UserRow {
  id: number;
  username: string;
  email: string | null;
  display_name: string | null;
  is_superuser: number;
  is_active: number;
  created_at: string;
  last_login_at: string | null;
  password_hash?: string | null;
}

const PUBLIC_COLUMNS = 'id, username, email, display_name, is_superuser, is_active, created_at, last_login_at';

export function toUser(r: UserRow): User {
  return {
    id: r.id,
    username: r.username,
    email: r.email,
    display_name: r.display_name,
    is_superuser: r.is_superuser === 1,
    is_active: r.is_active === 1,
    created_at: r.created_at,
    last_login_at: r.last_login_at,
  };
}

export function getUserById(db: Db, id: number): User | undefined {
  const r = db.prepare(`SELECT ${PUBLIC_COLUMNS} FROM users WHERE id = ?`).get(id) as UserRow | undefined;
  return r && toUser(r);
}

export function getUserByEmail(db: Db, email: string): User | undefined {
  const r = db.prepare(`SELECT ${PUBLIC_COLUMNS} FROM users WHERE email = ?`).get(email) as UserRow | undefined;
  return r && toUser(r);
}

/** The user and their password hash, for login only. */
export function getCredentials(db: Db, username: string): { user: User; passwordHash: string | null } | undefined {
  const r = db
    .prepare(`SELECT ${PUBLIC_COLUMNS}, password_hash FROM users WHERE username = ?`)
    .get(username) as UserRow | undefined;
  return r && { user: toUser(r), passwordHash: r.password_hash ?? null };
}

export interface NewUser {
  username: string;
  email?: string | null;
  displayName?: string | null;
  passwordHash?: string | null;
  isSuperuser?: boolean;
}

export function createUser(db: Db, u: NewUser): User {
  const info = db
    .prepare(
      'INSERT INTO users (username, email, display_name, password_hash, is_superuser) VALUES (?, ?, ?, ?, ?)',
    )
    .run(u.username, u.email ?? null, u.displayName ?? null, u.passwordHash ?? null, u.isSuperuser ? 1 : 0);
  return getUserById(db, Number(info.lastInsertRowid))!;
}

/**
 * Users by id, optionally only those whose username, e-mail or display name contains `q`
 * (case-insensitive; `%` and `_` in q are literal), plus the total that matched.
 */
export function listUsers(db: Db, opts: { q?: string; limit?: number; offset?: number } = {}): { users: User[]; total: number } {
  const q = opts.q?.trim();
  const where = q ? `WHERE username LIKE @q ESCAPE '\\' OR email LIKE @q ESCAPE '\\' OR display_name LIKE @q ESCAPE '\\'` : '';
  const params = q ? { q: `%${q.replace(/[\\%_]/g, (c) => '\\' + c)}%` } : {};
  const total = (db.prepare(`SELECT COUNT(*) AS n FROM users ${where}`).get(params) as { n: number }).n;
  const rows = db
    .prepare(`SELECT ${PUBLIC_COLUMNS} FROM users ${where} ORDER BY id LIMIT @limit OFFSET @offset`)
    .all({ ...params, limit: opts.limit ?? 100, offset: opts.offset ?? 0 }) as UserRow[];
  return { users: rows.map(toUser), total };
}
