// The resolve hook of test/loader/register.js: a relative or absolute `.js` specifier that names no
// file is tried as `.ts` (then `.tsx`), the way tsc's NodeNext resolution reads it. Everything else,
// and every specifier inside node_modules, resolves as Node would.
/** @type {import('node:module').ResolveHook} */
export async function resolve(specifier, context, nextResolve) {
  try {
    return await nextResolve(specifier, context);
  } catch (err) {
    if (!/\.js$/.test(specifier) || !isOurs(specifier, context.parentURL)) throw err;
    for (const ext of ['.ts', '.tsx']) {
      try {
        return await nextResolve(specifier.slice(0, -3) + ext, context);
      } catch {
        // try the next extension; the original error is the one to report
      }
    }
    throw err;
  }
}

/** A specifier of our sources: relative, absolute or a file: URL, asked from outside node_modules. */
function isOurs(specifier, parentURL) {
  const local = specifier.startsWith('.') || specifier.startsWith('/') || specifier.startsWith('file:');
  return local && !(parentURL ?? '').includes('/node_modules/');
}
