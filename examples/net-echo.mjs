// An echo over RDMA with rdmacm/net: node:net's API, rsockets' wire protocol.
// Usage: node net-echo.mjs serve|send ADDR [PORT] [TEXT]   (the server echoes one client, then exits)
import { connect, createServer } from 'rdmacm/net';

const [mode, host, port = 7471, text = 'hello over RDMA'] = process.argv.slice(2);
if (mode === 'serve') {
  const server = createServer((socket) => {
    socket.pipe(socket);
    server.close(); // stops listening; the process ends with this connection
  });
  server.listen(Number(port), host, () => console.log(`echo server listening on ${host}:${port}`));
} else {
  const socket = connect(Number(port), host, () => socket.end(text));
  socket.on('data', (chunk) => console.log(`echoed by ${socket.remoteAddress}: ${chunk}`));
}
