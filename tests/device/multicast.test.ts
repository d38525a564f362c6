// Multicast on the UDP port space: join a group, send to it, receive from it, leave.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { createId, decodeUdMessage, EventChannel, GRH_SIZE, type CmId } from '../../src/index.js';
import { deviceAddress } from '../support/device.js';

const GROUP = '239.192.0.77';
const SIZE = 64;

/** A UD id resolved toward the group from the device's address, with a UD QP. */
async function member(channel: EventChannel): Promise<CmId> {
  const id = createId(channel, { portSpace: 'UDP' });
  await id.resolveAddr({ address: GROUP, port: 0 }, { source: { address: deviceAddress(), port: 0 } });
  id.createQp({ qpType: 'UD', sendWr: 4, recvWr: 4 });
  return id;
}

test('join a multicast group, send to it, receive from it, leave', { timeout: 60_000 }, async () => {
  using channel = new EventChannel();
  using receiver = await member(channel);
  using sender = await member(channel);
  const inbox = receiver.regMsgs(Buffer.alloc(4 * (GRH_SIZE + SIZE)));
  for (let i = 0; i < 4; i++) receiver.postRecv(inbox, { offset: i * (GRH_SIZE + SIZE), length: GRH_SIZE + SIZE, context: i });

  const joined = await receiver.joinMulticast({ address: GROUP });
  const sending = await sender.joinMulticast({ address: GROUP });
  assert.equal(joined.address, GROUP);
  assert.equal(sending.ud.qpNum, 0xffffff, 'multicast sends go to QP 0xffffff');
  assert.equal(joined.ud.ahAttr.is_global, 1);

  using ah = sender.addressHandleTo(sending.ud);
  const message = sender.regMsgs(randomBytes(SIZE));
  sender.postSend(message, { ud: { ah, remoteQpn: sending.ud.qpNum, remoteQkey: sending.ud.qkey } });
  await sender.queuePair.nextSendCompletion();

  const received = await Promise.race([
    receiver.queuePair.nextRecvCompletion(),
    new Promise<never>((_, reject) => setTimeout(() => reject(new Error('no multicast message within 10 s')), 10_000).unref()),
  ]);
  const slot = (received.context as number) * (GRH_SIZE + SIZE);
  const { payload, source } = decodeUdMessage(inbox.buffer.subarray(slot, slot + GRH_SIZE + SIZE), received.byteLen);
  assert.ok(payload.equals(message.buffer), 'the group delivered the message intact');
  assert.equal(source, deviceAddress());

  receiver.leaveMulticast({ address: GROUP });
  sender.leaveMulticast({ address: GROUP });
  assert.throws(() => receiver.leaveMulticast({ address: '10.1.2.3.4' }), { name: 'RdmaArgumentError' });
});
