// For the support scripts that compare the main thread with a worker: runs
// `probe` on the main thread, then in a worker started from the same script,
// and prints one JSON line for each (main's first).
import { Worker, isMainThread, parentPort } from 'node:worker_threads';

export async function printFromEachThread(scriptUrl, probe) {
  if (!isMainThread) {
    parentPort.postMessage(await probe());
    return;
  }
  console.log(JSON.stringify(await probe()));
  const worker = new Worker(scriptUrl);
  worker.on('message', (result) => console.log(JSON.stringify(result)));
  worker.on('error', (error) => console.log(JSON.stringify({ error: String(error) })));
}
