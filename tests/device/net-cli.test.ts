// The CLI's socket commands on the device, as users run them (node bin/rdmacm):
// `rdmacm nc` both ways with files piped through it (sha256 compared), against
// rstream in both roles, and refused; `rdmacm bench stream` TS ↔ TS and against
// rstream, every byte verified. Sizes are small: the guest is emulated.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { packageRoot } from '../../src/package-info.js';
import { deviceAddress, freshPort } from '../support/device.js';
import { rdmaListening, start, type Finished } from '../support/processes.js';
import { checkRstream } from '../support/rstream-peer.js';
import { RDMA_STREAM_KEYS, STREAM_TIMING_KEYS } from '../support/stream-keys.js';

const bin = join(packageRoot(), 'bin', 'rdmacm');
const sha256 = (data: Uint8Array) => createHash('sha256').update(data).digest('hex');

interface Nc {
  /** Settles when the process exits: its code and stderr (stdout went to the file). */
  readonly finished: Promise<{ code: number | null; stderr: string }>;
  /** Resolves once stderr has shown `pattern` (or the process has ended). */
  saw(pattern: RegExp): Promise<void>;
  kill(): void;
}

/** `rdmacm ARGS < input > output`, with stderr collected. */
function rdmacmWithFiles(args: string[], input: string, output: string): Nc {
  const stdin = openSync(input, 'r');
  const stdout = openSync(output, 'w');
  const child = spawn(process.execPath, [bin, ...args], { stdio: [stdin, stdout, 'pipe'] });
  closeSync(stdin);
  closeSync(stdout);
  let stderr = '';
  const watchers: (() => void)[] = [];
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => {
    stderr += chunk;
    for (const wake of watchers.splice(0)) wake();
  });
  const finished = new Promise<{ code: number | null; stderr: string }>((resolve) => {
    child.on('close', (code) => {
      for (const wake of watchers.splice(0)) wake();
      resolve({ code, stderr });
    });
  });
  let ended = false;
  void finished.then(() => (ended = true));
  return {
    finished,
    async saw(pattern) {
      while (!pattern.test(stderr) && !ended) await new Promise<void>((resolve) => watchers.push(resolve));
    },
    kill: () => child.kill('SIGKILL'),
  };
}

/** A folder for the test's files, removed afterwards. */
function withFolder(run: (folder: string) => Promise<void>): () => Promise<void> {
  return async () => {
    const folder = mkdtempSync(join(tmpdir(), 'rdmacm-nc-'));
    try {
      await run(folder);
    } finally {
      rmSync(folder, { recursive: true, force: true });
    }
  };
}

/** rstream -T v's bytes: a side's byte i is i mod 256 (its 16-byte sync first). */
const pattern = (length: number) => Buffer.from(Array.from({ length }, (_, i) => i & 0xff));

test('nc -l (no HOST: every IPv4 and IPv6 address) ↔ nc: a file each way arrives intact (sha256), and both exit 0', { timeout: 240_000 }, withFolder(async (folder) => {
  const up = randomBytes(1 << 20);
  const down = randomBytes(200_000);
  const files = { up: join(folder, 'up'), down: join(folder, 'down'), upOut: join(folder, 'up.out'), downOut: join(folder, 'down.out') };
  writeFileSync(files.up, up);
  writeFileSync(files.down, down);
  const port = String(freshPort());
  const server = rdmacmWithFiles(['nc', '-l', '-v', port], files.down, files.upOut);
  try {
    await server.saw(/listening on/);
    const client = rdmacmWithFiles(['nc', deviceAddress(), port], files.up, files.downOut);
    const [c, s] = await Promise.all([client.finished, server.finished]);
    assert.equal(c.code, 0, `client: ${c.stderr}`);
    assert.equal(s.code, 0, `server: ${s.stderr}`);
    assert.equal(c.stderr, '');
    assert.match(s.stderr, new RegExp(`^rdmacm nc: listening on \\[::\\]:${port}\\nrdmacm nc: connection from ${deviceAddress().replace(/\./g, '\\.')}:\\d+\\nrdmacm nc: the peer ended its side\\n$`));
    assert.equal(sha256(readFileSync(files.upOut)), sha256(up));
    assert.equal(sha256(readFileSync(files.downOut)), sha256(down));
  } finally {
    server.kill();
  }
}));

