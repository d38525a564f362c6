// Bundles the built CLI (dist/src/cli/main.js) with esbuild into dist/cli/:
// the entry, rdmacm.js, which bin/rdmacm runs, and chunks/ that each command
// loads when it runs. Start-up is what this is for: a command loads its own
// chunk and the Node modules it uses (`rdmacm devices` no REPL, vm or acorn),
// not every command's, which counts in the emulated guest, where each module
// costs tens of milliseconds (docs/performance-notes.md, "The CLI's
// start-up").
import { build } from 'esbuild';

/**
 * zod's entry points all re-export its 64 message locales as a namespace
 * (`z.locales`), which keeps every one of them in a bundle. The CLI never
 * reads it: English, the default, comes from zod's own import of its en
 * locale, which this leaves alone. So the namespace resolves to nothing.
 */
const zodWithoutLocales = {
  name: 'zod-without-locales',
  setup(builder) {
    builder.onResolve({ filter: /^\.\.\/locales\/index\.js$/ }, (args) =>
      /[\\/]node_modules[\\/]zod[\\/]/.test(args.importer) ? { path: 'zod-locales', namespace: 'zod-without-locales' } : undefined);
    builder.onLoad({ filter: /.*/, namespace: 'zod-without-locales' }, () => ({ contents: 'export {};', loader: 'js' }));
  },
};

await build({
  entryPoints: { rdmacm: 'dist/src/cli/main.js' },
  bundle: true,
  splitting: true,
  platform: 'node',
  format: 'esm',
  target: 'node20',
  external: ['koffi'],
  outdir: 'dist/cli',
  chunkNames: 'chunks/[name]-[hash]',
  plugins: [zodWithoutLocales],
  logLevel: 'warning',
});
