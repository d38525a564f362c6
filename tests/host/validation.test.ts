// The safe API's argument checking, on a host with no RDMA device. That host is
// the oracle: any call that reaches librdmacm fails with RdmaError ENODEV. So a
// bad argument must come back as RdmaArgumentError (it never reached C), and a
// good argument set of the same call must come back as ENODEV (validation let
// it through). Also here: the error classes, the enum tables and page-aligned
// memory, which need no device either.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import { hostRdmaDevices } from '../support/device.js';
import koffi from 'koffi';
import { z } from 'zod';
import {
  ConnectionError, EventChannel, MemoryRegion, PRIVATE_DATA_LIMITS, RdmaArgumentError, RdmaError, ResourceClosedError,
  UnsupportedError, WorkCompletionError, connParamSchema, createEndpoint, createId, getAddrInfo, type WorkCompletion,
} from '../../src/index.js';
import { RdmaError as FfiRdmaError, memlockAdvice, memlockLimits } from '../../src/ffi/errors.js';
import { abortError } from '../../src/api/core/errors.js';
import { assertAbortedWith } from '../support/errors.js';
import { encodeConnParam, type ConnParam } from '../../src/api/cm/conn-param.js';
import { endpointSchema, waitSchema } from '../../src/api/cm/cm-id.js';
import { decodeSocketAddress, encodeSocketAddress } from '../../src/api/cm/socket-address.js';
import { readFileSync } from 'node:fs';
import { ahAttrSchema, bytes, instanceCheck, parseArgument, registrableBytes } from '../../src/api/core/validate.js';
import { ibv_ah_attr, type IbvAhAttr } from '../../src/structs/verbs-resources.js';
import {
  Access, AddrInfoFlag, CmEventType, IbvEventType, PortSpace, QpType, WcFlag, WcOpcode, WcStatus, flagMask, flagNames,
  type AccessName,
} from '../../src/api/core/enums.js';
import { rdma_conn_param, type RdmaConnParam } from '../../src/structs/rdma-cma.js';
import { noDeviceAdvice, packageRoot } from '../../src/package-info.js';

const devices = hostRdmaDevices();
const skipNative = devices.length > 0 && `this host has RDMA devices (${devices.join(', ')}): valid calls would not fail with ENODEV`;

interface BadRow {
  readonly name: string;
  /** Calls the public API with one bad argument. */
  readonly call: () => unknown;
  readonly operation: string;
  /** The parameter path of the first issue, e.g. 'options.qp.sendWr'. */
  readonly path: string;
  readonly rule: RegExp;
}

/** The call throws RdmaArgumentError (not RdmaError: nothing reached C) whose first issue is `path` breaking `rule`. */
function assertArgumentError(row: BadRow): void {
  let thrown: unknown;
  try {
    row.call();
  } catch (error) {
    thrown = error;
  }
  assert.ok(thrown !== undefined, `${row.name}: the call was accepted`);
  assert.ok(!(thrown instanceof RdmaError), `${row.name}: the bad argument reached native code: ${String(thrown)}`);
  assert.ok(thrown instanceof RdmaArgumentError, `${row.name}: expected RdmaArgumentError, got ${String(thrown)}`);
  assert.equal(thrown.code, thrown.issues[0]!.code, 'the error carries its first issue\'s code');
  assert.match(thrown.code, /^ERR_(INVALID_ARG_TYPE|INVALID_ARG_VALUE|OUT_OF_RANGE)$/);
  assert.equal(thrown.operation, row.operation);
  assert.ok(thrown.issues.length >= 1);
  const issue = thrown.issues[0]!;
  assert.equal(issue.path, row.path, `first issue: ${JSON.stringify(thrown.issues)}`);
  assert.match(issue.rule, row.rule);
  assert.ok(thrown.message.startsWith(`${row.operation}: `), thrown.message);
  assert.ok(thrown.message.includes(`${row.path}: ${issue.rule}`), thrown.message);
  assert.match(thrown.message, row.rule);
}

test("argument errors carry Node's codes: the wrong type, a number out of range, a value the call cannot take", () => {
  const cases: [string, () => unknown, string][] = [
    ['a string for a channel', () => createId('channel' as never), 'ERR_INVALID_ARG_TYPE'],
    ['a plain object for a ProtectionDomain', () => createEndpoint(TARGET, { pd: {} as never }), 'ERR_INVALID_ARG_TYPE'],
    ['a number for a host name', () => getAddrInfo(127 as never, '7471'), 'ERR_INVALID_ARG_TYPE'],
    ['a boolean for a port', () => createEndpoint({ host: 'x', port: true as never }), 'ERR_INVALID_ARG_TYPE'],
    ['null options', () => createId(null, null as never), 'ERR_INVALID_ARG_TYPE'],
    ['port 70000', () => createEndpoint({ host: 'x', port: 70000 }), 'ERR_OUT_OF_RANGE'],
    ['port -1', () => createEndpoint({ host: 'x', port: -1 }), 'ERR_OUT_OF_RANGE'],
    ['a fraction', () => createEndpoint(TARGET, { qp: { recvWr: 1.5 } }), 'ERR_OUT_OF_RANGE'],
    ['NaN', () => parseArgument('rdma_connect', 'options', waitSchema, { timeoutMs: Number.NaN }), 'ERR_OUT_OF_RANGE'],
    ['Infinity', () => parseArgument('rdma_connect', 'options', waitSchema, { timeoutMs: Infinity }), 'ERR_OUT_OF_RANGE'],
    ['an empty host name', () => getAddrInfo('', '7471'), 'ERR_INVALID_ARG_VALUE'],
    ['an unknown enum name', () => createId(null, { portSpace: 'SCTP' as never }), 'ERR_INVALID_ARG_VALUE'],
    ['an unknown option', () => createId(null, { bogus: 1 } as never), 'ERR_INVALID_ARG_VALUE'],
    ['a NUL in a name', () => getAddrInfo('127.0.0.1\0evil', '7471'), 'ERR_INVALID_ARG_VALUE'],
    ['node and service both null', () => getAddrInfo(null, null), 'ERR_INVALID_ARG_VALUE'],
  ];
  for (const [name, call, code] of cases) {
    assert.throws(call, (error: unknown) => {
      assert.ok(error instanceof RdmaArgumentError, `${name}: ${String(error)}`);
      assert.equal(error.code, code, `${name}: ${error.message}`);
      assert.equal(error.issues[0]!.code, code);
      return true;
    });
  }
});

/** The call reached librdmacm, which found no device. */
function assertReachedNative(call: () => unknown, syscall: string): void {
  assert.throws(call, (error: unknown) => {
    assert.ok(!(error instanceof RdmaArgumentError), `validation refused a valid argument: ${String(error)}`);
    assert.ok(error instanceof RdmaError, `expected RdmaError, got ${String(error)}`);
    assert.equal(error.code, 'ENODEV');
    assert.equal(error.errno, 19);
    assert.equal(error.syscall, syscall);
    return true;
  });
}

const TARGET = { host: '127.0.0.1', port: 7471 } as const;

// ---------------------------------------------------------------- createId
const createIdRows: BadRow[] = [
  { name: 'channel is a plain object', call: () => createId({} as never), operation: 'rdma_create_id', path: 'channel', rule: /expected an EventChannel or null/ },
  { name: 'channel is undefined', call: () => createId(undefined as never), operation: 'rdma_create_id', path: 'channel', rule: /expected an EventChannel or null/ },
  { name: 'channel is a string', call: () => createId('channel' as never), operation: 'rdma_create_id', path: 'channel', rule: /expected an EventChannel or null/ },
  { name: 'options.portSpace SCTP', call: () => createId(null, { portSpace: 'SCTP' as never }), operation: 'rdma_create_id', path: 'options.portSpace', rule: /expected one of "IPOIB"\|"TCP"\|"UDP"\|"IB"/ },
  { name: 'options.portSpace lower case', call: () => createId(null, { portSpace: 'tcp' as never }), operation: 'rdma_create_id', path: 'options.portSpace', rule: /Invalid option/ },
  { name: 'options has an unknown key', call: () => createId(null, { bogus: 1 } as never), operation: 'rdma_create_id', path: 'options', rule: /Unrecognized key: "bogus"/ },
  { name: 'options is null', call: () => createId(null, null as never), operation: 'rdma_create_id', path: 'options', rule: /expected object/ },
];

