import { sql } from 'kysely';
import { nowIso, type Row, type Sql } from './db/index.js';
import type { UserView } from '../core/api-types.js';

/** A user row as the rest of the program sees it (never the password hash). */
export interface User extends UserView {
  created_at: string;
  last_login_at: string | null;
}

const PUBLIC = [
  'id',
  'username',
  'email',
  'display_name',
  'is_superuser',
  'is_active',
  'created_at',
  'last_login_at',
] as const;

export function toUser(r: Pick<Row<'users'>, (typeof PUBLIC)[number]>): User {
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

export async function getUserById(db: Sql, id: number): Promise<User | undefined> {
  const r = await db.selectFrom('users').select(PUBLIC).where('id', '=', id).executeTakeFirst();
  return r && toUser(r);
}

/** By e-mail, whatever its case. */
export async function getUserByEmail(db: Sql, email: string): Promise<User | undefined> {
  const r = await db
    .selectFrom('users')
    .select(PUBLIC)
    .where(sql`lower(email)`, '=', email.toLowerCase())
    .executeTakeFirst();
  return r && toUser(r);
}

/** The user and their password hash, for login only (the username in any case). */
export async function getCredentials(
  db: Sql,
  username: string,
): Promise<{ user: User; passwordHash: string | null } | undefined> {
  const r = await db
    .selectFrom('users')
    .select([...PUBLIC, 'password_hash'])
    .where(sql`lower(username)`, '=', username.toLowerCase())
    .executeTakeFirst();
  return r && { user: toUser(r), passwordHash: r.password_hash };
}

/** Whether a user holds this username, whatever its case. */
export async function usernameTaken(db: Sql, username: string): Promise<boolean> {
  return !!(await db
    .selectFrom('users')
    .select('id')
    .where(sql`lower(username)`, '=', username.toLowerCase())
    .executeTakeFirst());
}

export interface NewUser {
  username: string;
  email?: string | null;
  displayName?: string | null;
  passwordHash?: string | null;
  isSuperuser?: boolean;
}

export async function createUser(db: Sql, u: NewUser): Promise<User> {
  const r = await db
    .insertInto('users')
    .values({
      username: u.username,
      email: u.email ?? null,
      display_name: u.displayName ?? null,
      password_hash: u.passwordHash ?? null,
      is_superuser: u.isSuperuser ? 1 : 0,
      last_login_at: null,
    })
    .returning(PUBLIC)
    .executeTakeFirstOrThrow();
  return toUser(r);
}

/** A user as the admin's list shows it: also whether the account has no password (it signs in by single sign-on only). */
export interface ListedUser extends User {
  sso_only: boolean;
}

/**
 * Users by id, optionally only those whose username, e-mail or display name contains `q`
 * (case-insensitive; `%` and `_` in q are literal), plus the total that matched.
 */
export async function listUsers(
  db: Sql,
  opts: { q?: string; limit?: number; offset?: number } = {},
): Promise<{ users: ListedUser[]; total: number }> {
  const q = opts.q?.trim();
  const pattern = q ? `%${q.toLowerCase().replace(/[\\%_]/g, (c) => '\\' + c)}%` : undefined;
  let base = db.selectFrom('users');
  if (pattern) {
    const like = (col: 'username' | 'email' | 'display_name') =>
      sql<boolean>`lower(${sql.ref(col)}) LIKE ${pattern} ESCAPE '\\'`;
    base = base.where((eb) => eb.or([like('username'), like('email'), like('display_name')]));
  }
  const total = await base.select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow();
  const rows = await base
    .select(PUBLIC)
    .select((eb) => eb('password_hash', 'is', null).as('no_password'))
    .orderBy('id')
    .limit(opts.limit ?? 100)
    .offset(opts.offset ?? 0)
    .execute();
  // SQLite answers the IS NULL test 1/0, PostgreSQL true/false.
  return { users: rows.map((r) => ({ ...toUser(r), sso_only: Boolean(r.no_password) })), total: Number(total.n) };
}

/** Note a successful sign-in (last_login_at). */
export async function recordLogin(db: Sql, userId: number): Promise<void> {
  await db.updateTable('users').set({ last_login_at: nowIso() }).where('id', '=', userId).execute();
}

/** Set a user's password hash and superuser flag (the demo keeps its printed passwords true). */
export async function setCredentials(
  db: Sql,
  userId: number,
  c: { passwordHash: string; isSuperuser: boolean },
): Promise<void> {
  await db
    .updateTable('users')
    .set({ password_hash: c.passwordHash, is_superuser: c.isSuperuser ? 1 : 0, updated_at: nowIso() })
    .where('id', '=', userId)
    .execute();
}
