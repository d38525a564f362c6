// Run by tests/host/fd-watcher.test.ts (plain JavaScript: a worker thread gets
// no tsx loader from its parent, so both load the sources through tsx's API).
// Worker threads call process.exit() while their watcher's fd is readable and
// watched. The process must survive them all and print 'survived N'.
import { Worker, isMainThread, workerData } from 'node:worker_threads';
import { tsImport } from 'tsx/esm/api';

const WORKERS = 20;

if (isMainThread) {
  let exited = 0;
  for (let round = 0; round < WORKERS; round++) {
    const worker = new Worker(new URL(import.meta.url), { workerData: { round } });
    const code = await new Promise((resolve) => worker.once('exit', resolve));
    if (code === 7) exited++;
  }
  console.log(`survived ${exited}`);
} else {
  const { FdWatcher } = await tsImport('../../src/api/core/fd-watcher.ts', import.meta.url);
  const { Fifo } = await tsImport('./fifo.ts', import.meta.url);
  const fifo = new Fifo();
  let calls = 0;
  const watcher = new FdWatcher(fifo.fd, () => calls++); // never drained: libuv calls back every turn
  watcher.setInterest(true);
  fifo.write(1);
  // Half exit from a timer, half right after a turn whose callback ran.
  const exit = () => process.exit(7);
  if (workerData.round % 2 === 0) setTimeout(exit, 5);
  else setImmediate(() => setImmediate(() => (calls > 0 ? exit() : setTimeout(exit, 5))));
}
