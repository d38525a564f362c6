// rdmacm: RDMA for Node.js over librdmacm and libibverbs.
//
// The safe API validates every argument before any native call, owns every
// native resource (children keep parents alive, close() is ordered and
// idempotent, `using` works), and turns failures into typed errors. `raw` is
// the escape hatch: the C functions and layouts as they are.
export * as raw from './raw.js';

export { getAddrInfo, getAddrInfoAsync, AddrInfo, type AddrInfoEntry, type AddrInfoHints, type AddrInfoOptions } from './api/cm/addrinfo.js';
export { createEndpoint, type EndpointTarget, type EndpointOptions } from './api/cm/endpoint.js';
export {
  createId, eventName, CmId, type MulticastGroup,
  type ConnectionEvent, type CreateIdOptions, type CreateQpAttr, type Established, type EndpointAddress, type IdOption, type JoinMulticastOptions,
  type QpAttr, type ResolveAddrOptions, type SrqAttr, type WaitOptions,
} from './api/cm/cm-id.js';
export { EventChannel, type ChannelEvent, type ChannelEventIds, type ChannelId } from './api/cm/event-channel.js';
export { connParamSchema, PRIVATE_DATA_LIMITS, type ConnParam, type ResolvedConnParam } from './api/cm/conn-param.js';
export { ConnectionError, type CmEvent, type EventConnParam, type EventUdParam } from './api/cm/cm-event.js';
export { DeviceContext, type CqOptions, type DeviceLimits } from './api/verbs/device-context.js';
export { ProtectionDomain } from './api/verbs/protection-domain.js';
export type { Resource } from './api/core/resource.js';
export { AddressHandle, decodeUdMessage, GRH_SIZE, type UdMessage } from './api/verbs/address-handle.js';
export { MemoryRegion, type RemoteRegion } from './api/verbs/memory-region.js';
export { forkStatus, enableForkSafety, type ForkStatus } from './api/verbs/fork.js';
export { encodeRemoteRegion, decodeRemoteRegion, REMOTE_REGION_SIZE } from './api/verbs/remote-region.js';
export { QueuePair, type QueuePairCaps } from './api/verbs/queue-pair.js';
export { SharedReceiveQueue } from './api/verbs/shared-receive-queue.js';
export {
  CompletionQueue, COMPLETION_MODES, DEFAULT_MAX_SPIN_BUDGET_US, DEFAULT_SPIN_BUDGET_US, DEFAULT_TIME_SLICE_MS, type CompletionListener, type CompletionMode,
} from './api/work/completion-queue.js';
export { CompletionChannel } from './api/work/completion-channel.js';
export {
  PreparedSend, PreparedRecv, PreparedRecvChain, PreparedSendChain,
  type SendOptions, type RecvOptions, type RecvChainOptions, type SendChainOptions, type ChainSlots, type RemoteTarget, type UdDestination,
} from './api/work/work-request.js';
export { boundCallStatus, setBoundCalls, type BoundCallStatus } from './api/work/bound-calls.js';
export { WorkCompletionError, type WorkCompletion } from './api/work/work-completion.js';
export {
  listDevices, rdmaGetDevices, noDeviceFoundReason,
  type DeviceInfo, type DeviceInfoLimits, type UnavailableDevice, type DeviceError, type PortInfo, type GidInfo,
  type AtomicCapability, type GidType, type LinkLayer, type NodeType, type PhysicalPortState, type PortState, type Transport, type Unknown,
} from './api/verbs/devices.js';
export { type SocketAddress, type AddressFamily } from './api/cm/socket-address.js';
export { type PathRecord } from './api/cm/path-record.js';
export {
  Access, AddrInfoFlag, CmEventType, IbvEventType, PortSpace, QpType, WcFlag, WcOpcode, WcStatus, type NamedValues, type NameOf,
  type AccessName, type AddrInfoFlagName, type CmEventTypeName, type IbvEventTypeName, type PortSpaceName, type QpTypeName,
  type WcFlagName, type WcOpcodeName, type WcStatusName,
} from './api/core/enums.js';
export {
  RdmaError, UnsupportedError, LibraryLoadError, RdmaArgumentError, ResourceClosedError, AbortError, InvalidThisError,
  type ArgumentIssue, type ArgumentErrorCode, type MissingPiece, type Requirement,
} from './api/core/errors.js';

// Sockets over RDMA (also as 'rdmacm/net').
export {
  RdmaSocket, RdmaServer, RdmaAgent, RdmaHttpsAgent, connect, createConnection, createServer, RdmaNetError, RdmaNetCodeError, RdmaNetAggregateError,
  RdmaProtocolError, type RdmaAgentRdmaOptions, type LookupFunction, type RdmaSocketOptions, type DropInfo, type RdmaConnectOptions, type RdmaListenOptions, type RdmaOnread, type RdmaServerOptions, type RdmaSocketSizes,
} from './net/index.js';
