// Run by tests/host/fd-watcher.test.ts: a watcher calls back once, then loses
// interest, with its fd still open and its callback still installed. The
// process must end by itself, printing 'idle'.
import { FdWatcher } from '../../src/api/core/fd-watcher.js';
import { Fifo } from './fifo.js';

const fifo = new Fifo();
await new Promise<void>((woken) => {
  const watcher = new FdWatcher(fifo.fd, () => {
    fifo.drain();
    watcher.setInterest(false);
    woken();
  });
  watcher.setInterest(true);
  fifo.write(1);
});
console.log('idle');