// ---------------------------------------------------------------- getAddrInfo
const addrInfoRows: BadRow[] = [
  { name: 'node and service both null', call: () => getAddrInfo(null, null), operation: 'rdma_getaddrinfo', path: 'node', rule: /node and service cannot both be null/ },
  { name: 'node is an empty string', call: () => getAddrInfo('', '7471'), operation: 'rdma_getaddrinfo', path: 'node', rule: />=1 characters/ },
  { name: 'service is an empty string', call: () => getAddrInfo('127.0.0.1', ''), operation: 'rdma_getaddrinfo', path: 'service', rule: />=1 characters/ },
  { name: 'node with an embedded NUL', call: () => getAddrInfo('127.0.0.1\0evil', '7471'), operation: 'rdma_getaddrinfo', path: 'node', rule: /must not contain a NUL character/ },
  { name: 'service with an embedded NUL', call: () => getAddrInfo('127.0.0.1', '74\x0071'), operation: 'rdma_getaddrinfo', path: 'service', rule: /must not contain a NUL character/ },
  { name: 'node is a number', call: () => getAddrInfo(127 as never, '7471'), operation: 'rdma_getaddrinfo', path: 'node', rule: /expected string/ },
  { name: 'service is a number', call: () => getAddrInfo('127.0.0.1', 7471 as never), operation: 'rdma_getaddrinfo', path: 'service', rule: /expected string/ },
  {
    name: 'hints.flags has an unknown flag', call: () => getAddrInfo('127.0.0.1', '7471', { flags: ['PASSIVE', 'BOGUS' as never] }),
    operation: 'rdma_getaddrinfo', path: 'hints.flags.1', rule: /expected one of "PASSIVE"\|"NUMERICHOST"\|"NOROUTE"\|"FAMILY"/,
  },
  { name: 'hints.flags is a string', call: () => getAddrInfo('127.0.0.1', '7471', { flags: 'PASSIVE' as never }), operation: 'rdma_getaddrinfo', path: 'hints.flags', rule: /expected array/ },
  { name: 'hints.portSpace bad', call: () => getAddrInfo('127.0.0.1', '7471', { portSpace: 'SCTP' as never }), operation: 'rdma_getaddrinfo', path: 'hints.portSpace', rule: /Invalid option/ },
  { name: 'hints.family bad', call: () => getAddrInfo('127.0.0.1', '7471', { family: 'IPv5' as never }), operation: 'rdma_getaddrinfo', path: 'hints.family', rule: /expected one of "IPv4"\|"IPv6"\|"IB"/ },
  { name: 'hints.family is a number (AF_INET)', call: () => getAddrInfo('127.0.0.1', '7471', { family: 2 as never }), operation: 'rdma_getaddrinfo', path: 'hints.family', rule: /Invalid option/ },
  { name: 'hints.qpType bad', call: () => getAddrInfo('127.0.0.1', '7471', { qpType: 'XRC' as never }), operation: 'rdma_getaddrinfo', path: 'hints.qpType', rule: /expected one of "RC"\|"UC"\|"UD"/ },
  { name: 'hints has an unknown key', call: () => getAddrInfo('127.0.0.1', '7471', { ai_flags: 1 } as never), operation: 'rdma_getaddrinfo', path: 'hints', rule: /Unrecognized key: "ai_flags"/ },
  { name: 'hints is null', call: () => getAddrInfo('127.0.0.1', '7471', null as never), operation: 'rdma_getaddrinfo', path: 'hints', rule: /expected object/ },
];

// ---------------------------------------------------------------- createEndpoint
const endpointRows: BadRow[] = [
  { name: 'target.port 70000', call: () => createEndpoint({ host: 'x', port: 70000 }), operation: 'rdma_create_ep', path: 'target.port', rule: /a port is 0–65535/ },
  { name: 'target.port -1', call: () => createEndpoint({ host: 'x', port: -1 }), operation: 'rdma_create_ep', path: 'target.port', rule: /a port is 0–65535/ },
  { name: 'target.port 1.5', call: () => createEndpoint({ host: 'x', port: 1.5 }), operation: 'rdma_create_ep', path: 'target.port', rule: /a port is an integer 0–65535/ },
  { name: 'target.port NaN', call: () => createEndpoint({ host: 'x', port: Number.NaN }), operation: 'rdma_create_ep', path: 'target.port', rule: /a port is an integer 0–65535/ },
  { name: "target.port 'abc'", call: () => createEndpoint({ host: 'x', port: 'abc' }), operation: 'rdma_create_ep', path: 'target.port', rule: /a port number$/ },
  { name: "target.port '70000' (a string out of range)", call: () => createEndpoint({ host: '127.0.0.1', port: '70000' }), operation: 'rdma_create_ep', path: 'target.port', rule: /a port is 0–65535/ },
  { name: "target.port '' (empty string)", call: () => createEndpoint({ host: 'x', port: '' }), operation: 'rdma_create_ep', path: 'target.port', rule: /a port number$/ },
  { name: "target.port '-1'", call: () => createEndpoint({ host: 'x', port: '-1' }), operation: 'rdma_create_ep', path: 'target.port', rule: /a port number$/ },
  { name: 'target.port missing', call: () => createEndpoint({ host: 'x' } as never), operation: 'rdma_create_ep', path: 'target.port', rule: /a port is an integer 0–65535/ },
  { name: 'active target without host', call: () => createEndpoint({ port: 7471 }), operation: 'rdma_create_ep', path: 'target.host', rule: /an active endpoint needs a host/ },
  { name: 'target.host with an embedded NUL', call: () => createEndpoint({ host: '127.0.0.1\0evil', port: 7471 }), operation: 'rdma_create_ep', path: 'target.host', rule: /must not contain a NUL character/ },
  { name: 'target.host empty', call: () => createEndpoint({ host: '', port: 7471 }), operation: 'rdma_create_ep', path: 'target.host', rule: />=1 characters/ },
  { name: 'target.portSpace bad', call: () => createEndpoint({ ...TARGET, portSpace: 'SCTP' as never }), operation: 'rdma_create_ep', path: 'target.portSpace', rule: /Invalid option/ },
  { name: 'target.passive not a boolean', call: () => createEndpoint({ ...TARGET, passive: 'yes' as never }), operation: 'rdma_create_ep', path: 'target.passive', rule: /expected boolean/ },
  { name: 'target has an unknown key', call: () => createEndpoint({ ...TARGET, address: '1.2.3.4' } as never), operation: 'rdma_create_ep', path: 'target', rule: /Unrecognized key: "address"/ },
  { name: 'target is null', call: () => createEndpoint(null as never), operation: 'rdma_create_ep', path: 'target', rule: /expected object/ },
  { name: 'options.qp.sendWr 0', call: () => createEndpoint(TARGET, { qp: { sendWr: 0 } }), operation: 'rdma_create_ep', path: 'options.qp.sendWr', rule: /must be at least 1/ },
  { name: 'options.qp.recvWr 1.5', call: () => createEndpoint(TARGET, { qp: { recvWr: 1.5 } }), operation: 'rdma_create_ep', path: 'options.qp.recvWr', rule: /expected int/ },
  { name: 'options.qp.recvSge 0', call: () => createEndpoint(TARGET, { qp: { recvSge: 0 } }), operation: 'rdma_create_ep', path: 'options.qp.recvSge', rule: /must be at least 1/ },
  { name: 'options.qp.sendSge 2^31', call: () => createEndpoint(TARGET, { qp: { sendSge: 2 ** 31 } }), operation: 'rdma_create_ep', path: 'options.qp.sendSge', rule: /<=2147483647/ },
  { name: 'options.qp.inlineData -1', call: () => createEndpoint(TARGET, { qp: { inlineData: -1 } }), operation: 'rdma_create_ep', path: 'options.qp.inlineData', rule: />=0/ },
  { name: 'options.qp.inlineData 2^32', call: () => createEndpoint(TARGET, { qp: { inlineData: 2 ** 32 } }), operation: 'rdma_create_ep', path: 'options.qp.inlineData', rule: /<=4294967295/ },
  { name: "options.qp.qpType 'XX'", call: () => createEndpoint(TARGET, { qp: { qpType: 'XX' as never } }), operation: 'rdma_create_ep', path: 'options.qp.qpType', rule: /expected one of "RC"\|"UC"\|"UD"/ },
  { name: 'options.qp.sqSigAll 1', call: () => createEndpoint(TARGET, { qp: { sqSigAll: 1 as never } }), operation: 'rdma_create_ep', path: 'options.qp.sqSigAll', rule: /expected boolean/ },
  { name: 'options.qp has an unknown key', call: () => createEndpoint(TARGET, { qp: { maxSendWr: 4 } as never }), operation: 'rdma_create_ep', path: 'options.qp', rule: /Unrecognized key: "maxSendWr"/ },
  { name: 'options.pd is a plain object', call: () => createEndpoint(TARGET, { pd: {} as never }), operation: 'rdma_create_ep', path: 'options.pd', rule: /expected a ProtectionDomain/ },
  { name: 'options.pd is a pointer', call: () => createEndpoint(TARGET, { pd: 0x1000n as never }), operation: 'rdma_create_ep', path: 'options.pd', rule: /expected a ProtectionDomain/ },
  { name: 'options has an unknown key', call: () => createEndpoint(TARGET, { foo: 1 } as never), operation: 'rdma_create_ep', path: 'options', rule: /Unrecognized key: "foo"/ },
];

