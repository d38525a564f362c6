// HTTP over RDMA: node:http's server and client on rdmacm/net sockets.
// Usage: node net-http.mjs serve|get ADDR [PORT]   (the server answers one request, then exits)
import http from 'node:http';
import { RdmaAgent, createServer } from 'rdmacm/net';

const [mode, host, port = 8080] = process.argv.slice(2);
if (mode === 'serve') {
  const web = http.createServer((req, res) => {
    res.end(`${req.method} ${req.url} from ${req.socket.remoteAddress}, over RDMA\n`);
    server.close(); // stops listening; the process ends with this connection
  });
  const server = createServer((socket) => web.emit('connection', socket));
  server.listen(Number(port), host, () => console.log(`http server listening on ${host}:${port}`));
} else {
  http.get({ host, port, path: '/hello', agent: new RdmaAgent() }, (res) => {
    console.log(`HTTP/${res.httpVersion} ${res.statusCode}, content-length ${res.headers['content-length']}`);
    res.pipe(process.stdout);
  });
}
