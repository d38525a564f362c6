// The device tier's own choice of device (tests/support/device.ts) where the
// harness's RDMACM_TEST_DEVICE/RDMACM_TEST_ADDR are not set: from a table of
// ports as /sys would describe them.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chooseTestDevice, type PortCandidate } from '../support/device.js';

const port = (device: string, n: number, state: string, linkLayer: string, netdev?: string, address?: string): PortCandidate =>
  ({ device, port: n, state, linkLayer, netdev, address });

const cases: { name: string; ports: PortCandidate[]; wanted?: { device?: string; address?: string }; chosen: string }[] = [
  { name: 'the one ACTIVE port with an address', ports: [port('rxe0', 1, 'ACTIVE', 'Ethernet', 'veth0', '10.77.0.1')], chosen: 'rxe0/1 10.77.0.1' },
  { name: 'an ACTIVE port before a DOWN one', ports: [port('mlx5_0', 1, 'DOWN', 'Ethernet', 'ens1f0', '192.0.2.1'), port('mlx5_1', 1, 'ACTIVE', 'Ethernet', 'ens1f1', '192.0.2.2')], chosen: 'mlx5_1/1 192.0.2.2' },
  { name: 'a port with an IPv4 address before one without', ports: [port('mlx5_0', 1, 'ACTIVE', 'Ethernet', 'ens1f0'), port('mlx5_0', 2, 'ACTIVE', 'Ethernet', 'ens1f1', '192.0.2.9')], chosen: 'mlx5_0/2 192.0.2.9' },
  { name: 'RoCE before InfiniBand', ports: [port('ib0dev', 1, 'ACTIVE', 'InfiniBand', 'ib0', '198.51.100.1'), port('roce', 1, 'ACTIVE', 'Ethernet', 'eth2', '203.0.113.1')], chosen: 'roce/1 203.0.113.1' },
  { name: 'InfiniBand through its IPoIB netdev', ports: [port('mlx4_0', 1, 'ACTIVE', 'InfiniBand', 'ib0', '198.51.100.1')], chosen: 'mlx4_0/1 198.51.100.1' },
  { name: 'the named device', ports: [port('a', 1, 'ACTIVE', 'Ethernet', 'e0', '10.0.0.1'), port('b', 1, 'ACTIVE', 'Ethernet', 'e1', '10.0.0.2')], wanted: { device: 'b' }, chosen: 'b/1 10.0.0.2' },
  { name: 'the port holding the named address', ports: [port('a', 1, 'ACTIVE', 'Ethernet', 'e0', '10.0.0.1'), port('b', 1, 'ACTIVE', 'Ethernet', 'e1', '10.0.0.2')], wanted: { address: '10.0.0.2' }, chosen: 'b/1 10.0.0.2' },
];

for (const c of cases) {
  test(`the device tier chooses ${c.name}`, () => {
    const chosen = chooseTestDevice(c.ports, c.wanted);
    assert.equal(`${chosen.device}/${chosen.port} ${chosen.address}`, c.chosen);
  });
}

test('with no usable port the error lists what it saw and names the variables to set', () => {
  assert.throws(() => chooseTestDevice([port('mlx5_0', 1, 'DOWN', 'Ethernet', 'ens1f0', '192.0.2.1'), port('rxe0', 1, 'ACTIVE', 'Ethernet', 'eth0')]), (error: unknown) => {
    assert.ok(error instanceof Error);
    assert.match(error.message, /mlx5_0 port 1 DOWN \(Ethernet, netdev ens1f0, 192\.0\.2\.1\)/);
    assert.match(error.message, /rxe0 port 1 ACTIVE \(Ethernet, netdev eth0, no IPv4 address\)/);
    assert.match(error.message, /RDMACM_TEST_DEVICE=<device> and RDMACM_TEST_ADDR=/);
    return true;
  });
  assert.throws(() => chooseTestDevice([]), /no RDMA device in \/sys\/class\/infiniband.*RDMACM_TEST_DEVICE/);
});
