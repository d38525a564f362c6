// rdmacm/net under Node's own stream consumers, unchanged: stream.pipeline
// with fs streams, http's server and client (createConnection, a keep-alive
// Agent, RdmaAgent), http2 (cleartext and over TLS), tls on both ends
// (tls.connect({ socket }), new tls.TLSSocket, RdmaHttpsAgent), and for
// await. Each gets an RdmaSocket where it would get a net.Socket.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { createReadStream, createWriteStream, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import http2 from 'node:http2';
import https from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import tls from 'node:tls';
import { RdmaAgent, RdmaHttpsAgent, RdmaSocket, connect, createServer, type RdmaServer } from '../../src/net/index.js';
import { within } from '../support/within.js';
import { deviceAddress } from '../support/device.js';

let dir: string;
before(() => {
  dir = mkdtempSync(join(tmpdir(), 'rdmacm-net-ecosystem-'));
});
after(() => rmSync(dir, { recursive: true, force: true }));

const sha256 = (data: Uint8Array) => createHash('sha256').update(data).digest('hex');
const fileSha256 = (path: string) => sha256(readFileSync(path));

async function listening(server: RdmaServer): Promise<number> {
  server.listen(0, deviceAddress());
  await once(server, 'listening');
  return server.address()!.port;
}

const closeServer = (server: RdmaServer) => new Promise<void>((resolve) => server.close(() => resolve()));

/** Resolves at the socket's 'close' (a plain listener: 'error' may come in the same tick). */
const closed = (socket: RdmaSocket | tls.TLSSocket) => new Promise<void>((resolve) => socket.once('close', () => resolve()));

async function connected(port: number): Promise<RdmaSocket> {
  const socket = connect(port, deviceAddress());
  await once(socket, 'connect');
  return socket;
}

/** A file of `size` random bytes in the test's folder. */
function randomFile(name: string, size: number): string {
  const path = join(dir, name);
  writeFileSync(path, randomBytes(size));
  return path;
}

test('stream.pipeline: a file up into fs.createWriteStream on the server and back down, with allowHalfOpen (sha256 of all three)', { timeout: 180_000 }, async () => {
  const source = randomFile('up.bin', 4 << 20);
  const uploaded = join(dir, 'uploaded.bin');
  const downloaded = join(dir, 'downloaded.bin');
  const server = createServer({ allowHalfOpen: true });
  const served = new Promise<void>((resolve, reject) => {
    server.once('connection', (socket) => {
      const gone = closed(socket);
      // Everything the client sends, to disk; then the file, from disk, back on the same socket.
      pipeline(socket, createWriteStream(uploaded))
        .then(() => pipeline(createReadStream(uploaded), socket))
        .then(() => gone)
        .then(resolve, reject);
    });
  });
  const port = await listening(server);
  try {
    const client = connect({ port, host: deviceAddress(), allowHalfOpen: true });
    const gone = closed(client);
    await once(client, 'connect');
    const down = pipeline(client, createWriteStream(downloaded));
    await pipeline(createReadStream(source), client);
    assert.equal(client.readyState, 'readOnly');
    await Promise.all([down, served, gone]);
    assert.equal(client.bytesWritten, 4 << 20);
    assert.equal(client.bytesRead, 4 << 20);
    const expected = fileSha256(source);
    assert.equal(fileSha256(uploaded), expected);
    assert.equal(fileSha256(downloaded), expected);
  } finally {
    await closeServer(server);
  }
});

test('stream.pipeline(fs.createReadStream, socket, fs.createWriteStream) through an echo server keeps every byte (sha256)', { timeout: 180_000 }, async () => {
  const source = randomFile('echo.bin', 4 << 20);
  const echoed = join(dir, 'echoed.bin');
  const server = createServer((socket) => {
    socket.on('error', () => undefined);
    socket.pipe(socket);
  });
  const port = await listening(server);
  try {
    const client = await connected(port);
    const gone = closed(client);
    await pipeline(createReadStream(source), client, createWriteStream(echoed));
    await gone;
    assert.equal(fileSha256(echoed), fileSha256(source));
  } finally {
    await closeServer(server);
  }
});

