// Run by tests/host/fd-watcher.test.ts with 'readable' or 'listen': a watcher
// wakes once, then nobody waits, with its fd still open (and, for listen, its
// callback still installed). The process must end by itself, printing 'idle'.
import { FdWatcher } from '../../src/api/fd-watcher.js';
import { Fifo } from './fifo.js';

const fifo = new Fifo();
const watcher = new FdWatcher(fifo.fd);
if (process.argv[2] === 'listen') {
  await new Promise<void>((woken) => {
    watcher.listen(() => {
      fifo.drain();
      watcher.setInterest(false);
      woken();
    });
    watcher.setInterest(true);
    fifo.write(1);
  });
} else {
  const woken = watcher.readable();
  fifo.write(1);
  await woken;
  fifo.drain();
  const pending = watcher.readable();
  watcher.idle();
  await pending;
}
console.log('idle');
