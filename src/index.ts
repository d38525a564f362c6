// rdmacm: RDMA for Node.js over librdmacm and libibverbs.
//
// The safe API validates every argument before any native call, owns every
// native resource (children keep parents alive, close() is ordered and
// idempotent, `using` works), and turns failures into typed errors. `raw` is
// the escape hatch: the C functions and layouts as they are.
export * as raw from './raw.js';

export { getAddrInfo, getAddrInfoAsync, AddrInfo, type AddrInfoEntry, type AddrInfoHints, type AddrInfoOptions } from './api/addrinfo.js';
export { createEndpoint, type EndpointTarget, type EndpointOptions } from './api/endpoint.js';
export {
  createId, eventName, CmId, type MulticastGroup,
  type ConnectionEvent, type CreateIdOptions, type CreateQpAttr, type Established, type EndpointAddress, type IdOption, type JoinMulticastOptions,
  type QpAttr, type ResolveAddrOptions, type SrqAttr, type WaitOptions,
} from './api/cm-id.js';
export { EventChannel, type ChannelEvent, type ChannelEventIds, type ChannelId } from './api/event-channel.js';
export { connParamSchema, PRIVATE_DATA_LIMITS, type ConnParam, type ResolvedConnParam } from './api/conn-param.js';
export { ConnectionError, type CmEvent, type EventConnParam, type EventUdParam } from './api/cm-event.js';
export { DeviceContext, type CqOptions, type DeviceLimits } from './api/device-context.js';
export { ProtectionDomain } from './api/protection-domain.js';
export type { Resource } from './api/resource.js';
export { AddressHandle, decodeUdMessage, GRH_SIZE, type UdMessage } from './api/address-handle.js';
export { MemoryRegion, type RemoteRegion } from './api/memory-region.js';
export { forkStatus, enableForkSafety, type ForkStatus } from './api/fork.js';
export { encodeRemoteRegion, decodeRemoteRegion, REMOTE_REGION_SIZE } from './api/remote-region.js';
export { QueuePair, type QueuePairCaps } from './api/queue-pair.js';
export { SharedReceiveQueue } from './api/shared-receive-queue.js';
export {
  CompletionQueue, COMPLETION_MODES, DEFAULT_SPIN_BUDGET_US, DEFAULT_TIME_SLICE_MS, type CompletionListener, type CompletionMode,
} from './api/completion-queue.js';
export { CompletionChannel } from './api/completion-channel.js';
export {
  PreparedSend, PreparedRecv, PreparedRecvChain, PreparedSendChain,
  type SendOptions, type RecvOptions, type RecvChainOptions, type SendChainOptions, type ChainSlots, type RemoteTarget, type UdDestination,
} from './api/work-request.js';
export { WorkCompletionError, type WorkCompletion } from './api/work-completion.js';
export {
  listDevices, rdmaGetDevices, noDeviceFoundReason,
  type DeviceInfo, type DeviceInfoLimits, type UnavailableDevice, type DeviceError, type PortInfo, type GidInfo,
  type AtomicCapability, type GidType, type LinkLayer, type NodeType, type PhysicalPortState, type PortState, type Transport, type Unknown,
} from './api/devices.js';
export { type SocketAddress, type AddressFamily } from './api/socket-address.js';
export {
  Access, AddrInfoFlag, CmEventType, IbvEventType, PortSpace, QpType, WcFlag, WcOpcode, WcStatus, type NamedValues, type NameOf,
  type AccessName, type AddrInfoFlagName, type CmEventTypeName, type IbvEventTypeName, type PortSpaceName, type QpTypeName,
  type WcFlagName, type WcOpcodeName, type WcStatusName,
} from './api/enums.js';
export {
  RdmaError, UnsupportedError, LibraryLoadError, RdmaArgumentError, ResourceClosedError, AbortError,
  type ArgumentIssue, type MissingPiece, type Requirement,
} from './api/errors.js';

// Sockets over RDMA (also as 'rdmacm/net').
export {
  RdmaSocket, RdmaServer, connect, createConnection, createServer, RdmaNetError, RdmaNetCodeError, RdmaProtocolError,
  type RdmaSocketOptions, type DropInfo, type RdmaConnectOptions, type RdmaListenOptions, type RdmaServerOptions, type RdmaSocketSizes,
} from './net/index.js';
