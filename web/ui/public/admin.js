// Admin pages (superusers). Each entry: { id, title, render(): Promise<Node> }; app.js puts them in the nav.
import { h } from './lib.js';
import { identityPages } from './admin-identity.js';
import { accessPages } from './admin-access.js';
import { sessionPages } from './admin-sessions.js';

export const adminPages = [...identityPages, ...accessPages, ...sessionPages];

export function placeholder(title) {
  return h('section', { class: 'panel' }, h('h1', {}, title));
}