interface Reply {
  readonly status: number;
  readonly body: string;
  readonly socket: unknown;
  readonly reused: boolean;
}

/** One http.request (or https.request), its body written and the whole reply read. */
function request(options: http.RequestOptions, body?: Buffer, send: typeof http.request = http.request): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = send(options, (res) => {
      // Taken now: once the reply has ended, a keep-alive agent takes the socket back and res.socket is null.
      const socket = res.socket;
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => resolve({ status: res.statusCode!, body: Buffer.concat(chunks).toString(), socket, reused: req.reusedSocket }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

test('http: http.createServer fed by RdmaServer; http.request({ createConnection }); an Agent reuses one RdmaSocket for two requests', { timeout: 180_000 }, async () => {
  // The reply names the request and the sha256 of its body.
  const httpServer = http.createServer((req, res) => {
    const hash = createHash('sha256');
    req.on('data', (chunk: Buffer) => hash.update(chunk));
    req.on('end', () => {
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ method: req.method, url: req.url, sha256: hash.digest('hex'), remote: req.socket.remoteAddress }));
    });
  });
  const server = createServer((socket) => httpServer.emit('connection', socket));
  const serverSockets: RdmaSocket[] = [];
  server.on('connection', (socket) => serverSockets.push(socket));
  const port = await listening(server);
  const host = deviceAddress();
  try {
    // One request on a connection of its own: no agent, the socket from createConnection.
    const body = randomBytes(1 << 20);
    const single = await request({ method: 'POST', path: '/upload', host, createConnection: () => connect(port, host) }, body);
    assert.equal(single.status, 200);
    assert.deepEqual(JSON.parse(single.body), { method: 'POST', url: '/upload', sha256: sha256(body), remote: host });
    assert.ok(single.socket instanceof RdmaSocket);
    assert.equal(single.reused, false);

    // A keep-alive Agent whose connections are RdmaSockets: the second request goes over the first one's socket.
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    let made = 0;
    // The agent passes the request's host and port (the recipe in docs/net.md).
    agent.createConnection = (options) => {
      made++;
      return connect(Number(options.port), options.host!);
    };
    try {
      const first = await request({ path: '/one', host, port, agent });
      const second = await request({ path: '/two', host, port, agent });
      assert.equal(first.status, 200);
      assert.equal(JSON.parse(first.body).url, '/one');
      assert.equal(JSON.parse(second.body).url, '/two');
      assert.equal(made, 1);
      assert.equal(first.reused, false);
      assert.equal(second.reused, true);
      assert.equal(second.socket, first.socket);
      // The server side saw two connections in all: the single request's and the agent's one.
      assert.equal(serverSockets.length, 2);
    } finally {
      agent.destroy();
    }
    // Every server-side socket closes once its client is gone (http ended the first, the agent destroyed the second).
    await Promise.all(serverSockets.map((socket) => (socket.closed ? undefined : closed(socket))));
  } finally {
    await closeServer(server);
  }
});

/** A self-signed P-256 certificate for CN=rdmacm-test, made with openssl in the test's folder. */
function selfSigned(): { key: Buffer; cert: Buffer } {
  const keyPath = join(dir, 'key.pem');
  const certPath = join(dir, 'cert.pem');
  execFileSync('openssl', [
    'req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-days', '1',
    '-subj', '/CN=rdmacm-test', '-addext', 'subjectAltName=DNS:rdmacm-test', '-keyout', keyPath, '-out', certPath,
  ], { stdio: ['ignore', 'ignore', 'pipe'] });
  return { key: readFileSync(keyPath), cert: readFileSync(certPath) };
}