// ---------------------------------------------------------------- addresses and wait options
// CmId.bindAddr/resolveAddr/connect/… need an id (so a device); these run their
// schemas through the same parseArgument the methods use.
const addressRows: BadRow[] = [
  { name: "address '999.1.1.1'", call: () => parseArgument('rdma_bind_addr', 'address', endpointSchema, { address: '999.1.1.1' }), operation: 'rdma_bind_addr', path: 'address.address', rule: /expected an IPv4 or IPv6 address/ },
  { name: "address 'hello'", call: () => parseArgument('rdma_bind_addr', 'address', endpointSchema, { address: 'hello' }), operation: 'rdma_bind_addr', path: 'address.address', rule: /expected an IPv4 or IPv6 address/ },
  { name: "address '' ", call: () => parseArgument('rdma_bind_addr', 'address', endpointSchema, { address: '' }), operation: 'rdma_bind_addr', path: 'address.address', rule: /expected an IPv4 or IPv6 address/ },
  { name: "address '1.2.3.4:80'", call: () => parseArgument('rdma_bind_addr', 'address', endpointSchema, { address: '1.2.3.4:80' }), operation: 'rdma_bind_addr', path: 'address.address', rule: /expected an IPv4 or IPv6 address/ },
  { name: 'address missing', call: () => parseArgument('rdma_resolve_addr', 'destination', endpointSchema, { port: 1 }), operation: 'rdma_resolve_addr', path: 'destination.address', rule: /expected an IPv4 or IPv6 address/ },
  { name: 'port 70000', call: () => parseArgument('rdma_bind_addr', 'address', endpointSchema, { address: '10.0.0.1', port: 70000 }), operation: 'rdma_bind_addr', path: 'address.port', rule: /a port is 0–65535/ },
  { name: 'port -1', call: () => parseArgument('rdma_bind_addr', 'address', endpointSchema, { address: '10.0.0.1', port: -1 }), operation: 'rdma_bind_addr', path: 'address.port', rule: /a port is 0–65535/ },
  { name: 'port 1.5', call: () => parseArgument('rdma_bind_addr', 'address', endpointSchema, { address: '10.0.0.1', port: 1.5 }), operation: 'rdma_bind_addr', path: 'address.port', rule: /expected int/ },
  { name: "port '80'", call: () => parseArgument('rdma_bind_addr', 'address', endpointSchema, { address: '10.0.0.1', port: '80' }), operation: 'rdma_bind_addr', path: 'address.port', rule: /expected number/ },
  { name: 'address has an unknown key', call: () => parseArgument('rdma_bind_addr', 'address', endpointSchema, { address: '10.0.0.1', family: 'IPv4' }), operation: 'rdma_bind_addr', path: 'address', rule: /Unrecognized key: "family"/ },
  { name: 'timeoutMs -1', call: () => parseArgument('rdma_resolve_route', 'options', waitSchema, { timeoutMs: -1 }), operation: 'rdma_resolve_route', path: 'options.timeoutMs', rule: />=0/ },
  { name: 'timeoutMs 1.5', call: () => parseArgument('rdma_connect', 'options', waitSchema, { timeoutMs: 1.5 }), operation: 'rdma_connect', path: 'options.timeoutMs', rule: /expected int/ },
  { name: "timeoutMs '100'", call: () => parseArgument('rdma_connect', 'options', waitSchema, { timeoutMs: '100' }), operation: 'rdma_connect', path: 'options.timeoutMs', rule: /expected number/ },
  { name: 'timeoutMs Infinity', call: () => parseArgument('rdma_connect', 'options', waitSchema, { timeoutMs: Infinity }), operation: 'rdma_connect', path: 'options.timeoutMs', rule: /expected number|expected int/ },
  { name: 'signal is a plain object', call: () => parseArgument('rdma_accept', 'options', waitSchema, { signal: { aborted: false } }), operation: 'rdma_accept', path: 'options.signal', rule: /expected AbortSignal|Input not instance of AbortSignal/ },
  { name: 'signal is an AbortController', call: () => parseArgument('rdma_accept', 'options', waitSchema, { signal: new AbortController() }), operation: 'rdma_accept', path: 'options.signal', rule: /AbortSignal/ },
  { name: 'wait options have an unknown key', call: () => parseArgument('rdma_disconnect', 'options', waitSchema, { timeout: 5 }), operation: 'rdma_disconnect', path: 'options', rule: /Unrecognized key: "timeout"/ },
];

// ---------------------------------------------------------------- connection parameters
const connParamRows: { name: string; param: unknown; path: string; rule: RegExp }[] = [
  { name: 'retryCount 8', param: { retryCount: 8 }, path: 'retryCount', rule: /retryCount is 0–7/ },
  { name: 'retryCount -1', param: { retryCount: -1 }, path: 'retryCount', rule: />=0/ },
  { name: 'rnrRetryCount 8', param: { rnrRetryCount: 8 }, path: 'rnrRetryCount', rule: /rnrRetryCount is 0–7/ },
  { name: 'responderResources 256', param: { responderResources: 256 }, path: 'responderResources', rule: /<=255/ },
  { name: 'initiatorDepth 1.5', param: { initiatorDepth: 1.5 }, path: 'initiatorDepth', rule: /expected int/ },
  { name: 'flowControl -1', param: { flowControl: -1 }, path: 'flowControl', rule: />=0/ },
  { name: 'qpNum 2^32', param: { qpNum: 2 ** 32 }, path: 'qpNum', rule: /<=4294967295/ },
  { name: 'srq 1', param: { srq: 1 }, path: 'srq', rule: /expected boolean/ },
  { name: 'privateData a string', param: { privateData: 'hello' }, path: 'privateData', rule: /expected a Buffer or Uint8Array/ },
  { name: 'privateData an ArrayBuffer', param: { privateData: new ArrayBuffer(4) }, path: 'privateData', rule: /expected a Buffer or Uint8Array/ },
  { name: 'unknown key', param: { private_data: Buffer.alloc(1) }, path: '', rule: /Unrecognized key: "private_data"/ },
];

const badTables: [string, BadRow[]][] = [
  ['createId', createIdRows],
  ['getAddrInfo', addrInfoRows],
  ['createEndpoint', endpointRows],
  ['address schema', addressRows],
];
for (const [group, table] of badTables) {
  for (const row of table) {
    test(`${group} refuses ${row.name} before native code`, () => assertArgumentError(row));
  }
}

for (const row of connParamRows) {
  test(`connParamSchema refuses ${row.name}`, () => {
    const result = connParamSchema.safeParse(row.param);
    assert.equal(result.success, false);
    const issue = result.error!.issues[0]!;
    assert.equal(issue.path.map(String).join('.'), row.path);
    assert.match(issue.message, row.rule);
    // connect/accept parse it the same way: RdmaArgumentError rooted at 'param'.
    const path = row.path ? `param.${row.path}` : 'param';
    for (const kind of ['connect', 'accept'] as const) {
      assertArgumentError({
        name: `${kind} ${row.name}`, operation: `rdma_${kind}`, path, rule: row.rule,
        call: () => encodeConnParam(`rdma_${kind}`, row.param as ConnParam, kind, 'RC'),
      });
    }
  });
}

// connect/accept parse private data apart from the rest (so the parse memo answers the rest): the same refusals with it.
for (const row of connParamRows.filter((r) => !('privateData' in (r.param as object)))) {
  test(`connect/accept refuse ${row.name} beside valid private data, as without it`, () => {
    const path = row.path ? `param.${row.path}` : 'param';
    for (const kind of ['connect', 'accept'] as const) {
      for (let attempt = 0; attempt < 2; attempt++) {
        assertArgumentError({
          name: `${kind} ${row.name}`, operation: `rdma_${kind}`, path, rule: row.rule,
          call: () => encodeConnParam(`rdma_${kind}`, { privateData: Buffer.alloc(8), ...(row.param as object) } as ConnParam, kind, 'RC'),
        });
      }
    }
  });
}

test('connect/accept read each field once and see what a whole parse sees', () => {
  const data = Buffer.from('0123456789');
  for (let attempt = 0; attempt < 3; attempt++) {
    const encoded = encodeConnParam('rdma_connect', { privateData: data, responderResources: 0, initiatorDepth: 0, retryCount: 5 }, 'connect', 'RC');
    const struct = koffi.decode(encoded.struct, rdma_conn_param) as RdmaConnParam;
    assert.deepEqual(
      [struct.private_data_len, struct.responder_resources, struct.initiator_depth, struct.flow_control, struct.retry_count, struct.rnr_retry_count, struct.srq, struct.qp_num],
      [10, 0, 0, 1, 5, 7, 0, 0],
    );
    assert.ok(encoded.privateData!.equals(data));
  }
  // A hidden (non-enumerable) field is still read, as zod reads it: refused, not dropped.
  const hidden = Object.defineProperty({ privateData: data }, 'retryCount', { value: 9, enumerable: false });
  assertArgumentError({ name: 'hidden retryCount', operation: 'rdma_connect', path: 'param.retryCount', rule: /retryCount is 0–7/, call: () => encodeConnParam('rdma_connect', hidden, 'connect', 'RC') });
  // Private data behind a getter is read once.
  let reads = 0;
  const getter = { get privateData() { reads++; return data; }, retryCount: 2 };
  const encoded = encodeConnParam('rdma_accept', getter, 'accept', 'RC');
  assert.equal(reads, 1);
  assert.equal((koffi.decode(encoded.struct, rdma_conn_param) as RdmaConnParam).retry_count, 2);
});

test('connParamSchema fills in the documented defaults', () => {
  assert.deepEqual(connParamSchema.parse({}), {
    responderResources: 1, initiatorDepth: 1, flowControl: 1, retryCount: 7, rnrRetryCount: 7, srq: false, qpNum: 0,
  });
  const parsed = connParamSchema.parse({ retryCount: 0, rnrRetryCount: 0, responderResources: 255, privateData: new Uint8Array(3) });
  assert.equal(parsed.retryCount, 0);
  assert.equal(parsed.responderResources, 255);
  assert.equal(parsed.privateData?.byteLength, 3);
});

