// Run by tests/host/turn-end.test.ts (plain JavaScript, as exit-in-worker.mjs).
// On the main thread (a prepare hook) and in a worker (one immediate): from a
// watch's callback, an immediate, a microtask and three tasks for the turn's
// end; the order they ran in, and when a task queued by a task ran. Prints one
// JSON line per thread, and must end by itself: the hook keeps nothing alive
// (a timer keeps each loop turning until the tasks have run).
import { tsImport } from 'tsx/esm/api';
import { printFromEachThread } from './each-thread.mjs';

async function probe() {
  const { atTurnEnd } = await tsImport('../../src/api/core/turn-end.ts', import.meta.url);
  const { FdWatcher } = await tsImport('../../src/api/core/fd-watcher.ts', import.meta.url);
  const { Fifo } = await tsImport('./fifo.ts', import.meta.url);
  const fifo = new Fifo();
  const order = [];
  // The hook keeps no loop alive: a loop with nothing else to do ends before its next turn, tasks and all.
  const keepAlive = setTimeout(() => order.push('the tasks never ran'), 10_000);
  await new Promise((resolve) => {
    const watcher = new FdWatcher(fifo.fd, () => {
      fifo.drain();
      watcher.close();
      setImmediate(() => order.push('immediate'));
      queueMicrotask(() => order.push('microtask'));
      atTurnEnd(() => order.push('end 1'));
      atTurnEnd(() => {
        order.push('end 2');
        setImmediate(() => order.push('immediate from end 2'));
        atTurnEnd(() => {
          order.push('end queued by end 2');
          resolve();
        });
      });
      atTurnEnd(() => order.push('end 3'));
    });
    watcher.setInterest(true);
    fifo.write(1);
  });
  clearTimeout(keepAlive);
  fifo.close();
  return order;
}

await printFromEachThread(new URL(import.meta.url), probe);