test('tls: tls.connect({ socket }) to new tls.TLSSocket(socket, { isServer: true }), certificate verified, 2 MiB echoed (sha256)', { timeout: 180_000 }, async () => {
  const { key, cert } = selfSigned();
  const serverErrors: Error[] = [];
  // allowHalfOpen: TLS ends the socket under it itself. Without it the socket
  // would end its writing side as soon as the client's half-close arrives,
  // before the TLS layer has written the rest of its echo (as a net.Socket
  // under a JS-stream TLSSocket would).
  const server = createServer({ allowHalfOpen: true }, (raw) => {
    const secure = new tls.TLSSocket(raw, { isServer: true, key, cert });
    secure.on('error', (error) => serverErrors.push(error));
    secure.pipe(secure);
  });
  const port = await listening(server);
  try {
    // Checked for real: without the certificate as a CA, the handshake fails and the RDMA socket goes.
    const untrusting = await connected(port);
    const untrustingGone = closed(untrusting);
    const refused = tls.connect({ socket: untrusting, servername: 'rdmacm-test' });
    const [error] = (await once(refused, 'error').catch((e: unknown) => [e])) as [Error & { code: string }];
    assert.equal(error.code, 'DEPTH_ZERO_SELF_SIGNED_CERT');
    await untrustingGone;

    const raw = await connected(port);
    const rawGone = closed(raw);
    const secure = tls.connect({ socket: raw, ca: cert, servername: 'rdmacm-test' });
    await once(secure, 'secureConnect');
    assert.equal(secure.authorized, true);
    assert.equal(secure.getProtocol(), 'TLSv1.3');
    assert.equal(secure.getPeerCertificate().subject.CN, 'rdmacm-test');
    const payload = randomBytes(2 << 20);
    const chunks: Buffer[] = [];
    secure.on('data', (chunk: Buffer) => chunks.push(chunk));
    const ended = once(secure, 'end');
    secure.end(payload);
    await ended;
    assert.equal(sha256(Buffer.concat(chunks)), sha256(payload));
    // The TLS socket's end reaches the RDMA socket under it.
    await rawGone;
    assert.ok(raw.bytesWritten > payload.length);
  } finally {
    await closeServer(server);
  }
  // The first client's abort may surface on the server as a TLS alert; nothing else may.
  for (const error of serverErrors) assert.match(String((error as { code?: string }).code ?? error.message), /ERR_SSL|ECONNRESET|EPIPE|alert/i);
});

test('RdmaAgent and RdmaHttpsAgent: http.get and https.get unchanged but for the agent; keep-alive reuses the socket; the certificate is verified', { timeout: 180_000 }, async () => {
  const { key, cert } = selfSigned();
  const handler = (req: http.IncomingMessage, res: http.ServerResponse) => res.end(JSON.stringify({ url: req.url, secure: 'encrypted' in req.socket }));
  const plain = http.createServer(handler);
  // The refused client's handshake never completes on the server, whose socket
  // (allowHalfOpen) then waits for tls's handshakeTimeout, 120 s by default:
  // over node:net the same. 5 s lets the test end sooner.
  const secure = https.createServer({ key, cert, handshakeTimeout: 5_000 }, handler);
  // allowHalfOpen for TLS, as above; https.Server wraps each socket it is given, as tls.Server does.
  const plainServer = createServer((socket) => plain.emit('connection', socket));
  const secureServer = createServer({ allowHalfOpen: true }, (socket) => secure.emit('connection', socket));
  const plainPort = await listening(plainServer);
  const securePort = await listening(secureServer);
  const host = deviceAddress();
  const agent = new RdmaAgent({ keepAlive: true, maxSockets: 1 });
  const secureAgent = new RdmaHttpsAgent({ keepAlive: true, maxSockets: 1, ca: cert, servername: 'rdmacm-test' });
  try {
    const first = await request({ host, port: plainPort, path: '/one', agent });
    const second = await request({ host, port: plainPort, path: '/two', agent });
    assert.deepEqual([JSON.parse(first.body), JSON.parse(second.body)], [{ url: '/one', secure: false }, { url: '/two', secure: false }]);
    assert.ok(first.socket instanceof RdmaSocket);
    assert.equal(second.reused, true);
    assert.equal(second.socket, first.socket);

    const secureFirst = await request({ host, port: securePort, path: '/three', agent: secureAgent }, undefined, https.request);
    const secureSecond = await request({ host, port: securePort, path: '/four', agent: secureAgent }, undefined, https.request);
    assert.deepEqual([JSON.parse(secureFirst.body), JSON.parse(secureSecond.body)], [{ url: '/three', secure: true }, { url: '/four', secure: true }]);
    const tlsSocket = secureFirst.socket as tls.TLSSocket;
    assert.ok(tlsSocket instanceof tls.TLSSocket);
    assert.equal(tlsSocket.authorized, true);
    assert.equal(tlsSocket.getPeerCertificate().subject.CN, 'rdmacm-test');
    assert.equal(secureSecond.reused, true);
    // Without the certificate as a CA, https refuses the server, over RDMA as over TCP.
    const untrusting = new RdmaHttpsAgent({ servername: 'rdmacm-test' });
    const refused = await request({ host, port: securePort, path: '/five', agent: untrusting }, undefined, https.request).then(() => undefined, (error: unknown) => error);
    untrusting.destroy();
    assert.equal((refused as { code?: string } | undefined)?.code, 'DEPTH_ZERO_SELF_SIGNED_CERT', String(refused));
  } finally {
    agent.destroy();
    secureAgent.destroy();
    await closeServer(plainServer);
    await closeServer(secureServer);
  }
});

