// Run by tests/host/fd-watcher.test.ts (plain JavaScript, as exit-in-worker.mjs,
// so a worker loads the sources through tsx's API too). On the main thread and
// in a worker: which way the thread's watches reach libuv, whether a write
// calls back, and whether an error its callback throws reaches
// 'uncaughtException' with the watch calling back again after it, and so does
// an error thrown by a nextTick the callback queued, with an async hook on
// (Node then checks its async context stack, which a drain run outside a
// callback scope corrupts); and a tick that feeds an HTTP request to Node's
// parser, which calls back through native MakeCallback, as an HTTP server on
// an rdmacm/net socket does. Node 26 aborted in CI on that when rdmacm drained
// the ticks outside a callback scope (reverted in c2a4d4c); with the async
// hook on, either tick alone aborts that build here. Last, the callback feeds
// a parser itself, with a tick queued that throws: when the callback ran
// outside any scope, the parser's MakeCallback ran that tick under it, its
// async id stayed on the stack, and Node aborted at the next scope's close
// (Node 20 and 26 here at once, Node 26 in CI's device tier). Prints one JSON
// line per thread: main's, then the worker's.
import { createHook } from 'node:async_hooks';
import { createServer } from 'node:http';
import { Duplex } from 'node:stream';
import { tsImport } from 'tsx/esm/api';
import { printFromEachThread } from './each-thread.mjs';

async function probe() {
  const { FdWatcher } = await tsImport('../../src/api/core/fd-watcher.ts', import.meta.url);
  const { pollHandleKind } = await tsImport('../../src/ffi/poll-handle.ts', import.meta.url);
  const { Fifo } = await tsImport('./fifo.ts', import.meta.url);
  const fifo = new Fifo();
  createHook({ init() {} }).enable();
  const uncaught = [];
  process.on('uncaughtException', (error) => uncaught.push(error.message));
  // HTTP servers on streams with no handle: their parsers take the bytes from 'data' events.
  const serveOne = (connection) => new Promise((resolve) => {
    createServer((request, response) => {
      let body = '';
      request.setEncoding('utf8');
      request.on('data', (chunk) => (body += chunk));
      request.on('end', () => {
        response.end();
        resolve(body);
      });
    }).emit('connection', connection);
  });
  const connection = new Duplex({ read() {}, write: (_chunk, _encoding, callback) => callback() });
  const requestBody = serveOne(connection);
  const fedConnection = new Duplex({ read() {}, write: (_chunk, _encoding, callback) => callback() });
  const fedBody = serveOne(fedConnection);
  // What `promise` gives, or `failure` after 5 s (a hang reports instead of holding the run).
  const within5s = (promise, failure) => Promise.race([promise, new Promise((resolve) => setTimeout(() => resolve(failure), 5000).unref())]);
  const requestWithin5s = (body) => within5s(body, 'no request within 5 s');
  const pause20ms = () => new Promise((resolve) => setTimeout(resolve, 20));
  let calls = 0;
  let wake = () => {};
  const watcher = new FdWatcher(fifo.fd, () => {
    calls++;
    fifo.drain();
    wake();
    if (calls === 1) throw new Error('thrown by the first callback');
    if (calls === 2) process.nextTick(() => {
      throw new Error('thrown by a tick the second callback queued');
    });
    if (calls === 4) process.nextTick(() => connection.push('POST / HTTP/1.1\r\nHost: rdmacm\r\nContent-Length: 4\r\n\r\nbody'));
    if (calls === 5) {
      process.nextTick(() => {
        throw new Error('thrown by a tick queued before the callback fed a parser');
      });
      fedConnection.push('POST / HTTP/1.1\r\nHost: rdmacm\r\nContent-Length: 3\r\n\r\nfed');
    }
  });
  watcher.setInterest(true);
  const bounded = (what) => within5s(new Promise((resolve) => (wake = () => resolve(what))), `${what}: no callback within 5 s`);
  let woken = bounded('first');
  fifo.write(1);
  const first = await woken;
  await pause20ms(); // the rethrow's tick, and a turn
  woken = bounded('second');
  fifo.write(1);
  const second = await woken;
  await pause20ms();
  woken = bounded('third');
  fifo.write(1);
  const third = await woken;
  await pause20ms();
  woken = bounded('fourth');
  fifo.write(1);
  const fourth = await woken;
  const body = await requestWithin5s(requestBody);
  woken = bounded('fifth');
  fifo.write(1);
  const fifth = await woken;
  const fed = await requestWithin5s(fedBody);
  await pause20ms();
  watcher.close();
  fifo.close();
  return { kind: pollHandleKind(), first, second, third, fourth, body, fifth, fed, calls, uncaught };
}

await printFromEachThread(new URL(import.meta.url), probe);