const privateDataLimits = [
  { transport: 'RC', kind: 'connect', limit: 56 },
  { transport: 'RC', kind: 'accept', limit: 196 },
  { transport: 'UD', kind: 'connect', limit: 180 },
  { transport: 'UD', kind: 'accept', limit: 136 },
] as const;

for (const { transport, kind, limit } of privateDataLimits) {
  test(`${transport} ${kind} private data: ${limit} bytes encode, ${limit + 1} are refused`, () => {
    assert.equal(PRIVATE_DATA_LIMITS[transport][kind], limit);
    const operation = `rdma_${kind}`;
    const data = Buffer.alloc(limit, 0xab);
    const encoded = encodeConnParam(operation, { privateData: data, retryCount: 3 }, kind, transport);
    assert.equal(encoded.privateData?.byteLength, limit);
    assert.ok(encoded.privateData!.equals(data), 'the private data is copied as is');
    const struct = koffi.decode(encoded.struct, rdma_conn_param) as RdmaConnParam;
    assert.equal(struct.private_data_len, limit);
    assert.equal(BigInt(struct.private_data as bigint), koffi.address(encoded.privateData!));
    assert.equal(struct.retry_count, 3);
    assert.equal(struct.rnr_retry_count, 7);

    assertArgumentError({
      name: `${limit + 1} bytes`, operation, path: 'param.privateData',
      rule: new RegExp(`at most ${limit} bytes on ${kind} for ${transport} \\(got ${limit + 1}\\)`),
      call: () => encodeConnParam(operation, { privateData: new Uint8Array(limit + 1) }, kind, transport),
    });
  });
}

test('encodeConnParam without private data writes a NULL pointer and length 0', () => {
  const encoded = encodeConnParam('rdma_connect', undefined, 'connect', 'RC');
  assert.equal(encoded.privateData, undefined);
  const struct = koffi.decode(encoded.struct, rdma_conn_param) as RdmaConnParam;
  assert.equal(struct.private_data_len, 0);
  assert.ok(struct.private_data === null || BigInt(struct.private_data) === 0n);
  assert.equal(struct.responder_resources, 1);
  assert.equal(struct.initiator_depth, 1);
});

// ---------------------------------------------------------------- accepted inputs of the schemas
const goodAddresses = [
  { input: { address: '10.0.0.1' }, port: 0 },
  { input: { address: '::1', port: 7471 }, port: 7471 },
  { input: { address: 'fe80::1', port: 65535 }, port: 65535 },
  { input: { address: '0.0.0.0', port: 0 }, port: 0 },
];
for (const { input, port } of goodAddresses) {
  test(`address schema accepts ${JSON.stringify(input)}`, () => {
    const parsed = parseArgument('rdma_bind_addr', 'address', endpointSchema, input);
    assert.deepEqual(parsed, { address: input.address, port });
  });
}

test('wait options accept a non-negative integer timeout and an AbortSignal', () => {
  const signal = new AbortController().signal;
  assert.deepEqual(parseArgument('rdma_connect', 'options', waitSchema, { timeoutMs: 0, signal }), { timeoutMs: 0, signal });
  assert.deepEqual(parseArgument('rdma_connect', 'options', waitSchema, { timeoutMs: 10_000 }), { timeoutMs: 10_000 });
  assert.deepEqual(parseArgument('rdma_connect', 'options', waitSchema, {}), {});
});

