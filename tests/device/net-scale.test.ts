// rdmacm/net at scale in one process: 1000 sockets (500 connections, both ends
// there) connect, each echoes, idle they cost no CPU, and all close cleanly.
// The process is one of its own (tests/support/idle-sockets.ts), so the tests
// before this one are not charged to its idle window. Small buffers keep the
// guest's 2 GiB enough; the per-socket memory is printed for docs/net.md.
// RDMACM_IDLE_SOCKETS sets another even number of sockets (CI's second pass).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { supportProgramJson } from '../support/child-module.js';
import type { IdleSocketsReport } from '../support/idle-sockets.js';

const SOCKETS = Number(process.env.RDMACM_IDLE_SOCKETS ?? 1000);

test(`${SOCKETS} idle sockets in one process: all connect and echo, idle they cost no CPU, all close`, { timeout: 600_000 }, async () => {
  assert.ok(SOCKETS >= 2 && SOCKETS % 2 === 0, 'RDMACM_IDLE_SOCKETS must be an even number, at least 2');
  const seen = await supportProgramJson<IdleSocketsReport>('idle-sockets', 540_000);
  console.log(`# ${seen.sockets} sockets: set up in ${(seen.setupMs / 1000).toFixed(1)} s, RSS ${(seen.rssPerSocket / 1024).toFixed(0)} KiB a socket ` +
    `(${seen.bufferBytes} B of buffers each), idle ${seen.idleDescribe}`);
  assert.equal(seen.sockets, SOCKETS);
  assert.equal(seen.echoed, seen.sockets / 2, 'every connection echoed its own bytes');
  assert.ok(seen.idleShare < 0.02, `idle sockets used ${(seen.idleShare * 100).toFixed(2)} % of a CPU`);
  assert.equal(seen.leftOpen, 0, 'every server-side socket closed');
});
