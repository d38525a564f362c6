// Run built, under plain node, by tests/host/fd-watcher.test.ts: a watcher's
// callback queues a nextTick and settles a promise, with a 3 s timer the only
// other thing on the loop (under node:test the runner's own I/O would drain the
// queues), as on a channel that other operations still wait on. Prints how long
// after the FIFO's write the callback ran (rdmacm runs it after libuv's own,
// later in the turn), and how long after it each of the two ran, in ms, as JSON.
import { FdWatcher } from '../../src/api/core/fd-watcher.js';
import { Fifo } from './fifo.js';

const fifo = new Fifo();
let calledAt = 0;
let tickAt = 0;
const timer = setTimeout(() => {}, 3000);
let woken: () => void = () => {};
// Interest is kept through the callback: losing it schedules an immediate, which would drain the queues anyway.
const watcher = new FdWatcher(fifo.fd, () => {
  fifo.drain();
  calledAt = performance.now();
  process.nextTick(() => (tickAt = performance.now()));
  woken();
});
watcher.setInterest(true);
let writtenAt = 0;
await new Promise<void>((resolve) => {
  woken = resolve;
  writtenAt = performance.now();
  fifo.write(1);
});
const continuedAt = performance.now();
clearTimeout(timer);
watcher.close();
fifo.close();
console.log(JSON.stringify({ callback: calledAt - writtenAt, reaction: continuedAt - calledAt, nextTick: tickAt - calledAt }));
