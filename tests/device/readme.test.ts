// The README's TypeScript blocks, as printed, on the device: only their address
// and port change to the test bed's. A user's first contact with the library is
// copying one of them, so each must run and print what its comments say.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { transformSync } from 'esbuild';
import { packageRoot } from '../../src/package-info.js';
import { deviceAddress, freshPort } from '../support/device.js';
import { rdmaListening, start } from '../support/processes.js';
import { within } from '../support/within.js';

const README_PORT = '7471';
const README_ADDRESSES = /'10\.0\.0\.[12]'/g;

/** The README's ```ts blocks, named by what each is: the safe API's client and server, and the sockets' echo. */
function readmeBlocks(): { client: string; server: string; echo: string } {
  const readme = readFileSync(join(packageRoot(), 'README.md'), 'utf8');
  const blocks = [...readme.matchAll(/^```ts\n([\s\S]*?)^```$/gm)].map((match) => match[1]!);
  const client = blocks.filter((block) => block.includes('id.connect('));
  const server = blocks.filter((block) => block.includes('listener.listen()'));
  const echo = blocks.filter((block) => block.includes("from 'rdmacm/net'"));
  assert.deepEqual([client.length, server.length, echo.length, blocks.length], [1, 1, 1, 3],
    `expected the README's three ts blocks (client, server, echo); a new one needs a case here:\n${blocks.join('\n---\n')}`);
  return { client: client[0]!, server: server[0]!, echo: echo[0]! };
}

/**
 * A folder where `import 'rdmacm'` finds this package (a node_modules link to
 * it), and a writer of ES modules into it, transpiled from the README's TypeScript.
 */
function scriptFolder(): { write(name: string, block: string, port: string): string; remove(): void } {
  const folder = mkdtempSync(join(tmpdir(), 'rdmacm-readme-'));
  mkdirSync(join(folder, 'node_modules'));
  symlinkSync(packageRoot(), join(folder, 'node_modules', 'rdmacm'));
  const address = `'${deviceAddress()}'`;
  return {
    write(name, block, port) {
      assert.match(block, README_ADDRESSES, `${name}: no address to point at the device`);
      assert.ok(block.includes(README_PORT), `${name}: no port ${README_PORT} to change`);
      const source = block.replace(README_ADDRESSES, address).replaceAll(README_PORT, port);
      const { code } = transformSync(source, { loader: 'ts', format: 'esm', target: 'node20' });
      const path = join(folder, `${name}.mjs`);
      writeFileSync(path, code);
      return path;
    },
    remove: () => rmSync(folder, { recursive: true, force: true }),
  };
}

test("the README's safe-API client and server talk, and print what their comments say", { timeout: 120_000 }, async () => {
  const { client, server } = readmeBlocks();
  const scripts = scriptFolder();
  const port = String(freshPort());
  const serverRun = start(process.execPath, [scripts.write('server', server, port)]);
  try {
    await rdmaListening(port);
    const clientRun = start(process.execPath, [scripts.write('client', client, port)]);
    const clientDone = await within(clientRun.finished, 60_000, () => 'the README client did not end within 60 s');
    assert.equal(clientDone.code, 0, `the client failed: ${clientDone.stdout}${clientDone.stderr}`);
    // The server echoed the client's 'hello': the client prints the bytes it received.
    assert.match(clientDone.stdout, /<Buffer 68 65 6c 6c 6f>/, clientDone.stdout);
    // The server serves forever; the first request's private data is printed by then.
    serverRun.kill();
    const serverDone = await serverRun.finished;
    assert.equal(serverDone.stderr, '', serverDone.stderr);
    // 'hi', padded with zeros to 56 bytes (RC): util.inspect shows 50 and counts the rest.
    assert.match(serverDone.stdout, /<Buffer 68 69( 00){48} \.\.\. 6 more bytes>/, serverDone.stdout);
  } finally {
    serverRun.kill();
    scripts.remove();
  }
});

test("the README's socket echo prints the echo and exits", { timeout: 120_000 }, async () => {
  const scripts = scriptFolder();
  const run = start(process.execPath, [scripts.write('echo', readmeBlocks().echo, String(freshPort()))]);
  try {
    const done = await within(run.finished, 60_000, () => 'the README echo did not exit within 60 s: the server should close after the client');
    assert.equal(done.code, 0, `${done.stdout}${done.stderr}`);
    assert.equal(done.stdout, 'echoed: hello\n');
  } finally {
    run.kill();
    scripts.remove();
  }
});