test('http2: an http2 server fed by RdmaServer, http2.connect({ createConnection }) carrying three streams at once over one RdmaSocket', { timeout: 180_000 }, async () => {
  const h2 = http2.createServer();
  h2.on('stream', (stream, headers) => {
    const hash = createHash('sha256');
    stream.on('data', (chunk: Buffer) => hash.update(chunk));
    stream.on('end', () => {
      stream.respond({ ':status': 200 });
      stream.end(JSON.stringify({ path: headers[':path'], sha256: hash.digest('hex') }));
    });
  });
  const serverSockets: RdmaSocket[] = [];
  const server = createServer((socket) => {
    serverSockets.push(socket);
    h2.emit('connection', socket);
  });
  const port = await listening(server);
  const host = deviceAddress();
  let made = 0;
  const session = http2.connect(`http://${host}:${port}`, { createConnection: () => (made++, connect(port, host)) });
  try {
    const bodies = [randomBytes(256 << 10), randomBytes(1 << 20), Buffer.alloc(0)];
    const replies = await Promise.all(bodies.map((body, i) => new Promise<{ path: string; sha256: string }>((resolve, reject) => {
      const stream = session.request({ ':path': `/stream${i}`, ':method': 'POST' });
      const chunks: Buffer[] = [];
      stream.on('data', (chunk: Buffer) => chunks.push(chunk));
      stream.on('end', () => resolve(JSON.parse(Buffer.concat(chunks).toString())));
      stream.on('error', reject);
      stream.end(body);
    })));
    assert.deepEqual(replies, bodies.map((body, i) => ({ path: `/stream${i}`, sha256: sha256(body) })));
    assert.equal(made, 1);
    assert.equal(serverSockets.length, 1, 'every stream on one connection');
    assert.ok(session.socket !== undefined);
  } finally {
    const gone = serverSockets.map((socket) => (socket.closed ? undefined : closed(socket)));
    await new Promise<void>((resolve) => session.close(() => resolve()));
    await Promise.all(gone);
    await closeServer(server);
    await new Promise<void>((resolve) => h2.close(() => resolve()));
  }
});