// ---------------------------------------------------------------- IPv6 zones
test('an IPv6 address may name its zone, by interface or index, as node:net takes it; it travels as sin6_scope_id and comes back named', () => {
  const loIndex = Number(readFileSync('/sys/class/net/lo/ifindex', 'utf8'));
  for (const [text, scope] of [['fe80::1%lo', loIndex], [`fe80::1%${loIndex}`, loIndex], ['fe80::1', 0], ['fd77::1', 0]] as const) {
    assert.deepEqual(parseArgument('op', 'destination', endpointSchema, { address: text, port: 7 }), { address: text, port: 7 });
    const sockaddr = encodeSocketAddress(text, 7);
    assert.equal(sockaddr.readUInt32LE(24), scope, `${text}: sin6_scope_id`);
    assert.deepEqual(decodeSocketAddress(sockaddr), { family: 'IPv6', address: scope ? 'fe80::1%lo' : text, port: 7 }, `${text}: decoded, the zone by name`);
  }
  // A scope on an address that is not link-local is kept in the sockaddr, and not printed (node:net prints link-local zones only).
  assert.deepEqual(decodeSocketAddress(encodeSocketAddress('fd77::1%lo', 7)), { family: 'IPv6', address: 'fd77::1', port: 7 });
  for (const bad of ['fe80::1%nosuchif0', 'fe80::1%', 'fe80::1%lo%lo', 'fe80::1%../lo', 'fe80::1%0', '10.0.0.1%lo', 'fe80::1%4294967296']) {
    assertArgumentError({
      name: bad, call: () => parseArgument('op', 'destination', endpointSchema, { address: bad, port: 7 }), operation: 'op', path: 'destination.address',
      rule: /expected an IPv4 or IPv6 address \(an IPv6 zone must be an interface of this host/,
    });
  }
});

// ---------------------------------------------------------------- the parse memo
// parseArgument remembers each schema's last flat input; these pin down when it
// may answer without zod and that it never answers for an input zod would refuse.
// A fresh schema per test: memos are per schema and would carry over.
const memoSchema = () => z.strictObject({ count: z.number().int().min(1).default(1), name: z.string().default('x') });
const refused = (name: string, call: () => unknown, path: string, rule: RegExp) => assertArgumentError({ name, call, operation: 'op', path, rule });

test('a value zod trips over (a Proxy of a typed array: a length check reads its length, whose getter throws for a Proxy) is refused at its parameter, never thrown through', () => {
  const proxy = new Proxy(new Uint8Array(2), {});
  assert.throws(() => parseArgument('op', 'host', z.string().min(1), proxy), (error: unknown) =>
    error instanceof RdmaArgumentError && error.issues.length === 1 && error.issues[0]!.path === 'host' && /could not be read/.test(error.issues[0]!.rule));
  assert.throws(() => getAddrInfo(proxy as never, '7471'), RdmaArgumentError);
});

test('an instance check answers by its own test: what it accepts comes back as it went in, what it refuses (or throws on) zod words, at the parameter', () => {
  const buffer = Buffer.alloc(4);
  assert.equal(parseArgument('op', 'data', bytes, buffer), buffer);
  // Not remembered by identity: a Buffer that has since lied about its length is refused.
  Object.defineProperty(buffer, 'length', { value: 1 << 30 });
  refused('a redefined length', () => parseArgument('op', 'data', bytes, buffer), 'data', /expected a Buffer or Uint8Array/);
  refused('a Proxy', () => parseArgument('op', 'data', bytes, new Proxy(new Uint8Array(2), {})), 'data', /expected a Buffer or Uint8Array/);
  const throwing = instanceCheck<object>(() => {
    throw new TypeError('a trap threw');
  }, 'expected a thing');
  assert.throws(() => parseArgument('op', 'thing', throwing, {}), (error: unknown) =>
    error instanceof RdmaArgumentError && error.issues.length === 1 && error.issues[0]!.path === 'thing');
});

test('parse memo: an equal flat input gets the same frozen output', () => {
  const schema = memoSchema();
  const first = parseArgument('op', 'options', schema, { count: 2 });
  const second = parseArgument('op', 'options', schema, { count: 2 });
  assert.deepEqual(first, { count: 2, name: 'x' });
  assert.equal(second, first, 'answered from the memo');
  assert.ok(Object.isFrozen(second));
});

test('parse memo: a changed value, key or key order is parsed again', () => {
  const schema = memoSchema();
  const first = parseArgument('op', 'options', schema, { count: 2, name: 'a' });
  assert.notEqual(parseArgument('op', 'options', schema, { count: 3, name: 'a' }), first);
  const reordered = parseArgument('op', 'options', schema, { name: 'a', count: 3 });
  assert.deepEqual(reordered, { count: 3, name: 'a' });
  assert.notEqual(parseArgument('op', 'options', schema, { count: 3 }), reordered);
});

test('parse memo: a schema remembers its last four inputs', () => {
  const schema = memoSchema();
  const outputs = [1, 2, 3, 4].map((count) => parseArgument('op', 'options', schema, { count }));
  for (const [i, count] of [1, 2, 3, 4].entries()) {
    assert.equal(parseArgument('op', 'options', schema, { count }), outputs[i], `count ${count}: answered from the memo`);
  }
  parseArgument('op', 'options', schema, { count: 5 });
  assert.notEqual(parseArgument('op', 'options', schema, { count: 1 }), outputs[0], 'the oldest was forgotten for the fifth');
  assert.equal(parseArgument('op', 'options', schema, { count: 4 }), outputs[3], 'the newer ones were not');
});

test('parse memo: an input zod refuses is refused after a remembered good one', () => {
  const schema = memoSchema();
  parseArgument('op', 'options', schema, { count: 2 });
  refused('count 0', () => parseArgument('op', 'options', schema, { count: 0 }), 'options.count', />=1/);
  refused('an extra key', () => parseArgument('op', 'options', schema, { count: 2, extra: true }), 'options', /Unrecognized key: "extra"/);
  refused("count '2'", () => parseArgument('op', 'options', schema, { count: '2' }), 'options.count', /expected number/);
});

test('parse memo: primitives are compared with Object.is (0 and -0 differ; a refused NaN stays refused)', () => {
  const nonNegative = z.number().min(0);
  assert.equal(parseArgument('op', 'n', nonNegative, 0), 0);
  assert.ok(Object.is(parseArgument('op', 'n', nonNegative, -0), -0));
  refused('NaN', () => parseArgument('op', 'n', nonNegative, NaN), 'n', /expected number/);
  refused('NaN again', () => parseArgument('op', 'n', nonNegative, NaN), 'n', /expected number/);
});

test('parse memo: class instances zod passes through are remembered by prototype; other objects are not', () => {
  const withSignal = { timeoutMs: 5, signal: new AbortController().signal };
  const first = parseArgument('op', 'options', waitSchema, withSignal);
  assert.equal(parseArgument('op', 'options', waitSchema, { ...withSignal }), first, 'the same signal: answered from the memo');
  assert.equal(first.signal, withSignal.signal, 'the instance itself, not a copy');
  const otherSignal = new AbortController().signal;
  const second = parseArgument('op', 'options', waitSchema, { timeoutMs: 5, signal: otherSignal });
  assert.notEqual(second, first, 'another signal gets an output of its own');
  assert.equal(second.signal, otherSignal, 'which carries that signal');
  assert.deepEqual({ ...second, signal: null }, { ...first, signal: null });
  assert.ok(Object.isFrozen(second));
  assert.equal(parseArgument('op', 'options', waitSchema, { timeoutMs: 5, signal: otherSignal }), second, 'and is remembered in turn');
  assert.equal(parseArgument('op', 'options', waitSchema, { timeoutMs: 6, signal: otherSignal }).timeoutMs, 6, 'a changed primitive is parsed again');
  let reads = 0;
  const third = new AbortController().signal;
  const viaGetter = { timeoutMs: 6, get signal() { reads++; return third; } };
  assert.equal(parseArgument('op', 'options', waitSchema, viaGetter).signal, third);
  assert.equal(reads, 1, 'an accessor is read once');
  refused('not a signal', () => parseArgument('op', 'options', waitSchema, { timeoutMs: 5, signal: {} }), 'options.signal', /AbortSignal/);
  class Impostor {}
  refused('an instance of another class', () => parseArgument('op', 'options', waitSchema, { timeoutMs: 5, signal: new Impostor() }), 'options.signal', /AbortSignal/);

  // An instance zod turned into something else is remembered by identity only: its output came from that instance.
  class Handle { constructor(readonly address: number) {} }
  const unwrapped = z.strictObject({ handle: z.instanceof(Handle).transform((h) => h.address) });
  assert.equal(parseArgument('op', 'o', unwrapped, { handle: new Handle(1) }).handle, 1);
  assert.equal(parseArgument('op', 'o', unwrapped, { handle: new Handle(2) }).handle, 2, 'parsed again, not answered from the memo');

  const objects = z.strictObject({ data: z.unknown(), bytes: z.unknown(), list: z.unknown() });
  const nested = { data: { a: 1 }, bytes: Buffer.alloc(1), list: [1] };
  assert.notEqual(parseArgument('op', 'o', objects, nested), parseArgument('op', 'o', objects, nested), 'plain objects, byte views and arrays could change inside');
});

test('parse memo: a plain array of primitives (access rights) is remembered by a copy, and its output comes out frozen', () => {
  const names = z.array(z.enum(['LOCAL_WRITE', 'REMOTE_WRITE', 'REMOTE_READ'])).default(['LOCAL_WRITE']);
  const access = ['LOCAL_WRITE', 'REMOTE_WRITE'];
  const first = parseArgument('op', 'access', names, access);
  assert.deepEqual(first, access);
  assert.notEqual(first, access, "zod's copy, not the caller's array");
  assert.ok(Object.isFrozen(first) && !Object.isFrozen(access));
  assert.equal(parseArgument('op', 'access', names, ['LOCAL_WRITE', 'REMOTE_WRITE']), first, 'an equal list: answered from the memo');
  access[1] = 'REMOTE_READ';
  assert.deepEqual(parseArgument('op', 'access', names, access), ['LOCAL_WRITE', 'REMOTE_READ'], 'a change to the array is seen');
  assert.notEqual(parseArgument('op', 'access', names, ['LOCAL_WRITE']), first, 'a shorter list is parsed again');
  const defaulted = parseArgument('op', 'access', names, undefined);
  assert.deepEqual(defaulted, ['LOCAL_WRITE']);
  assert.equal(parseArgument('op', 'access', names, undefined), defaulted, 'the default too');
  refused('a name no right has', () => parseArgument('op', 'access', names, ['LOCAL_WRITE', 'REMOTE_WRIT']), 'access.1', /expected one of/);
  let traps = 0;
  const proxy = new Proxy(['LOCAL_WRITE', 'REMOTE_WRITE'], { get: (target, key) => (traps++, Reflect.get(target, key)) });
  assert.deepEqual(parseArgument('op', 'access', names, proxy), ['LOCAL_WRITE', 'REMOTE_WRITE']);
  assert.ok(traps > 0, 'a Proxy is parsed by zod');
  class Names extends Array<string> {}
  assert.notEqual(parseArgument('op', 'access', names, Names.from(['LOCAL_WRITE', 'REMOTE_WRITE'])), first, 'a subclass is parsed again');
});

test('registrableBytes answers by its own test: a fixed-length view passes as it is, a resizable one is refused after it', () => {
  const buffer = Buffer.alloc(8);
  assert.equal(parseArgument('op', 'buffer', registrableBytes, buffer), buffer);
  const resizable = new Uint8Array(new (ArrayBuffer as unknown as new (n: number, o: object) => ArrayBuffer)(8, { maxByteLength: 16 }));
  refused('a resizable view', () => parseArgument('op', 'buffer', registrableBytes, resizable), 'buffer', /resizable/);
  refused('a Proxy', () => parseArgument('op', 'buffer', registrableBytes, new Proxy(new Uint8Array(2), {})), 'buffer', /expected a Buffer or Uint8Array/);
});

test('parse memo: a plain object of primitives is remembered by a copy of its contents, and what zod built of it comes out frozen', () => {
  const schema = z.strictObject({ opcode: z.string(), remote: z.strictObject({ address: z.number(), rkey: z.number(), length: z.number().optional() }) });
  const remote = { address: 4096, rkey: 7 };
  const first = parseArgument('op', 'options', schema, { opcode: 'RDMA_WRITE', remote });
  assert.deepEqual(first, { opcode: 'RDMA_WRITE', remote: { address: 4096, rkey: 7 } });
  assert.notEqual(first.remote, remote, "zod's copy, not the caller's object");
  assert.ok(Object.isFrozen(first) && Object.isFrozen(first.remote), 'both levels frozen');
  assert.ok(!Object.isFrozen(remote), "the caller's object is left as it was");
  assert.equal(parseArgument('op', 'options', schema, { opcode: 'RDMA_WRITE', remote: { address: 4096, rkey: 7 } }), first, 'an equal record: answered from the memo');
  remote.rkey = 8;
  const changed = parseArgument('op', 'options', schema, { opcode: 'RDMA_WRITE', remote });
  assert.equal(changed.remote.rkey, 8, 'the remembered contents are a copy: a change to the object is seen');
  for (const other of [{ address: 4096, rkey: 9 }, { rkey: 7, address: 4096 }, { address: 4096, rkey: 7, length: 1 }]) {
    const parsed = parseArgument('op', 'options', schema, { opcode: 'RDMA_WRITE', remote: other });
    assert.notEqual(parsed, first, `remote ${JSON.stringify(other)}: parsed again`);
    assert.deepEqual(parsed.remote, other);
  }
  refused("rkey '7'", () => parseArgument('op', 'options', schema, { opcode: 'RDMA_WRITE', remote: { address: 4096, rkey: '7' } }), 'options.remote.rkey', /expected number/);
  let reads = 0;
  const viaGetter = { address: 4096, get rkey() { reads++; return 7; } };
  parseArgument('op', 'options', schema, { opcode: 'RDMA_WRITE', remote: viaGetter });
  parseArgument('op', 'options', schema, { opcode: 'RDMA_WRITE', remote: viaGetter });
  assert.ok(reads >= 2, 'a record with an accessor is read on each call');
  // A record deeper than one level, or one that zod passes through as it is, is never remembered.
  const deep = z.strictObject({ remote: z.strictObject({ at: z.strictObject({ address: z.number() }) }) });
  const deepInput = { remote: { at: { address: 1 } } };
  assert.notEqual(parseArgument('op', 'o', deep, deepInput), parseArgument('op', 'o', deep, deepInput));
  const passed = z.strictObject({ data: z.custom<{ a: number }>((value) => typeof value === 'object') });
  const data = { a: 1 };
  assert.equal(parseArgument('op', 'o', passed, { data }).data, data);
  assert.ok(!Object.isFrozen(data), "zod's output was the caller's own object: not frozen");
  const equal = { a: 1 };
  assert.equal(parseArgument('op', 'o', passed, { data: equal }).data, equal, 'and not remembered: an equal object comes back as itself');
});

test('parse memo: inputs with accessors or a class prototype are not remembered', () => {
  const schema = memoSchema();
  class Options { count = 2; }
  let reads = 0;
  const accessor = { get count() { reads++; return 2; } };
  parseArgument('op', 'options', schema, accessor);
  parseArgument('op', 'options', schema, accessor);
  assert.equal(reads, 2, 'zod read the accessor on each call');
  assert.notEqual(parseArgument('op', 'options', schema, { count: 2 }), parseArgument('op', 'options', schema, new Options()));
  assert.ok(!Object.isFrozen(parseArgument('op', 'options', schema, new Options())));
});

// ---------------------------------------------------------------- valid calls reach native code
// Skipped where /sys/class/infiniband has entries: there, these calls succeed.
const validCalls: { name: string; syscall: string; call: () => unknown }[] = [
  { name: 'createId(null)', syscall: 'rdma_create_id', call: () => createId(null) },
  { name: "createId(null, { portSpace: 'UDP', context })", syscall: 'rdma_create_id', call: () => createId(null, { portSpace: 'UDP', context: { any: 'thing' } }) },
  { name: 'new EventChannel()', syscall: 'rdma_create_event_channel', call: () => new EventChannel() },
  { name: "getAddrInfo('127.0.0.1', '7471')", syscall: 'rdma_getaddrinfo', call: () => getAddrInfo('127.0.0.1', '7471') },
  {
    name: 'getAddrInfo(null, service, every hint)', syscall: 'rdma_getaddrinfo',
    call: () => getAddrInfo(null, '7471', { flags: ['PASSIVE', 'NUMERICHOST'], family: 'IPv4', qpType: 'RC', portSpace: 'TCP' }),
  },
  { name: "getAddrInfo('::1', null)", syscall: 'rdma_getaddrinfo', call: () => getAddrInfo('::1', null) },
  { name: "createEndpoint({ host: '127.0.0.1', port: 7471 })", syscall: 'rdma_getaddrinfo', call: () => createEndpoint(TARGET) },
  { name: "createEndpoint({ port: '65535', passive: true })", syscall: 'rdma_getaddrinfo', call: () => createEndpoint({ port: '65535', passive: true }) },
  {
    name: 'createEndpoint(target, every qp option)', syscall: 'rdma_getaddrinfo',
    call: () => createEndpoint({ ...TARGET, port: 0, portSpace: 'UDP' }, { qp: { sendWr: 1, recvWr: 1, sendSge: 1, recvSge: 1, inlineData: 0, sqSigAll: true, qpType: 'UD' }, context: 1 }),
  },
];
for (const row of validCalls) {
  test(`valid ${row.name} passes validation and reaches ${row.syscall} (ENODEV)`, { skip: skipNative }, () => {
    assertReachedNative(row.call, row.syscall);
  });
}

// ---------------------------------------------------------------- page-aligned memory
for (const size of [1, 4096, 10000]) {
  test(`MemoryRegion.pageAligned(${size}) is a zero-filled, page-aligned Buffer of ${size} bytes`, () => {
    const buffer = MemoryRegion.pageAligned(size);
    assert.ok(Buffer.isBuffer(buffer));
    assert.equal(buffer.byteLength, size);
    assert.equal(koffi.address(buffer) % 4096n, 0n);
    assert.ok(buffer.every((byte) => byte === 0), 'zero-filled');
    buffer.fill(0xff);
    assert.equal(buffer[size - 1], 0xff, 'the whole length is writable');
  });
}

// ---------------------------------------------------------------- enum tables
const enumTables = { PortSpace, QpType, AddrInfoFlag, Access, CmEventType, WcStatus, WcOpcode, WcFlag, IbvEventType } as const;
for (const [tableName, table] of Object.entries(enumTables)) {
  test(`${tableName}: every name round-trips and unknown values are UNKNOWN(n)`, () => {
    const values = table.values as Record<string, number>;
    const nameOf = table.nameOf as (value: number) => string;
    assert.deepEqual(table.names, Object.keys(values));
    assert.ok(table.names.length > 0);
    assert.equal(new Set(Object.values(values)).size, table.names.length, 'no two names share a value');
    for (const name of table.names) assert.equal(nameOf(values[name]!), name);
    const unknown = Math.max(...Object.values(values)) + 1;
    assert.equal(nameOf(unknown), `UNKNOWN(${unknown})`);
    assert.equal(nameOf(-1), 'UNKNOWN(-1)');
  });
}

test('Access: flagMask and flagNames round-trip every combination', () => {
  const names = Access.names;
  for (let subset = 0; subset < 1 << names.length; subset++) {
    const chosen = names.filter((_, i) => (subset & (1 << i)) !== 0);
    const mask = flagMask(Access, chosen);
    assert.equal(mask, chosen.reduce((m, name) => m | Access.values[name], 0));
    assert.deepEqual(flagNames(Access, mask), chosen);
  }
  assert.equal(flagMask(Access, [] as AccessName[]), 0);
  assert.equal(flagMask(Access, ['LOCAL_WRITE', 'REMOTE_READ']), 0b101);
  assert.deepEqual(flagNames(Access, 1 << 30), [], 'bits without a name are dropped');
});

// ---------------------------------------------------------------- error classes
/** `ulimit -l` of a shell this process starts, as the hint words it: '8192 KiB', 'unlimited'. */
function currentMemlock(): string {
  const limit = execFileSync('sh', ['-c', 'ulimit -l'], { encoding: 'utf8' }).trim();
  return /^\d+$/.test(limit) ? `${limit} KiB` : limit;
}

/** The three ways to raise the limit the memlock hint must name. */
function assertMemlockAdvice(text: string | undefined): void {
  assert.ok(text, 'a hint');
  for (const way of ['RLIMIT_MEMLOCK', 'ulimit -l unlimited', 'LimitMEMLOCK=infinity', 'docker run --ulimit memlock=-1']) {
    assert.ok(text.includes(way), `the hint names ${way}: ${text}`);
  }
}

function completion(status: WorkCompletion['status']): WorkCompletion {
  return {
    wrId: 42, context: 'ctx', status, statusText: 'status text', opcode: 'RECV', byteLen: 0, immData: undefined,
    qpNum: 17, srcQp: 0, flags: [], vendorErr: 0, pkeyIndex: 0, slid: 0, sl: 0, dlidPathBits: 0,
  };
}

const errorRows: { name: string; make: () => Error; check: (error: Error) => void }[] = [
  {
    name: "RdmaError('rdma_create_id', 19): ENODEV with the setup hint",
    make: () => new FfiRdmaError('rdma_create_id', 19),
    check: (error) => {
      assert.ok(error instanceof RdmaError, 'the ffi class is the one the API exports');
      assert.equal(error.name, 'RdmaError');
      assert.equal(error.code, 'ENODEV');
      assert.equal(error.errno, 19);
      assert.equal(error.syscall, 'rdma_create_id');
      assert.match(error.message, /^rdma_create_id failed: ENODEV \(/);
      assert.ok(error.message.includes(`no RDMA device: ${noDeviceAdvice()}`), error.message);
      assert.ok(error.hint?.includes(`${packageRoot()}/scripts/setup-rxe.sh`), error.hint);
    },
  },
  {
    name: "RdmaError('ibv_reg_mr', ENOMEM): RLIMIT_MEMLOCK and the current limit",
    make: () => new RdmaError('ibv_reg_mr', 12),
    check: (error) => {
      assert.ok(error instanceof RdmaError);
      assert.equal(error.code, 'ENOMEM');
      assert.equal(error.syscall, 'ibv_reg_mr');
      assertMemlockAdvice((error as RdmaError).hint);
      assert.ok(error.message.includes(`this process may lock ${currentMemlock()}`), error.message);
    },
  },
  {
    name: "RdmaError('ibv_reg_mr', EPERM): a limit of 0 gets the memlock hint, not the device-permission one",
    make: () => new RdmaError('ibv_reg_mr', 1),
    check: (error) => {
      assert.ok(error instanceof RdmaError);
      assert.equal(error.code, 'EPERM');
      assertMemlockAdvice(error.hint);
      assert.doesNotMatch(error.message, /dev\/infiniband/);
    },
  },
  {
    name: "RdmaError('rdma_reg_msgs', ENOMEM): the memlock hint for librdmacm's registration too",
    make: () => new RdmaError('rdma_reg_msgs', 12),
    check: (error) => assertMemlockAdvice((error as RdmaError).hint),
  },
  {
    name: "RdmaError('ibv_create_cq', ENOMEM): no memlock hint outside registration",
    make: () => new RdmaError('ibv_create_cq', 12),
    check: (error) => {
      assert.ok(error instanceof RdmaError);
      assert.equal(error.code, 'ENOMEM');
      assert.equal(error.hint, undefined);
      assert.doesNotMatch(error.message, /RLIMIT_MEMLOCK/);
    },
  },
  {
    name: 'RdmaError errno 95 (EOPNOTSUPP, which Node names ENOTSUP on Linux)',
    make: () => new RdmaError('ibv_create_srq', 95),
    check: (error) => {
      assert.ok(error instanceof RdmaError);
      assert.equal(error.code, 'EOPNOTSUPP');
      assert.equal(error.errno, 95);
      assert.equal(error.syscall, 'ibv_create_srq');
    },
  },
  {
    name: 'RdmaError EOPNOTSUPP: the provider hint',
    make: () => new RdmaError('ibv_create_srq', 95),
    check: (error) => {
      assert.ok(error instanceof RdmaError);
      assert.match(error.message, /does not support this operation/);
    },
  },
  {
    name: 'RdmaError ENOSYS: the kernel hint',
    make: () => new RdmaError('rdma_create_event_channel', 38),
    check: (error) => {
      assert.ok(error instanceof RdmaError);
      assert.equal(error.code, 'ENOSYS');
      assert.match(error.message, /the kernel has no RDMA support/);
      assert.match(error.message, /setup-rxe\.sh/);
    },
  },
  {
    name: 'RdmaError ENODEV with a hint of its own: a wrong device name among devices is not "no RDMA device"',
    make: () => new RdmaError('ibv_open_device', 19, 'no device named mlx5_9', { hint: 'this host\'s RDMA device is rxe0: pass one of those names, or none for the first' }),
    check: (error) => {
      assert.ok(error instanceof RdmaError);
      assert.equal(error.code, 'ENODEV');
      assert.equal(error.hint, 'this host\'s RDMA device is rxe0: pass one of those names, or none for the first');
      assert.match(error.message, /^ibv_open_device failed: ENODEV \([^)]+\) — no device named mlx5_9 — this host's RDMA device is rxe0: pass one of those names, or none for the first$/);
      assert.doesNotMatch(error.message, /no RDMA device/);
      assert.equal(error.missing, undefined, 'its own hint overrides the missing-piece diagnosis: nothing is missing, the name is wrong');
    },
  },
  {
    name: 'RdmaError EACCES for a device file libibverbs reported as ENOENT: the permission hint, not a missing piece',
    make: () => new RdmaError('ibv_open_device', 13, 'device rxe1: this process may not read and write /dev/infiniband/uverbs1 (libibverbs reported ENOENT)'),
    check: (error) => {
      assert.ok(error instanceof RdmaError);
      assert.equal(error.code, 'EACCES');
      assert.equal(error.missing, undefined);
      assert.match(error.message, /RDMA devices under \/dev\/infiniband need read\/write access$/);
    },
  },
  {
    name: 'RdmaError EADDRNOTAVAIL: the address hint',
    make: () => new RdmaError('rdma_bind_addr', 99),
    check: (error) => {
      assert.ok(error instanceof RdmaError);
      assert.equal(error.code, 'EADDRNOTAVAIL');
      assert.match(error.message, /no RDMA device owns that address/);
    },
  },
  {
    name: 'RdmaError with a detail keeps it in the message',
    make: () => new RdmaError('rdma_connect', 110, 'no event within 10 ms'),
    check: (error) => {
      assert.ok(error instanceof RdmaError);
      assert.equal(error.code, 'ETIMEDOUT');
      assert.match(error.message, /^rdma_connect failed: ETIMEDOUT \(.*\) — no event within 10 ms — the peer did not answer in time/);
    },
  },
  {
    name: 'UnsupportedError: code EOPNOTSUPP',
    make: () => new UnsupportedError('rdma_write_cm_event', 'by the installed librdmacm (it needs RDMACM_1.4)'),
    check: (error) => {
      assert.ok(error instanceof UnsupportedError);
      assert.equal(error.name, 'UnsupportedError');
      assert.equal(error.code, 'EOPNOTSUPP');
      assert.equal(error.feature, 'rdma_write_cm_event');
      assert.equal(error.message, 'rdma_write_cm_event is unsupported by the installed librdmacm (it needs RDMACM_1.4)');
    },
  },
  {
    name: 'RdmaArgumentError: code, name, and every issue in the message',
    make: () => new RdmaArgumentError('rdma_connect', [
      { path: 'param.retryCount', rule: 'retryCount is 0–7', code: 'ERR_OUT_OF_RANGE' }, { path: 'options.timeoutMs', rule: 'too big', code: 'ERR_OUT_OF_RANGE' },
    ]),
    check: (error) => {
      assert.ok(error instanceof RdmaArgumentError);
      assert.ok(error instanceof TypeError);
      assert.equal(error.name, 'RdmaArgumentError');
      assert.equal(error.code, 'ERR_OUT_OF_RANGE');
      assert.equal(error.operation, 'rdma_connect');
      assert.equal(error.issues.length, 2);
      assert.equal(error.message, 'rdma_connect: param.retryCount: retryCount is 0–7; options.timeoutMs: too big');
    },
  },
  {
    name: 'RdmaArgumentError.fromZod roots paths at the parameter',
    make: () => RdmaArgumentError.fromZod('op', 'options', z.strictObject({ a: z.object({ b: z.number() }) }).safeParse({ a: { b: 'x' } }).error!),
    check: (error) => {
      assert.ok(error instanceof RdmaArgumentError);
      assert.equal(error.issues[0]!.path, 'options.a.b');
      assert.match(error.message, /^op: options\.a\.b: .*expected number/);
    },
  },
  {
    name: 'ResourceClosedError: code ERR_RDMACM_CLOSED',
    make: () => new ResourceClosedError('memory region', 'postSend'),
    check: (error) => {
      assert.ok(error instanceof ResourceClosedError);
      assert.equal(error.name, 'ResourceClosedError');
      assert.equal(error.code, 'ERR_RDMACM_CLOSED');
      assert.equal(error.resource, 'memory region');
      assert.equal(error.message, 'postSend: the memory region is closed');
    },
  },
  {
    name: 'ResourceClosedError for a closed argument names the parameter, then the hint',
    make: () => new ResourceClosedError('memory region', 'QueuePair.postRecv', 'it was deregistered', 'region'),
    check: (error) => {
      assert.ok(error instanceof ResourceClosedError);
      assert.equal(error.code, 'ERR_RDMACM_CLOSED');
      assert.equal(error.resource, 'memory region');
      assert.equal(error.parameter, 'region');
      assert.equal(error.message, 'QueuePair.postRecv: the memory region passed as region is closed; it was deregistered');
    },
  },
  {
    name: 'WorkCompletionError LOC_LEN_ERR: the receive buffer hint',
    make: () => new WorkCompletionError(completion('LOC_LEN_ERR')),
    check: (error) => {
      assert.ok(error instanceof WorkCompletionError);
      assert.equal(error.name, 'WorkCompletionError');
      assert.equal(error.code, 'ERR_RDMACM_WC_LOC_LEN_ERR');
      assert.equal(error.completion.wrId, 42);
      assert.match(error.message, /^work request 42 \(RECV\) failed: LOC_LEN_ERR \(status text\)/);
      assert.match(error.message, /the receive buffer is smaller than the message/);
    },
  },
  {
    name: 'WorkCompletionError WR_FLUSH_ERR: the error-state hint',
    make: () => new WorkCompletionError(completion('WR_FLUSH_ERR')),
    check: (error) => {
      assert.ok(error instanceof WorkCompletionError);
      assert.equal(error.code, 'ERR_RDMACM_WC_WR_FLUSH_ERR');
      assert.match(error.message, /the queue pair is in the error state/);
      assert.doesNotMatch(error.message, /receive buffer/);
    },
  },
  {
    name: 'WorkCompletionError REM_ACCESS_ERR: the rkey hint',
    make: () => new WorkCompletionError(completion('REM_ACCESS_ERR')),
    check: (error) => {
      assert.ok(error instanceof WorkCompletionError);
      assert.equal(error.code, 'ERR_RDMACM_WC_REM_ACCESS_ERR');
      assert.match(error.message, /wrong rkey/);
    },
  },
  {
    name: 'ConnectionError REJECTED (28) keeps the reason and the private data',
    make: () => new ConnectionError('rdma_connect', 'REJECTED', 28, Buffer.from('server busy')),
    check: (error) => {
      assert.ok(error instanceof ConnectionError);
      assert.equal(error.name, 'ConnectionError');
      assert.equal(error.code, 'ERR_RDMACM_REJECTED');
      assert.equal(error.operation, 'rdma_connect');
      assert.equal(error.event, 'REJECTED');
      assert.equal(error.rejectReason, 28);
      assert.deepEqual(error.privateData, Buffer.from('server busy'));
      assert.match(error.message, /^rdma_connect: REJECTED \(reason 28 \(rejected by the peer\)\)/);
      assert.match(error.message, /is a server listening/);
    },
  },
  {
    name: 'ConnectionError REJECTED with another reason does not blame the peer application',
    make: () => new ConnectionError('rdma_connect', 'REJECTED', 8),
    check: (error) => {
      assert.ok(error instanceof ConnectionError);
      assert.equal(error.rejectReason, 8);
      assert.equal(error.privateData, undefined);
      assert.doesNotMatch(error.message, /rejected by the peer/);
    },
  },
  {
    name: 'ConnectionError UNREACHABLE: errno name, no reject fields',
    make: () => new ConnectionError('rdma_connect', 'UNREACHABLE', -110, Buffer.from('ignored')),
    check: (error) => {
      assert.ok(error instanceof ConnectionError);
      assert.equal(error.code, 'ERR_RDMACM_UNREACHABLE');
      assert.equal(error.status, -110);
      assert.equal(error.errno, 110);
      assert.equal(error.syscall, 'rdma_connect');
      assert.equal(error.rejectReason, undefined);
      assert.equal(error.privateData, undefined);
      assert.match(error.message, /UNREACHABLE \(ETIMEDOUT\)/);
    },
  },
  {
    name: 'ConnectionError for an event with no error code',
    make: () => new ConnectionError('rdma_resolve_addr', 'UNKNOWN(99)', 0),
    check: (error) => {
      assert.ok(error instanceof ConnectionError);
      assert.equal(error.code, 'ERR_RDMACM_UNEXPECTED_EVENT');
      assert.equal(error.errno, undefined);
      assert.equal(error.syscall, 'rdma_resolve_addr');
      assert.equal(error.message, 'rdma_resolve_addr: UNKNOWN(99) (status 0)');
    },
  },
];
for (const row of errorRows) {
  test(`errors: ${row.name}`, () => {
    const error = row.make();
    assert.ok(error instanceof Error);
    row.check(error);
  });
}

test('errors: AbortError has the shape of Node\'s own aborted operations, the signal\'s reason as cause', async () => {
  const reason = new Error('stop');
  const controller = new AbortController();
  controller.abort(reason);
  // Node's own: timers/promises rejects an aborted wait with its internal AbortError.
  const nodes = (await sleep(1, undefined, { signal: controller.signal }).then(() => undefined, (e: unknown) => e)) as Error & { code: unknown };
  const ours = abortError(controller.signal);
  const shape = (error: Error & { code: unknown }) => ({ name: error.name, code: error.code, message: error.message, cause: error.cause, keys: Object.keys(error).sort() });
  assert.deepEqual(shape(ours), shape(nodes));
  assertAbortedWith(ours, reason);
  assert.equal(String(ours), 'AbortError: The operation was aborted');
  // abort() without a reason: the signal's DOMException becomes the cause, never the error itself.
  const plain = new AbortController();
  plain.abort();
  assert.ok(plain.signal.reason instanceof DOMException);
  assertAbortedWith(abortError(plain.signal), plain.signal.reason);
});

// ---------------------------------------------------------------- address handle attributes
// koffi.encode aborts the process on a non-number in a numeric field and
// truncates an out-of-range number, so createAh's schema must refuse both.

/** An ah_attr as koffi decodes it from an event (its dgid a koffi union object). */
function decodedAhAttr(): IbvAhAttr {
  const native = Buffer.alloc(ibv_ah_attr.size);
  const attr = { grh: { dgid: { raw: Uint8Array.from({ length: 16 }, (_, i) => i + 1) }, flow_label: 0xfffff, sgid_index: 1, hop_limit: 64, traffic_class: 0 }, dlid: 0, sl: 0, src_path_bits: 0, static_rate: 0, is_global: 1, port_num: 1 };
  koffi.encode(native, ibv_ah_attr, attr);
  return koffi.decode(native, ibv_ah_attr) as IbvAhAttr;
}

test('ahAttrSchema accepts an ah_attr koffi decoded and encodes it back byte for byte', () => {
  const attr = decodedAhAttr();
  const before = Buffer.alloc(ibv_ah_attr.size);
  koffi.encode(before, ibv_ah_attr, attr);
  const parsed = parseArgument('createAh', 'attr', ahAttrSchema, attr);
  assert.deepEqual([...parsed.grh.dgid.raw], Array.from({ length: 16 }, (_, i) => i + 1));
  const after = Buffer.alloc(ibv_ah_attr.size);
  koffi.encode(after, ibv_ah_attr, parsed);
  assert.ok(after.equals(before));
});

const withField = (change: (attr: Record<string, unknown>, grh: Record<string, unknown>) => void): (() => unknown) => () => {
  const attr = decodedAhAttr();
  const copy: Record<string, unknown> = { ...attr, grh: { ...attr.grh } };
  change(copy, copy.grh as Record<string, unknown>);
  return parseArgument('createAh', 'attr', ahAttrSchema, copy);
};
const badAhAttrs: BadRow[] = [
  { name: 'a string sl', call: withField((a) => { a.sl = '0'; }), operation: 'createAh', path: 'attr.sl', rule: /expected number/ },
  { name: 'a boolean is_global', call: withField((a) => { a.is_global = true; }), operation: 'createAh', path: 'attr.is_global', rule: /expected number/ },
  { name: 'a null dlid', call: withField((a) => { a.dlid = null; }), operation: 'createAh', path: 'attr.dlid', rule: /expected number/ },
  { name: 'an object static_rate', call: withField((a) => { a.static_rate = {}; }), operation: 'createAh', path: 'attr.static_rate', rule: /expected number/ },
  { name: 'port_num 300 (koffi would write 44)', call: withField((a) => { a.port_num = 300; }), operation: 'createAh', path: 'attr.port_num', rule: /<=255/ },
  { name: 'dlid -1 (koffi would write 0xffff)', call: withField((a) => { a.dlid = -1; }), operation: 'createAh', path: 'attr.dlid', rule: />=0/ },
  { name: 'a fractional sl', call: withField((a) => { a.sl = 0.5; }), operation: 'createAh', path: 'attr.sl', rule: /expected int/ },
  { name: 'a missing port_num', call: withField((a) => { delete a.port_num; }), operation: 'createAh', path: 'attr.port_num', rule: /expected number/ },
  { name: 'a 21-bit flow label', call: withField((_, g) => { g.flow_label = 0x100000; }), operation: 'createAh', path: 'attr.grh.flow_label', rule: /20 bits/ },
  { name: 'a string hop_limit', call: withField((_, g) => { g.hop_limit = '64'; }), operation: 'createAh', path: 'attr.grh.hop_limit', rule: /expected number/ },
  { name: 'a 15-byte GID', call: withField((_, g) => { g.dgid = { raw: new Uint8Array(15) }; }), operation: 'createAh', path: 'attr.grh.dgid.raw', rule: /16 bytes/ },
  { name: 'a GID as a number array', call: withField((_, g) => { g.dgid = { raw: new Array(16).fill(0) }; }), operation: 'createAh', path: 'attr.grh.dgid.raw', rule: /Buffer or Uint8Array/ },
  { name: 'no grh', call: withField((a) => { delete a.grh; }), operation: 'createAh', path: 'attr.grh', rule: /expected object/ },
  { name: 'an unknown key', call: withField((a) => { a.qkey = 1; }), operation: 'createAh', path: 'attr', rule: /Unrecognized key: "qkey"/ },
  { name: 'null', call: () => parseArgument('createAh', 'attr', ahAttrSchema, null), operation: 'createAh', path: 'attr', rule: /expected object/ },
];
for (const row of badAhAttrs) {
  test(`ahAttrSchema refuses ${row.name}`, () => assertArgumentError(row));
}

// ---------------------------------------------------------------- registrable memory
// A registration must not be resizable: shrinking a resizable ArrayBuffer
// leaves the registered pages without access (a SIGSEGV when the device writes).
type ResizableArrayBufferConstructor = new (length: number, options: { maxByteLength: number }) => ArrayBuffer;
const resizable = (length: number) => new (ArrayBuffer as unknown as ResizableArrayBufferConstructor)(length, { maxByteLength: length * 2 });
const growable = (length: number) => new (SharedArrayBuffer as unknown as ResizableArrayBufferConstructor)(length, { maxByteLength: length * 2 });

const badRegistrations: BadRow[] = [
  { name: 'a view of a resizable ArrayBuffer', call: () => parseArgument('ProtectionDomain.register', 'buffer', registrableBytes, new Uint8Array(resizable(64))), operation: 'ProtectionDomain.register', path: 'buffer', rule: /resizable ArrayBuffer/ },
  { name: 'a Buffer over a resizable ArrayBuffer', call: () => parseArgument('ProtectionDomain.register', 'buffer', registrableBytes, Buffer.from(resizable(64), 8, 16)), operation: 'ProtectionDomain.register', path: 'buffer', rule: /resizable ArrayBuffer/ },
  { name: 'a view of a growable SharedArrayBuffer', call: () => parseArgument('ProtectionDomain.register', 'buffer', registrableBytes, new Uint8Array(growable(64))), operation: 'ProtectionDomain.register', path: 'buffer', rule: /growable SharedArrayBuffer/ },
  { name: 'a DataView', call: () => parseArgument('ProtectionDomain.register', 'buffer', registrableBytes, new DataView(new ArrayBuffer(8))), operation: 'ProtectionDomain.register', path: 'buffer', rule: /Buffer or Uint8Array/ },
];
for (const row of badRegistrations) {
  test(`registrableBytes refuses ${row.name}`, () => assertArgumentError(row));
}

test('registrableBytes accepts Buffers, Uint8Arrays and views of a fixed SharedArrayBuffer', () => {
  for (const view of [Buffer.alloc(64), Buffer.from('pooled'), new Uint8Array(8), new Uint8Array(new SharedArrayBuffer(64), 8, 8)]) {
    assert.equal(parseArgument('ProtectionDomain.register', 'buffer', registrableBytes, view), view);
  }
});

test('memlockLimits reads /proc/self/limits in KiB; memlockAdvice says what the limit is', () => {
  const limits = [
    'Limit                     Soft Limit           Hard Limit           Units     ',
    'Max locked memory         65536                unlimited            bytes     ',
  ].join('\n');
  assert.deepEqual(memlockLimits(limits), { soft: '64 KiB', hard: 'unlimited' });
  assert.equal(memlockLimits('no such line'), undefined);
  assert.ok(memlockAdvice({ soft: '64 KiB', hard: '64 KiB' }).includes('this process may lock 64 KiB (hard limit 64 KiB)'));
  assert.ok(memlockAdvice(undefined).includes('the limit could not be read'));
});
