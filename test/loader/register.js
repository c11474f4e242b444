// `node --import ./test/loader/register.js FILE.ts`: run the TypeScript sources without a build
// (npm run test:unit; CONTRIBUTING.md). Node 24 strips and transforms the types itself
// (--experimental-transform-types, for the parameter properties the tree uses); this hook only
// maps the `.js` specifiers of the sources (NodeNext style) to the `.ts` file beside them when
// there is no `.js` there. A built tree (dist/) never reaches the hook's fallback.
import { enableCompileCache, register } from 'node:module';
import { join } from 'node:path';

register('./resolve.js', import.meta.url);
// V8's compile cache, kept between runs (it holds the transformed TypeScript too): a second
// `npm run test:unit` compiles only what changed. Beside ESLint's cache, ignored with node_modules.
enableCompileCache(join(import.meta.dirname, '..', '..', 'node_modules', '.cache', 'node-compile'));