test('http2 over TLS: http2.createSecureServer fed by RdmaServer, http2.connect with a tls.connect({ socket, ALPNProtocols: [\'h2\'] }) over an RdmaSocket', { timeout: 180_000 }, async () => {
  const { key, cert } = selfSigned();
  const h2 = http2.createSecureServer({ key, cert });
  h2.on('stream', (stream, headers) => {
    stream.respond({ ':status': 200 });
    stream.end(JSON.stringify({ path: headers[':path'], alpn: (stream.session?.socket as tls.TLSSocket | undefined)?.alpnProtocol }));
  });
  // allowHalfOpen for TLS, as above.
  const server = createServer({ allowHalfOpen: true }, (socket) => h2.emit('connection', socket));
  const port = await listening(server);
  const host = deviceAddress();
  let raw: RdmaSocket | undefined;
  const session = http2.connect(`https://rdmacm-test:${port}`, {
    createConnection: () => tls.connect({ socket: (raw = connect(port, host)), ALPNProtocols: ['h2'], ca: cert, servername: 'rdmacm-test' }),
  });
  try {
    const replies = await Promise.all(['/x', '/y'].map((path) => new Promise<unknown>((resolve, reject) => {
      const stream = session.request({ ':path': path });
      const chunks: Buffer[] = [];
      stream.on('data', (chunk: Buffer) => chunks.push(chunk));
      stream.on('end', () => resolve(JSON.parse(Buffer.concat(chunks).toString())));
      stream.on('error', reject);
      stream.end();
    })));
    assert.deepEqual(replies, [{ path: '/x', alpn: 'h2' }, { path: '/y', alpn: 'h2' }]);
    assert.ok(raw instanceof RdmaSocket && raw.bytesWritten > 0, 'the TLS bytes went over the RdmaSocket');
  } finally {
    const gone = raw && !raw.closed ? closed(raw) : undefined;
    await new Promise<void>((resolve) => session.close(() => resolve()));
    await gone;
    await closeServer(server);
    await new Promise<void>((resolve) => h2.close(() => resolve()));
  }
});

test('for await (const chunk of socket): a slow consumer gets 3 MiB intact; breaking out destroys the socket and the server sees it close', { timeout: 180_000 }, async () => {
  const payload = randomBytes(3 << 20);
  const pieces = Array.from({ length: 48 }, (_, i) => payload.subarray(i * 65536, (i + 1) * 65536));
  let endless = false;
  const serverClosed: Promise<void>[] = [];
  const serverEnded: Promise<unknown>[] = [];
  const server = createServer((socket) => {
    serverClosed.push(closed(socket));
    // An 'end' listener does not read: these sockets are only written to.
    serverEnded.push(new Promise((resolve) => socket.once('end', resolve)));
    socket.on('error', () => undefined);
    // The first client gets the payload; the second an endless stream it stops reading.
    const source = endless
      ? Readable.from((function* () { for (;;) yield pieces[0]!; })())
      : Readable.from(pieces);
    pipeline(source, socket).catch(() => undefined);
  });
  const port = await listening(server);
  try {
    const client = await connected(port);
    const hash = createHash('sha256');
    let count = 0;
    let length = 0;
    for await (const chunk of client) {
      assert.ok(Buffer.isBuffer(chunk));
      hash.update(chunk);
      length += chunk.length;
      // Slow: the sender stops on credits and ring space until this reads on.
      if (++count % 8 === 0) await sleep(20);
    }
    assert.equal(length, payload.length);
    assert.equal(hash.digest('hex'), sha256(payload));
    assert.ok(count > 1);
    // Regression: a server socket nobody reads saw the client's end and closed
    // (it stayed open for good, leaking its connection, before the socket
    // pushed the end without a reader, as node:net does).
    await within(Promise.all([serverEnded[0], serverClosed[0]]), 20_000, "the unread server socket's end and close");

    endless = true;
    const reader = await connected(port);
    const readerGone = closed(reader);
    let read = 0;
    for await (const chunk of reader) {
      read += (chunk as Buffer).length;
      if (read >= 1 << 20) break;
    }
    await readerGone;
    assert.equal(reader.destroyed, true);
    assert.equal(reader.readyState, 'closed');
    await Promise.all(serverClosed);
  } finally {
    await closeServer(server);
  }
});
