/** The shapes of a directory sync's snapshot and result (domain/identity/directory-apply.ts). */
import type { OrphanedTeam } from './directory-teams.js';

/** A group as the directory lists it. */
export interface DirectoryGroup {
  id: string;
  email: string;
  name?: string;
  description?: string;
}

/** A user as the directory lists it. */
export interface DirectoryUser {
  id: string;
  primaryEmail: string;
  name?: { fullName?: string };
  suspended?: boolean;
  archived?: boolean;
}

/** Everything the directory said, fetched before anything is written. */
export interface DirectorySnapshot {
  groups: DirectoryGroup[];
  /** group directory id → member e-mails (lower case, type USER only; nested groups are not expanded) */
  memberEmails: Map<string, string[]>;
  users: DirectoryUser[];
  memberships: number;
}

export interface SyncCounts {
  groups_created: number;
  groups_updated: number;
  groups_deleted: number;
  users_created: number;
  users_updated: number;
  users_linked: number;
  users_deactivated: number;
  users_reactivated: number;
  memberships_added: number;
  memberships_removed: number;
  /** Data rows inserted, updated or deleted (bookkeeping of jobs and the connection excluded). */
  rows_written: number;
  /** New directory users whose e-mail another synced account still holds (created without e-mail). */
  email_conflicts?: number;
  /** A superuser the sync would have deactivated but kept: the last active one. */
  kept_last_superuser?: number;
}

export interface ApplyResult {
  counts: SyncCounts;
  deactivatedUserIds: number[];
  /** Teams whose linked group was deleted in step (a): now unlinked; the teams step empties them. */
  orphanedTeams: OrphanedTeam[];
}
