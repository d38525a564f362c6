// Run by tests/device/net.test.ts, built and under plain node (the test
// runner's own I/O would hide what this checks): a server listens in this
// process while a client connects three times where nothing listens. Prints
// each attempt's error code and how long it took, in ms, as JSON.
import { once } from 'node:events';
import { connect, createServer } from '../../src/net/index.js';
import { deviceAddress, freshPort } from './device.js';

const server = createServer((socket) => socket.pipe(socket));
server.listen(0, deviceAddress());
await once(server, 'listening');
const attempts: { code: unknown; ms: number }[] = [];
for (let attempt = 1; attempt <= 3; attempt++) {
  const started = performance.now();
  const [error] = (await once(connect(freshPort(), deviceAddress()), 'error')) as [Error & { code?: string }];
  attempts.push({ code: error.code, ms: Math.round(performance.now() - started) });
}
await new Promise((resolve) => server.close(resolve));
console.log(JSON.stringify(attempts));
