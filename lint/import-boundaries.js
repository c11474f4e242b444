// ESLint rule `airlock/import-boundaries`: who may import whom (README "Import rules",
// docs/architecture.md "Who imports whom"). Every relative import, re-export and dynamic import()
// with a literal is resolved against the importing file to the top folder it lands in, so the
// rule judges the folder a specifier reaches, not the text it is written with (`../web/x.js` from
// `daemon/` and `./web/x.js` from the root are the same arrow to it). The table of arrows is the
// rule's options, in eslint.config.js. test/unit/boundaries.test.ts proves it fires.
import { dirname, relative, resolve, sep } from 'node:path';

/** The repository-relative path (forward slashes) of `file`, from the lint's working folder. */
const repoPath = (root, file) => relative(root, file).split(sep).join('/');

/** @type {import('eslint').Rule.RuleModule} */
export const importBoundaries = {
  meta: {
    type: 'problem',
    docs: { description: 'A folder imports only the folders its row of docs/architecture.md allows' },
    schema: [
      {
        type: 'object',
        properties: {
          allow: { type: 'object', additionalProperties: { type: 'array', items: { type: 'string' } } },
          deny: { type: 'object', additionalProperties: { type: 'array', items: { type: 'string' } } },
          gates: {
            type: 'array',
            items: {
              type: 'object',
              properties: {
                from: { type: 'string' },
                to: { type: 'string' },
                file: { type: 'string' },
                entry: { type: 'string' },
              },
              required: ['from', 'to', 'file', 'entry'],
              additionalProperties: false,
            },
          },
        },
        additionalProperties: false,
      },
    ],
    messages: {
      notAllowed:
        '{{from}}/ may import only {{allowed}}: {{spec}} reaches {{to}}/ (docs/architecture.md, "Who imports whom").',
      denied: '{{from}}/ never imports {{to}}/: {{spec}} (docs/architecture.md, "Who imports whom").',
      gate: '{{from}}/ imports {{to}}/ only in {{file}}, and there only {{entry}}: {{spec}} (docs/architecture.md, "Who imports whom").',
    },
  },
  create(context) {
    const { allow = {}, deny = {}, gates = [] } = context.options[0] ?? {};
    const root = context.cwd;
    const file = repoPath(root, context.filename);
    const from = file.split('/')[0];
    if (!(from in allow) && !(from in deny) && !gates.some((g) => g.from === from)) return {};

    /** Report `node` (a string literal source) when its target breaks an arrow. */
    function check(node) {
      const spec = node?.type === 'Literal' && typeof node.value === 'string' ? node.value : null;
      if (!spec || !spec.startsWith('.')) return;
      const target = repoPath(root, resolve(dirname(context.filename), spec));
      const to = target.split('/')[0];
      if (to === from) return;
      const data = { from, to, spec };
      if (allow[from] && !allow[from].includes(to)) {
        context.report({
          node,
          messageId: 'notAllowed',
          data: { ...data, allowed: [from, ...allow[from]].map((f) => `${f}/`).join(', ') },
        });
        return;
      }
      if (deny[from]?.includes(to)) {
        context.report({ node, messageId: 'denied', data });
        return;
      }
      const gate = gates.find((g) => g.from === from && g.to === to);
      if (gate && !(file === gate.file && target === gate.entry))
        context.report({ node, messageId: 'gate', data: { ...data, file: gate.file, entry: gate.entry } });
    }

    return {
      ImportDeclaration: (n) => check(n.source),
      ExportNamedDeclaration: (n) => check(n.source),
      ExportAllDeclaration: (n) => check(n.source),
      ImportExpression: (n) => check(n.source),
    };
  },
};

/** The local plugin: `plugins: { airlock }` in eslint.config.js. */
export const airlock = { meta: { name: 'airlock' }, rules: { 'import-boundaries': importBoundaries } };