// rstream's custom run is a fixed exchange: nc's stdin carries this side's
// whole part up front (the sync and each iteration's bytes, rstream -T v's
// pattern), stdout collects the peer's; rstream verifies what it receives.
const RSTREAM = ['-S', '64', '-C', '4', '-I', '2', '-T', 'b', '-T', 'v'];
const RSTREAM_BYTES = 16 + 2 * 4 * 64;

test('nc as a client of an rstream server: rstream\'s sync and verified run complete, and its bytes come out', { timeout: 120_000 }, withFolder(async (folder) => {
  const input = join(folder, 'in');
  const output = join(folder, 'out');
  writeFileSync(input, pattern(RSTREAM_BYTES));
  const port = String(freshPort());
  const tool = start('rstream', ['-b', deviceAddress(), '-p', port, ...RSTREAM]);
  try {
    // rstream (C) listens long before node has started.
    const nc = rdmacmWithFiles(['nc', deviceAddress(), port], input, output);
    const [ran, served] = await Promise.all([nc.finished, tool.finished]);
    checkRstream(served);
    assert.equal(ran.code, 0, ran.stderr);
    assert.equal(ran.stderr, '');
    assert.deepEqual(readFileSync(output), pattern(RSTREAM_BYTES));
  } finally {
    tool.kill();
  }
}));

test('nc -l serving an rstream client: the same run the other way', { timeout: 120_000 }, withFolder(async (folder) => {
  const input = join(folder, 'in');
  const output = join(folder, 'out');
  writeFileSync(input, pattern(RSTREAM_BYTES));
  const port = String(freshPort());
  const nc = rdmacmWithFiles(['nc', '-l', '-v', deviceAddress(), port], input, output);
  try {
    await nc.saw(/listening on/);
    const tool = start('rstream', ['-s', deviceAddress(), '-p', port, ...RSTREAM]);
    const [ran, client] = await Promise.all([nc.finished, tool.finished]);
    checkRstream(client);
    assert.equal(ran.code, 0, ran.stderr);
    assert.deepEqual(readFileSync(output), pattern(RSTREAM_BYTES));
  } finally {
    nc.kill();
  }
}));

test('nc to a port nothing listens on exits 1 with ECONNREFUSED and writes nothing', { timeout: 60_000 }, withFolder(async (folder) => {
  const empty = join(folder, 'empty');
  const output = join(folder, 'out');
  writeFileSync(empty, '');
  const port = freshPort();
  const nc = rdmacmWithFiles(['nc', deviceAddress(), String(port)], empty, output);
  const { code, stderr } = await nc.finished;
  assert.equal(code, 1);
  assert.equal(stderr, `rdmacm nc: connect ECONNREFUSED ${deviceAddress()}:${port} (nothing listens there)\n`);
  assert.equal(readFileSync(output).length, 0);
}));

// ---------------------------------------------------------------- bench stream

function figures(result: Finished, who: string): Record<string, number | string> {
  assert.equal(result.code, 0, `${who}: ${result.stderr}`);
  const lines = result.stdout.trim().split('\n');
  assert.equal(lines.length, 1, `${who} printed one line: ${result.stdout}`);
  const parsed = JSON.parse(lines[0]!) as Record<string, number | string>;
  assert.deepEqual(Object.keys(parsed), RDMA_STREAM_KEYS);
  assert.equal(parsed.transport, 'rdma');
  for (const key of STREAM_TIMING_KEYS) assert.ok(Number.isFinite(parsed[key]) && (parsed[key] as number) > 0, `${who}: ${key} = ${parsed[key]}`);
  // CPU: some time in all; either part may round to nothing in a short run.
  const { bytes, cpu_s: cpu, cpu_user_s: user, cpu_system_s: system, cpu_s_per_gib: perGib } = parsed as Record<string, number>;
  assert.ok(cpu > 0 && user >= 0 && system >= 0 && Math.abs(user + system - cpu) < 1e-5, `${who}: cpu ${cpu} = user ${user} + system ${system}`);
  assert.ok(Math.abs(perGib - cpu / (bytes / 2 ** 30)) <= 1e-3 * perGib, `${who}: ${perGib} s per GiB for ${cpu} s over ${bytes} B`);
  return parsed;
}

