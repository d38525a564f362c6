// Connecting to one of rdma-core's rsocket tools started as a server: it may
// still be starting, so a refused connection is retried (bounded, and each
// attempt too: a stall says which).
import { connect, type RdmaSocket, type RdmaSocketSizes } from '../../src/net/index.js';
import { deviceAddress } from './device.js';
import { within } from './within.js';

/** Connects, retrying while the peer tool is still starting (bounded, and each step too: a stall says which). */
export async function connectWhenListening(port: number, rdma: RdmaSocketSizes = {}, host = deviceAddress()): Promise<RdmaSocket> {
  for (let attempt = 0; ; attempt++) {
    const socket = connect({ port, host, rdma });
    const closed = new Promise((resolve) => socket.once('close', resolve));
    // Plain listeners: events.once('connect') would reject at the 'error' event itself.
    const outcome = await within(new Promise<'connected' | (Error & { code: string })>((resolve) => {
      socket.once('connect', () => resolve('connected'));
      socket.once('error', (error: Error & { code: string }) => resolve(error));
    }), 30_000, () => `attempt ${attempt + 1} to connect to port ${port}: neither 'connect' nor 'error' (readyState ${socket.readyState})`);
    if (typeof outcome === 'string') return socket;
    await within(closed, 10_000, `attempt ${attempt + 1} failed with ${outcome.code}, and the socket did not close`);
    if (outcome.code !== 'ECONNREFUSED' || attempt >= 40) throw outcome;
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}
