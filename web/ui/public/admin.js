// Admin pages (superusers). Each entry: { id, title, render(): Promise<Node> }.
import { h } from './lib.js';

export const adminPages = [];

export function placeholder(title) {
  return h('section', { class: 'panel' }, h('h1', {}, title));
}