const bench = (args: string[]) => start(process.execPath, [bin, 'bench', 'stream', ...args]);

test('bench stream: TS server and client run a verified ping-pong (each side in a --wait mode of its own) and a throughput run (reading with --onread, one side spinning 500 µs), and agree', { timeout: 300_000 }, async () => {
  const runs = [
    { spec: ['-S', '64', '-C', '1', '-I', '100', '-w', '10'], server: ['--wait', 'busy-poll'], client: ['--wait', 'events'], waits: { server: 'busy-poll', client: 'events' } },
    { spec: ['-S', '65536', '-C', '32', '-I', '2', '--onread'], server: ['--spin', '500'], client: [], waits: { server: 'adaptive', client: 'adaptive' } },
  ];
  for (const { spec, waits, ...sides } of runs) {
    const port = String(freshPort());
    const server = bench(['-l', deviceAddress(), '-p', port, '-V', '--json', ...sides.server, ...spec]);
    try {
      // The client retries while the server's node starts.
      const client = figures(await bench([deviceAddress(), '-p', port, '-V', '--json', ...sides.client, ...spec]).finished, 'client');
      const served = figures(await server.finished, 'server');
      for (const [f, role] of [[client, 'client'], [served, 'server']] as const) {
        assert.equal(f.role, role);
        assert.equal(f.wait, waits[role]);
        assert.equal(f.reads, spec.includes('--onread') ? 'onread' : 'data');
        assert.equal(f.size, Number(spec[1]));
        assert.equal(f.bytes, Number(spec[1]) * Number(spec[3]) * Number(spec[5]) * 2);
      }
      const { min_us: min, p50_us: p50, max_us: max } = client as Record<string, number>;
      assert.ok(min <= p50 && p50 <= max, `min ${min} <= p50 ${p50} <= max ${max}`);
    } finally {
      server.kill();
    }
  }
});

test('bench stream against rstream -T b -T v, both roles: both sides verify every byte', { timeout: 300_000 }, async () => {
  const spec = ['-S', '4096', '-C', '8', '-I', '5'];
  {
    const port = String(freshPort());
    const tool = start('rstream', ['-b', deviceAddress(), '-p', port, ...spec, '-T', 'b', '-T', 'v']);
    try {
      const client = figures(await bench([deviceAddress(), '-p', port, '-V', '--json', ...spec]).finished, 'client');
      assert.equal(client.bytes, 4096 * 8 * 5 * 2);
      checkRstream(await tool.finished);
    } finally {
      tool.kill();
    }
  }
  {
    const port = String(freshPort());
    // Human form: its 'waiting for a client' line says when rstream may connect. Read with --onread: rstream's sync can come before the exchange starts.
    const server = start(process.execPath, [bin, 'bench', 'stream', '-l', deviceAddress(), '-p', port, '-V', '--onread', ...spec]);
    try {
      await rdmaListening(port, 15_000);
      const tool = start('rstream', ['-s', deviceAddress(), '-p', port, ...spec, '-T', 'b', '-T', 'v']);
      checkRstream(await tool.finished);
      const served = await server.finished;
      assert.equal(served.code, 0, served.stderr);
      assert.match(served.stdout, /^rdmacm bench stream \(server, RDMA, onread\): 4096 B × 8 each way × 5 iterations\n/);
    } finally {
      server.kill();
    }
  }
});
