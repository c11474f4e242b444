// The admin pages (superusers), in the header's order; each is shown at #/admin/<id>. A page's
// code is its own chunk of the bundle, loaded when the page is opened (the chat page never waits
// for it).
import type { FunctionComponent } from 'preact';

export interface AdminPage {
  id: string;
  title: string;
  load(): Promise<FunctionComponent>;
  /** Reached by a link (e.g. from the action log), not listed in the header. */
  hidden?: boolean;
}

export const adminPages: AdminPage[] = [
  { id: 'identity', title: 'SSO & sync', load: async () => (await import('./identity.js')).IdentityPage },
  {
    id: 'organisations',
    title: 'Teams & agent policies',
    load: async () => (await import('./organisations.js')).OrganisationsPage,
  },
  { id: 'data-roles', title: 'Data roles', load: async () => (await import('./roles.js')).RolesPage },
  {
    id: 'data-assignments',
    title: 'Assignments',
    load: async () => (await import('./assignments.js')).AssignmentsPage,
  },
  { id: 'mail-policy', title: 'Send policy', load: async () => (await import('./mail-policy.js')).MailPolicyPage },
  { id: 'action-log', title: 'Action log', load: async () => (await import('./action-log.js')).ActionLogPage },
  { id: 'chat-models', title: 'Chat models', load: async () => (await import('./chat-models.js')).ChatModelsPage },
  { id: 'connectors', title: 'Connectors', load: async () => (await import('./connectors.js')).ConnectorsPage },
  { id: 'usage', title: 'Usage', load: async () => (await import('./usage.js')).UsagePage },
  { id: 'sessions', title: 'Live sessions', load: async () => (await import('./sessions.js')).SessionsPage },
  { id: 'users', title: 'Users', load: async () => (await import('./users.js')).UsersPage },
  { id: 'turn', title: 'Turn audit', hidden: true, load: async () => (await import('./turn.js')).TurnPage },
];
