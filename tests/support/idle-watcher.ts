// Run by tests/host/fd-watcher.test.ts: a watcher wakes once, then idles with
// its fd still open. The process must end by itself, printing 'idle'.
import { FdWatcher } from '../../src/api/fd-watcher.js';
import { Fifo } from './fifo.js';

const fifo = new Fifo();
const watcher = new FdWatcher(fifo.fd);
const woken = watcher.readable();
fifo.write(1);
await woken;
fifo.drain();
const pending = watcher.readable();
watcher.idle();
await pending;
console.log('idle');
