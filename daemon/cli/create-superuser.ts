import { AppError, hashPassword } from '../../core/index.js';
import { createUser, getCredentials, type Sql, type User } from '../../domain/index.js';

export interface SuperuserInput {
  username: string;
  email: string;
  password: string;
}

const USERNAME_RE = /^[A-Za-z0-9._@-]{1,150}$/;
const EMAIL_RE = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;

/** Create a superuser; refuses weak input and existing names with coded errors. */
export async function createSuperuser(db: Sql, input: SuperuserInput): Promise<User> {
  const problems: string[] = [];
  if (!USERNAME_RE.test(input.username)) problems.push('username: letters, digits and . _ @ - only (1-150)');
  if (!EMAIL_RE.test(input.email)) problems.push('email: not an e-mail address');
  if (input.password.length < 8) problems.push('password: at least 8 characters');
  if (problems.length) throw new AppError('ERR_VALIDATION', problems.join('; '));
  if (await getCredentials(db, input.username)) {
    throw new AppError('ERR_USER_EXISTS', `user ${input.username} already exists`);
  }
  const passwordHash = await hashPassword(input.password);
  return createUser(db, { username: input.username, email: input.email, passwordHash, isSuperuser: true });
}
