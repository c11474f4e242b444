/**
 * `import()` of a package that is not in the bundle (the vendor model SDKs, the chart canvas),
 * in every way a sandbox process may have started.
 *
 * A process started from a V8 startup snapshot (the agent, in the image: docs/runtime.md, "Cold
 * start, step by step") runs code that was compiled while the snapshot was built, and that code's
 * `import()` has no loader behind it (Node: "A dynamic import callback was not specified").
 * There the import goes through a function compiled at run time with Node's default ESM loader,
 * resolving from the bundle's own file, so the package is found and loaded exactly as `import()`
 * would; the agent switches to it when it starts from the snapshot (`importFromSnapshotProcess`).
 * Everywhere else it is the plain `import()`.
 */
import { fileURLToPath } from 'node:url';

type Importer = (specifier: string) => Promise<unknown>;

let viaLoader: Importer | undefined;
let fromSnapshot = false;

/** Called once by a process that started from a startup snapshot, before it imports anything. */
export function importFromSnapshotProcess(): void {
  fromSnapshot = true;
}

export function runtimeImport<T>(specifier: string): Promise<T> {
  if (!fromSnapshot) return import(specifier) as Promise<T>;
  if (!viaLoader) {
    const vm = process.getBuiltinModule('node:vm');
    viaLoader = vm.runInThisContext('(specifier) => import(specifier)', {
      filename: fileURLToPath(import.meta.url),
      importModuleDynamically: vm.constants.USE_MAIN_CONTEXT_DEFAULT_LOADER,
    }) as Importer;
  }
  return viaLoader(specifier) as Promise<T>;
}
