import type { DirectorySnapshot } from '../../domain/identity/directory-apply.js';
import type { DirectoryClient } from './google-client.js';

/**
 * The fetching half of a directory sync; the snapshot is applied by the identity store
 * (domain/identity/directory-apply.ts), which holds every statement.
 */
export { applyLinkedTeams, applySnapshot } from '../../domain/identity/directory-apply.js';
export type {
  ApplyResult,
  DirectorySnapshot,
  OrphanedTeam,
  SyncCounts,
  TeamsResult,
} from '../../domain/identity/directory-apply.js';

export type Progress = (phase: string, done: number, total?: number) => void;

const MEMBER_FETCH_CONCURRENCY = 8;

/** Steps (a) and (b) fetch: all groups with their members, then all users (paged). */
export async function fetchDirectory(
  client: DirectoryClient,
  progress: Progress = () => {},
): Promise<DirectorySnapshot> {
  progress('groups', 0);
  const groups = await client.listGroups();
  progress('groups', groups.length, groups.length);
  const memberEmails = new Map<string, string[]>();
  let next = 0;
  let done = 0;
  let memberships = 0;
  await Promise.all(
    Array.from({ length: Math.min(MEMBER_FETCH_CONCURRENCY, groups.length) }, async () => {
      while (next < groups.length) {
        const g = groups[next++];
        const members = await client.listMembers(g.id);
        const emails = members
          .filter((m) => (m.type ?? 'USER') === 'USER' && m.email)
          .map((m) => m.email!.toLowerCase());
        memberEmails.set(g.id, emails);
        memberships += emails.length;
        progress('members', ++done, groups.length);
      }
    }),
  );
  progress('users', 0);
  const users = await client.listUsers();
  progress('users', users.length, users.length);
  return { groups, memberEmails, users, memberships };
}
