// `node --import ./test/loader/register.js FILE.ts`: run the TypeScript sources without a build
// (npm run test:unit; CONTRIBUTING.md). Node 24 strips and transforms the types itself
// (--experimental-transform-types, for the parameter properties the tree uses); this hook only
// maps the `.js` specifiers of the sources (NodeNext style) to the `.ts` file beside them when
// there is no `.js` there. A built tree (dist/) never reaches the hook's fallback.
import { register } from 'node:module';

register('./resolve.js', import.meta.url);
