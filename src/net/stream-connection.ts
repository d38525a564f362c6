// One rsockets stream connection over an RC queue pair: the memory the peer
// writes into, the credits and buffer space each side returns, and the
// control messages (rsocket.c's state machine, in its wire format, not its
// code shape). It is driven by the event loop: completions arrive in batches
// through a CQ listener, and the socket above pulls bytes and pushes writes.
//
// Memory, in a protection domain of this connection's own (so a peer reaches
// no other connection's memory, whatever address and key it learns):
//   ring    the receive ring the peer RDMA-writes data into, offered in halves
//   target  the 2-entry target SGL (+ iomap table) the peer writes offers into
//   staging the send buffer write() copies into, then 4 control slots, 4
//           iomap slots (the entries this side sends) and the sink: 4 bytes
//           for receive requests (write-with-imm consumes a receive without
//           writing to it) and for the zero-length control writes. One
//           region, not two: a registration costs milliseconds under TCG.
import { Buffer } from 'node:buffer';
import { performance } from 'node:perf_hooks';
import type { CmId } from '../api/cm/cm-id.js';
import type { CompletionListener, CompletionQueue } from '../api/work/completion-queue.js';
import type { MemoryRegion } from '../api/verbs/memory-region.js';
import type { ProtectionDomain } from '../api/verbs/protection-domain.js';
import type { QueuePair } from '../api/verbs/queue-pair.js';
import type { PreparedRecv, PreparedRecvChain, PreparedSend } from '../api/work/work-request.js';
import { WcOpcode, WcStatus } from '../api/core/enums.js';
import {
  CONN_FLAG_IOMAP, CONN_FLAG_NET, Ctrl, DEFAULTS, HOST_IS_BIG_ENDIAN, IOMAP_SIZE, Op, ProtocolError, SGE_SIZE, TARGET_SGL_ENTRIES,
  encodeConnData, immediate, immediateOp, immediateValue, readIomap,
  readSgeAddress, readSgeKey, readSgeLength, writeIomap, writeSge, type ConnData, type WireIomap,
} from './wire.js';
import type { ResolvedSizes } from './options.js';
import { CompletionChannelHold } from './shared-channel.js';
import { RingQueue } from './ring-queue.js';

/** What the connection tells its socket. */
export interface StreamEvents {
  /** Bytes arrived for read(), or the peer ended (see peerEnded). */
  onReadable(): void;
  /** Staging room or credits came back: more can be written. */
  onWritable(): void;
  /** The connection failed (protocol error, lost peer); it has released its memory. */
  onFailure(error: Error): void;
}

const RECV_WITH_IMM = WcOpcode.values.RECV_RDMA_WITH_IMM;
const FLUSHED = WcStatus.values.WR_FLUSH_ERR;
const REPOST_BATCH = 16;
/** Send queue bookkeeping: what a send completion returns. Data sends return staging bytes (≥ 0). */
const CONTROL = -1;
const IOMAP = -2;
const KEEPALIVE = -3;
/** Keepalive periods without an acknowledgement before the peer is declared gone. */
const KEEPALIVE_PROBES = 5;
/** Iomap entries in flight at once (each has a staging slot until its completion). */
const IOMAP_SLOTS = 4;
/** The sink's bytes, at the end of staging. */
const SINK_SIZE = 4;
/** The remote target of a prepared write until each post sets its own. */
const NOWHERE = Object.freeze({ address: 0, rkey: 0 });
/** Where this side's own iomap table starts in its target memory: after the 2-entry SGL. */
const LOCAL_IOMAP_OFFSET = SGE_SIZE * TARGET_SGL_ENTRIES;

/** A mapping this side offered the peer (rsockets' riomap with PROT_WRITE). */
export interface RemoteMapping {
  readonly index: number;
  readonly region: MemoryRegion;
  readonly entry: WireIomap;
}

/** Bytes staged for an RDMA write into the peer's mapped memory (riowrite), in staging order with the stream's. */
interface DirectSegment {
  at: number;
  length: number;
  address: number;
  readonly key: number;
}

export class StreamConnection implements CompletionListener {
  readonly sizes: ResolvedSizes;
  readonly #id: CmId;
  readonly #events: StreamEvents;
  readonly #pd: ProtectionDomain;
  readonly #cq: CompletionQueue;
  readonly #channelHold: CompletionChannelHold;
  readonly #qp: QueuePair;
  readonly #ring: MemoryRegion;
  readonly #target: MemoryRegion;
  readonly #targetView: DataView;
  readonly #staging: MemoryRegion;
  readonly #stagingView: DataView;
  readonly #sendBytes: number;
  readonly #recvDepth: number;
  readonly #half: number;
  readonly #inline: number;
  // Prepared once; each post patches range, remote address and immediate.
  readonly #dataWrite: PreparedSend;
  readonly #dataWriteInline: PreparedSend | undefined;
  readonly #sglWrite: PreparedSend;
  readonly #controlWrite: PreparedSend;
  // Prepared at first use: most connections send no keepalive and map nothing.
  #keepaliveWrite: PreparedSend | undefined;
  #iomapWrite: PreparedSend | undefined;
  #directWrite: PreparedSend | undefined;
  readonly #recv: PreparedRecv;
  readonly #recvBatch: PreparedRecvChain;

  // The peer, from its connection data.
  #peerBigEndian = false;
  #remoteSglAddress = 0;
  #remoteSglKey = 0;
  #remoteSglEntries = TARGET_SGL_ENTRIES;
  /** Next slot of the peer's target SGL this side writes an offer into (rsockets starts at 1). */
  #remoteSge = 1;
  /** The peer's iomap table: where this side's mapping entries go (none unless the peer offers entries). */
  #remoteIomapAddress = 0;
  #remoteIomapKey = 0;
  #remoteIomapUsed = new Uint8Array(0);
  readonly #iomapQueue: RemoteMapping[] = [];
  #iomapInFlight = 0;
  #nextIomapSlot = 0;
  readonly #direct = new RingQueue<DirectSegment>();

  // Sending.
  #sendQueueFree: number;
  #controlFree: number = DEFAULTS.controlSlots;
  #nextControlSlot = 0;
  /** What each posted send returns at its completion, oldest first (they complete in order). */
  readonly #inFlight: Int32Array;
  #inFlightHead = 0;
  #inFlightCount = 0;
  /** Staging ring positions, as running byte counts: copied in, posted, completed. */
  #staged = 0;
  #posted = 0;
  #completed = 0;
  #sendSeq = 0;
  /** The peer's credit limit (a 16-bit sequence number). */
  #sendSeqLimit = 0;
  /** Which of this side's target SGL slots the next data goes to. */
  #targetSge = 0;

  // Receiving.
  /** Read position in the ring. */
  #readOffset = 0;
  /** Where the peer's next message must start (it writes contiguously, half by half). */
  #arrivalOffset = 0;
  /** Bytes offered to the peer and not yet written. */
  #receivable: number;
  /** Consumed bytes not yet offered again (rsockets' rbuf_bytes_avail). */
  #freeToOffer: number;
  #nextOfferOffset: number;
  /** Lengths of the data messages waiting to be read, oldest first. */
  readonly #messages: Int32Array;
  #messagesHead = 0;
  #messagesCount = 0;
  #headConsumed = 0;
  #queuedBytes = 0;
  #recvSeq = 0;
  #recvSeqDue: number;
  #repostsDue = 0;

  // State.
  #started = false;
  #failed = false;
  #released = false;
  /** How the peer ended its sending: 'shutdown' (half-close) or 'disconnect' (sends nothing more). */
  #peerEnd: 'shutdown' | 'disconnect' | undefined;
  /** This side sent SHUTDOWN (writes are over) or DISCONNECT (everything is over). */
  #localEnd: 'shutdown' | 'disconnect' | undefined;
  #endSent: (() => void) | undefined;
  /** The send count at which the end message completes. */
  #endTicket = Infinity;
  #sendsPosted = 0;
  #sendsCompleted = 0;
  #endQueued: 'shutdown' | 'disconnect' | undefined;
  #keepaliveTimer: NodeJS.Timeout | undefined;
  #keepProcessAlive = true;
  bytesRead = 0;
  bytesWritten = 0;

  /**
   * Builds the connection's resources on `id` (resolved, or a request):
   * its PD, a CQ for both queues, the QP, the memory, and every receive
   * posted, so the peer may write as soon as it is connected.
   */
  constructor(id: CmId, sizes: ResolvedSizes, events: StreamEvents) {
    this.#id = id;
    this.sizes = sizes;
    this.#events = events;
    const device = id.device;
    if (!device) throw codedError('ENODEV', 'the id has no device: resolve its address first');
    const limits = device.limits;
    const sendDepth = Math.min(sizes.sendQueueDepth, limits.maxQpWr);
    const recvDepth = Math.min(sizes.recvQueueDepth, limits.maxQpWr);
    this.#recvDepth = recvDepth;
    const pd = device.allocPd();
    // Every connection's queue sleeps on its device's one completion channel: one fd for all of them.
    const channelHold = new CompletionChannelHold(device);
    this.#channelHold = channelHold;
    let cq: CompletionQueue | undefined;
    try {
      cq = device.createCq({ entries: Math.min(sendDepth + recvDepth, limits.maxCqe), channel: channelHold.channel });
      cq.mode = sizes.completionMode;
      cq.spinBudgetUs = sizes.spinBudgetUs;
      cq.maxSpinBudgetUs = sizes.maxSpinBudgetUs;
      this.#pd = pd;
      this.#cq = cq;
      this.#qp = id.createQp({
        sendWr: sendDepth, recvWr: recvDepth, sendSge: 1, recvSge: 1, inlineData: sizes.inlineSize, sendCq: this.#cq, recvCq: this.#cq,
      }, this.#pd);
      this.#inline = this.#qp.caps.maxInlineData;
      this.#sendBytes = sizes.sendBufferSize;
      this.#half = sizes.recvBufferSize / 2;
      this.#ring = this.#pd.allocate(sizes.recvBufferSize, ['LOCAL_WRITE', 'REMOTE_WRITE']);
      this.#target = this.#pd.allocate(SGE_SIZE * TARGET_SGL_ENTRIES + 24 * sizes.iomapEntries, ['LOCAL_WRITE', 'REMOTE_WRITE']);
      this.#targetView = new DataView(this.#target.buffer.buffer, this.#target.buffer.byteOffset, this.#target.buffer.byteLength);
      const sinkAt = this.#sinkAt();
      this.#staging = this.#pd.allocate(sinkAt + SINK_SIZE, ['LOCAL_WRITE']);
      this.#stagingView = new DataView(this.#staging.buffer.buffer, this.#staging.buffer.byteOffset, this.#staging.buffer.byteLength);
      this.#dataWrite = this.#qp.prepareSend(this.#staging, { opcode: 'RDMA_WRITE', immediate: 0, remote: NOWHERE, offset: 0, length: 0 });
      this.#dataWriteInline = this.#inline > 0
        ? this.#qp.prepareSend(this.#staging, { opcode: 'RDMA_WRITE', immediate: 0, remote: NOWHERE, offset: 0, length: 0, inline: true })
        : undefined;
      this.#sglWrite = this.#qp.prepareSend(this.#staging, {
        opcode: 'RDMA_WRITE', immediate: 0, remote: NOWHERE, offset: this.#sendBytes, length: SGE_SIZE, inline: this.#inline >= SGE_SIZE,
      });
      this.#controlWrite = this.#qp.prepareSend(this.#staging, { opcode: 'RDMA_WRITE', immediate: 0, remote: NOWHERE, offset: sinkAt, length: 0 });
      this.#recv = this.#qp.prepareRecv(this.#staging, { offset: sinkAt, length: SINK_SIZE });
      this.#recvBatch = this.#qp.prepareRecvChain(this.#staging, { count: REPOST_BATCH, offset: sinkAt, length: SINK_SIZE, stride: 0 });
    } catch (error) {
      pd.close();
      cq?.close();
      channelHold.release();
      throw error;
    }
    this.#sendQueueFree = sendDepth - DEFAULTS.controlSlots;
    this.#inFlight = new Int32Array(sendDepth);
    this.#messages = new Int32Array(recvDepth + 1);
    this.#receivable = this.#half;
    this.#freeToOffer = this.#half;
    this.#nextOfferOffset = this.#half;
    this.#recvSeqDue = recvDepth >> 1;
    this.#repostsDue = recvDepth;
    this.#repost();
  }

  /** The 40 bytes this side sends in its connect or accept. */
  connData(): Buffer {
    return encodeConnData({
      flags: CONN_FLAG_IOMAP | (HOST_IS_BIG_ENDIAN ? CONN_FLAG_NET : 0),
      credits: this.#recvDepth,
      targetIomapSize: this.sizes.iomapEntries,
      targetSgl: { address: this.#target.address, key: this.#target.rkey, length: TARGET_SGL_ENTRIES },
      dataBuf: { address: this.#ring.address, key: this.#ring.rkey, length: this.#half },
    });
  }

  /** The queue pair, for its number and the id's addresses. */
  get queuePair(): QueuePair {
    return this.#qp;
  }

  /**
   * Connected: takes the peer's data (its first buffer becomes this side's
   * first target), starts taking completions and offers the second half of
   * the ring at once, as an rdma-core sender needs before it can go on.
   */
  start(peer: ConnData): void {
    this.#peerBigEndian = (peer.flags & CONN_FLAG_NET) !== 0;
    this.#remoteSglAddress = Number(peer.targetSgl.address);
    this.#remoteSglKey = peer.targetSgl.key;
    this.#remoteSglEntries = peer.targetSgl.length;
    this.#sendSeqLimit = peer.credits;
    if (peer.flags & CONN_FLAG_IOMAP) {
      // rsockets: the peer's iomap table follows its target SGL, under the same key.
      this.#remoteIomapAddress = Number(peer.targetSgl.address) + SGE_SIZE * peer.targetSgl.length;
      this.#remoteIomapKey = peer.targetSgl.key;
      this.#remoteIomapUsed = new Uint8Array(peer.targetIomapSize);
    }
    writeSge(this.#targetView, 0, Number(peer.dataBuf.address), peer.dataBuf.key, peer.dataBuf.length, HOST_IS_BIG_ENDIAN);
    this.#started = true;
    // A receiver that falls behind makes its peer wait this long per RNR NAK (rdma_cm leaves 655 ms).
    this.#qp.setMinRnrTimer(1);
    this.#cq.setListener(this, { keepAlive: this.#keepProcessAlive });
    this.#afterCompletions();
  }

  /** Whether the process is kept alive while this connection waits. */
  setKeepProcessAlive(keepAlive: boolean): void {
    this.#keepProcessAlive = keepAlive;
    if (keepAlive) this.#cq.ref();
    else this.#cq.unref();
    this.#keepaliveTimer?.[keepAlive ? 'ref' : 'unref']();
  }

  // ---- completions -------------------------------------------------------

  /** CompletionListener: one batch of completions. */
  onCompletions(): number {
    if (this.#released) return 0;
    const cq = this.#cq;
    const count = cq.poll();
    for (let i = 0; i < count && !this.#failed; i++) {
      const status = cq.statusAt(i);
      // By wr_id, not opcode: a failed completion's opcode is undefined (verbs.h).
      const wrId = cq.wrIdAt(i);
      if (wrId === this.#recv.wrId || this.#recvBatch.slotOf(wrId) >= 0) this.#received(i, status, cq.opcodeAt(i));
      else this.#sendCompleted(status);
    }
    if (count > 0 && !this.#failed) this.#afterCompletions();
    return this.#failed ? 0 : count;
  }

  onCompletionError(error: unknown): void {
    this.#fail(error instanceof Error ? error : new Error(String(error)));
  }

  #received(index: number, status: number, opcode: number): void {
    if (status !== 0) {
      // A flushed receive: the queue pair went to error (our close, or a failure seen on the send side).
      if (status === FLUSHED && (this.#localEnd === 'disconnect' || this.#peerEnd === 'disconnect')) return;
      return this.#fail(this.#cq.completionAt(index).status === 'WR_FLUSH_ERR' ? lostPeer() : completionFailure(this.#cq, index));
    }
    this.#repostsDue++;
    const imm = this.#cq.immDataAt(index);
    if (opcode !== RECV_WITH_IMM || imm < 0) return this.#fail(new ProtocolError('the peer sent a message without immediate data (rsockets over IB/RoCE writes with immediate only)'));
    const value = immediateValue(imm);
    switch (immediateOp(imm)) {
      case Op.DATA: return this.#dataArrived(value, this.#cq.byteLenAt(index));
      case Op.SGL:
        this.#sendSeqLimit = value & 0xffff;
        return;
      case Op.IOMAP_SGL:
        return; // an iomap entry landed in the table; riowrite reads it when needed
      case Op.CTRL:
        if (value === Ctrl.DISCONNECT) this.#peerEnded('disconnect');
        else if (value === Ctrl.SHUTDOWN) this.#peerEnded(this.#localEnd ? 'disconnect' : 'shutdown');
        else this.#fail(new ProtocolError(`the peer sent an unknown control message ${value}`));
        return;
      default:
        return this.#fail(new ProtocolError(`the peer sent an unknown operation ${immediateOp(imm)} (immediate 0x${imm.toString(16)})`));
    }
  }

  /** A data message landed at the arrival offset: check it stayed in what was offered, and queue it. */
  #dataArrived(length: number, byteLen: number): void {
    if (this.#peerEnd === 'disconnect') return this.#fail(new ProtocolError('the peer sent data after its disconnect'));
    if (length !== byteLen) return this.#fail(new ProtocolError(`a data message says ${length} bytes but wrote ${byteLen}`));
    const inHalf = this.#arrivalOffset % this.#half;
    if (length > this.#receivable || inHalf + length > this.#half) {
      return this.#fail(new ProtocolError(`the peer wrote ${length} bytes where ${Math.min(this.#receivable, this.#half - inHalf)} were offered`));
    }
    if (this.#messagesCount === this.#messages.length) return this.#fail(new ProtocolError('the peer sent more messages than it had credits for'));
    this.#receivable -= length;
    this.#arrivalOffset = (this.#arrivalOffset + length) % (this.#half * 2);
    if (length === 0 && this.#messagesCount === 0) {
      this.#recvSeq = (this.#recvSeq + 1) & 0xffff; // nothing to read: consumed on arrival
      return;
    }
    this.#messages[(this.#messagesHead + this.#messagesCount++) % this.#messages.length] = length;
    this.#queuedBytes += length;
  }

  #sendCompleted(status: number): void {
    if (this.#inFlightCount === 0) return; // a send of a previous life of the queue: nothing to return
    const returned = this.#inFlight[this.#inFlightHead]!;
    this.#inFlightHead = (this.#inFlightHead + 1) % this.#inFlight.length;
    this.#inFlightCount--;
    if (returned === CONTROL) this.#controlFree++;
    else if (returned === KEEPALIVE) {
      this.#controlFree++;
      this.#keepaliveSentAt = undefined;
    }
    else if (returned === IOMAP) {
      this.#iomapInFlight--;
      this.#sendQueueFree++;
    } else {
      this.#completed += returned;
      this.#sendQueueFree++;
    }
    if (status !== 0) {
      if (status === FLUSHED && (this.#localEnd === 'disconnect' || this.#peerEnd === 'disconnect')) return;
      this.#fail(lostPeer(status));
      return;
    }
    if (++this.#sendsCompleted >= this.#endTicket && this.#endSent) {
      const done = this.#endSent;
      this.#endSent = undefined;
      done();
    }
  }

  /** After a batch: receives back, queued sends out, credits and space back to the peer, the socket told. */
  #afterCompletions(): void {
    this.#repost();
    this.#flush();
    this.#giveCredits();
    if (this.#queuedBytes > 0 || this.#peerEnd) this.#events.onReadable();
    if (!this.#failed) this.#events.onWritable();
  }

  #repost(): void {
    if (this.#released || this.#localEnd === 'disconnect' || this.#peerEnd === 'disconnect') return;
    while (this.#repostsDue >= REPOST_BATCH) {
      this.#recvBatch.post();
      this.#repostsDue -= REPOST_BATCH;
    }
    while (this.#repostsDue > 0) {
      this.#recv.post();
      this.#repostsDue--;
    }
  }

  // ---- reading -------------------------------------------------------------

  /** Bytes waiting to be read. */
  get readableLength(): number {
    return this.#queuedBytes;
  }

  /** Whether the peer has ended and every byte before its end was read. */
  get readEnded(): boolean {
    return this.#peerEnd !== undefined && this.#queuedBytes === 0;
  }

  /**
   * Copies up to `max` waiting bytes out of the ring (one contiguous run),
   * and returns their space and credits to the peer; null when none wait.
   */
  read(max: number): Buffer | null {
    const length = this.#contiguous(max);
    if (length === 0) return null;
    const chunk = Buffer.allocUnsafe(length);
    this.#take(chunk, length);
    return chunk;
  }

  /** As read(), into `target` from its start (node:net's onread): the bytes copied, 0 when none wait. */
  readInto(target: Uint8Array): number {
    const length = this.#contiguous(target.byteLength);
    if (length > 0) this.#take(target, length);
    return length;
  }

  /** Waiting bytes up to `max` that lie in one run of the ring. */
  #contiguous(max: number): number {
    if (this.#queuedBytes === 0 || this.#released) return 0;
    return Math.min(this.#queuedBytes, this.#half * 2 - this.#readOffset, max);
  }

  /** Copies `length` bytes at the read position into `target`, then gives their space and credits back. */
  #take(target: Uint8Array, length: number): void {
    this.#ring.buffer.copy(target, 0, this.#readOffset, this.#readOffset + length);
    this.#readOffset = (this.#readOffset + length) % (this.#half * 2);
    this.#queuedBytes -= length;
    this.#freeToOffer += length;
    this.bytesRead += length;
    this.#consumeMessages(length);
    this.#giveCredits();
  }

  /** Counts the messages `length` consumed bytes completed (credits count whole messages). */
  #consumeMessages(length: number): void {
    let left = length;
    while (this.#messagesCount > 0) {
      const head = this.#messages[this.#messagesHead]!;
      const rest = head - this.#headConsumed;
      if (rest > left) {
        this.#headConsumed += left;
        return;
      }
      left -= rest;
      this.#headConsumed = 0;
      this.#messagesHead = (this.#messagesHead + 1) % this.#messages.length;
      this.#messagesCount--;
      this.#recvSeq = (this.#recvSeq + 1) & 0xffff;
    }
  }

  /** rsockets' rs_give_credits: offer a consumed half, or return credits after half the queue's worth of messages. */
  #giveCredits(): void {
    while (this.#started && !this.#released && !this.#failed && this.#controlFree > 0 && this.#localEnd !== 'disconnect' && this.#peerEnd !== 'disconnect') {
      const halfFree = this.#freeToOffer >= this.#half;
      const creditsDue = ((this.#recvSeq - this.#recvSeqDue) << 16 >> 16) >= 0;
      if (!halfFree && !creditsDue) return;
      this.#sendCredits(halfFree);
    }
  }

  #sendCredits(offerHalf: boolean): void {
    this.#recvSeqDue = (this.#recvSeq + (this.#recvDepth >> 1)) & 0xffff;
    // rsockets sends the untruncated sum; the receiver keeps 16 bits.
    const imm = immediate(Op.SGL, this.#recvSeq + this.#recvDepth);
    if (offerHalf) {
      const slot = this.#sendBytes + SGE_SIZE * this.#nextControlSlot;
      this.#nextControlSlot = (this.#nextControlSlot + 1) % DEFAULTS.controlSlots;
      writeSge(this.#stagingView, slot, Number(this.#ring.address) + this.#nextOfferOffset, this.#ring.rkey, this.#half, this.#peerBigEndian);
      const write = this.#sglWrite;
      write.setRange(slot, SGE_SIZE);
      write.setRemote(this.#remoteSglAddress + SGE_SIZE * this.#remoteSge, this.#remoteSglKey);
      write.setImmediate(imm);
      this.#postControl(write);
      this.#freeToOffer -= this.#half;
      this.#receivable += this.#half;
      this.#nextOfferOffset = this.#nextOfferOffset === 0 ? this.#half : 0;
      this.#remoteSge = (this.#remoteSge + 1) % this.#remoteSglEntries;
    } else {
      this.#controlWrite.setImmediate(imm);
      this.#postControl(this.#controlWrite);
    }
  }

  /** Records a posted send: what its completion returns (send queue completions come in order). */
  #track(returns: number): void {
    this.#inFlight[(this.#inFlightHead + this.#inFlightCount++) % this.#inFlight.length] = returns;
    this.#sendsPosted++;
  }

  #postControl(write: PreparedSend): void {
    this.#controlFree--;
    this.#track(CONTROL);
    write.post();
  }

  // ---- writing -------------------------------------------------------------

  /** Whether writes may still go out (not ended here, not disconnected by the peer, not failed). */
  get writable(): boolean {
    return !this.#localEnd && !this.#endQueued && this.#peerEnd !== 'disconnect' && !this.#failed && !this.#released;
  }

  /** Staging bytes free for write(). */
  get writeRoom(): number {
    return this.#sendBytes - (this.#staged - this.#completed);
  }

  /**
   * Copies what fits of `data` (from `offset`) into the staging ring and posts
   * what credits and the peer's buffer allow; returns how many bytes it took.
   */
  write(data: Uint8Array, offset: number): number {
    if (!this.writable) return 0;
    const room = this.writeRoom;
    const length = Math.min(room, data.byteLength - offset);
    if (length <= 0) return 0;
    this.#stage(data, offset, length);
    this.#flush();
    return length;
  }

  /** Copies `length` bytes of `data` from `offset` into the staging ring (wrapping). */
  #stage(data: Uint8Array, offset: number, length: number): void {
    const at = this.#staged % this.#sendBytes;
    const first = Math.min(length, this.#sendBytes - at);
    const staging = this.#staging.buffer;
    // A whole chunk is copied as it is: a subarray view would be an allocation per write.
    if (offset === 0 && first === data.byteLength) staging.set(data, at);
    else staging.set(data.subarray(offset, offset + first), at);
    if (first < length) staging.set(data.subarray(offset + first, offset + length), 0);
    this.#staged += length;
  }

  /**
   * Posts what is staged, in order: mapping entries first (rsockets sends them
   * before the next message), then stream bytes into the peer's current
   * buffer while credits, queue entries and buffer last, and riowrite bytes
   * into the peer's mapped memory where they were staged.
   */
  #flush(): void {
    while (this.#started && !this.#failed && this.#peerEnd !== 'disconnect' && this.#localEnd !== 'disconnect') {
      if (this.#iomapQueue.length > 0 && this.#posted < this.#staged) {
        if (!this.#sendIomap(this.#iomapQueue[0]!)) return;
        this.#iomapQueue.shift();
        continue;
      }
      const direct = this.#direct.peek();
      if (direct && direct.at === this.#posted) {
        if (!this.#postDirect(direct)) return;
        continue;
      }
      const streamEnd = direct ? direct.at : this.#staged;
      if (this.#posted >= streamEnd) break;
      if (!direct && this.#corked(streamEnd - this.#posted)) return;
      if (!this.#postStream(streamEnd - this.#posted)) return;
    }
    if (this.#posted === this.#staged && this.#endQueued) this.#sendEnd();
  }

  /**
   * Autocorking, as Linux's TCP does it: while a whole message's worth of
   * data is in flight, a shorter tail waits for more bytes or for a send
   * completion (each completion flushes again), so a stream of writes goes
   * out in fewer, larger messages. A write with less than that in flight,
   * such as a request or a reply, goes out at once.
   */
  #corked(unposted: number): boolean {
    const max = this.sizes.maxMessageSize;
    return unposted < max && this.#posted - this.#completed >= max;
  }

  /** One data message of up to `available` staged bytes; false when credits, queue or the peer's buffer ran out. */
  #postStream(available: number): boolean {
    if (this.#sendQueueFree === 0 || this.#sendSeq === this.#sendSeqLimit) return false;
    const view = this.#targetView;
    const slot = this.#targetSge * SGE_SIZE;
    const room = readSgeLength(view, slot, HOST_IS_BIG_ENDIAN);
    if (room === 0) return false;
    const at = this.#posted % this.#sendBytes;
    const length = Math.min(available, this.#sendBytes - at, this.sizes.maxMessageSize, room);
    const address = readSgeAddress(view, slot, HOST_IS_BIG_ENDIAN);
    const key = readSgeKey(view, slot, HOST_IS_BIG_ENDIAN);
    // Local state first: once the write lands the peer may reuse this slot.
    writeSge(view, slot, address + length, key, room - length, HOST_IS_BIG_ENDIAN);
    if (room === length) this.#targetSge = (this.#targetSge + 1) % TARGET_SGL_ENTRIES;
    this.#sendSeq = (this.#sendSeq + 1) & 0xffff;
    const write = length <= this.#inline && this.#dataWriteInline ? this.#dataWriteInline : this.#dataWrite;
    write.setRange(at, length);
    write.setRemote(address, key);
    write.setImmediate(immediate(Op.DATA, length));
    this.#postData(write, length);
    return true;
  }

  #postData(write: PreparedSend, length: number): void {
    this.#sendQueueFree--;
    this.#track(length);
    write.post();
    this.#posted += length;
    this.bytesWritten += length;
  }

  /** rsockets' riowrite of staged bytes: a plain RDMA write, no immediate, no credit, the peer not told. */
  #postDirect(segment: DirectSegment): boolean {
    if (this.#sendQueueFree === 0) return false;
    const at = this.#posted % this.#sendBytes;
    const length = Math.min(segment.length, this.#sendBytes - at, this.sizes.maxMessageSize);
    const write = (this.#directWrite ??= this.#qp.prepareSend(this.#staging, { opcode: 'RDMA_WRITE', remote: NOWHERE, offset: 0, length: 0 }));
    write.setRange(at, length);
    write.setRemote(segment.address, segment.key);
    this.#postData(write, length);
    segment.at += length;
    segment.address += length;
    segment.length -= length;
    if (segment.length === 0) this.#direct.shift();
    return true;
  }

  /** An iomap entry into the peer's table (imm IOMAP_SGL | index); it costs a credit, as in rsockets. */
  #sendIomap(mapping: RemoteMapping): boolean {
    if (this.#sendQueueFree === 0 || this.#sendSeq === this.#sendSeqLimit || this.#iomapInFlight === IOMAP_SLOTS) return false;
    const slot = this.#iomapSlotsAt() + IOMAP_SIZE * this.#nextIomapSlot;
    this.#nextIomapSlot = (this.#nextIomapSlot + 1) % IOMAP_SLOTS;
    writeIomap(this.#stagingView, slot, mapping.entry, this.#peerBigEndian);
    const write = (this.#iomapWrite ??= this.#qp.prepareSend(this.#staging, {
      opcode: 'RDMA_WRITE', immediate: 0, remote: NOWHERE, offset: this.#iomapSlotsAt(), length: IOMAP_SIZE, inline: this.#inline >= IOMAP_SIZE,
    }));
    write.setRange(slot, IOMAP_SIZE);
    write.setRemote(this.#remoteIomapAddress + IOMAP_SIZE * mapping.index, this.#remoteIomapKey);
    write.setImmediate(immediate(Op.IOMAP_SGL, mapping.index));
    this.#sendSeq = (this.#sendSeq + 1) & 0xffff;
    this.#sendQueueFree--;
    this.#iomapInFlight++;
    this.#track(IOMAP);
    write.post();
    return true;
  }

  #iomapSlotsAt(): number {
    return this.#sendBytes + SGE_SIZE * DEFAULTS.controlSlots;
  }

  /** Where the sink starts in staging: after the iomap slots. */
  #sinkAt(): number {
    return this.#iomapSlotsAt() + IOMAP_SIZE * IOMAP_SLOTS;
  }

  /**
   * rsockets' riomap(PROT_WRITE): registers `buffer` for remote writes and
   * queues its entry {offset, address, key, length} for the peer, sent
   * before the next message. Fails with ENOMEM when the peer offered no
   * free entry (rsockets' own error).
   */
  map(buffer: Uint8Array, offset: number): RemoteMapping {
    const index = this.#remoteIomapUsed.indexOf(0);
    if (index < 0) {
      throw codedError('ENOMEM', `the peer offers ${this.#remoteIomapUsed.length} iomap entries and all are in use`);
    }
    const region = this.#pd.register(buffer, ['LOCAL_WRITE', 'REMOTE_WRITE']);
    this.#remoteIomapUsed[index] = 1;
    const mapping: RemoteMapping = { index, region, entry: { offset, address: Number(region.address), key: region.rkey, length: region.length } };
    this.#iomapQueue.push(mapping);
    return mapping;
  }

  /** rsockets' riounmap: frees the entry locally (nothing is sent) and deregisters the memory. */
  unmap(mapping: RemoteMapping): void {
    const queued = this.#iomapQueue.indexOf(mapping);
    if (queued >= 0) this.#iomapQueue.splice(queued, 1);
    this.#remoteIomapUsed[mapping.index] = 0;
    if (!this.#released) mapping.region.close();
  }

  /**
   * rsockets' riowrite: stages what fits of `data` (from `from`) for an RDMA
   * write into the peer's mapping that covers `remoteOffset`; returns the
   * bytes taken, or -1 when no entry the peer sent covers that offset.
   */
  writeDirect(data: Uint8Array, from: number, remoteOffset: number): number {
    if (!this.writable) return 0;
    let entry: WireIomap | undefined;
    for (let i = 0; i < this.sizes.iomapEntries; i++) {
      const candidate = readIomap(this.#targetView, LOCAL_IOMAP_OFFSET + IOMAP_SIZE * i, HOST_IS_BIG_ENDIAN);
      if (candidate.length > 0 && candidate.offset <= remoteOffset && remoteOffset < candidate.offset + candidate.length) {
        entry = candidate;
        break;
      }
    }
    if (!entry) return -1;
    const length = Math.min(this.writeRoom, data.byteLength - from, entry.offset + entry.length - remoteOffset);
    if (length <= 0) return 0;
    const at = this.#staged;
    this.#stage(data, from, length);
    this.#direct.push({ at, length, address: entry.address + (remoteOffset - entry.offset), key: entry.key });
    this.#flush();
    return length;
  }

  /** Bytes copied in and not yet posted. */
  get unsentBytes(): number {
    return this.#staged - this.#posted;
  }

  /**
   * Ends this side's writing once every staged byte is out: SHUTDOWN while the
   * peer may still send (half-close), DISCONNECT once both directions are
   * over. Resolves when the message and everything before it completed.
   */
  end(): Promise<void> {
    if (this.#localEnd || this.#endQueued || this.#failed || this.#released || this.#peerEnd === 'disconnect' || !this.#started) return Promise.resolve();
    this.#endQueued = this.#peerEnd ? 'disconnect' : 'shutdown';
    return new Promise((resolve) => {
      this.#endSent = resolve;
      this.#flush();
    });
  }

  #sendEnd(): void {
    const kind = this.#endQueued!;
    if (this.#controlFree === 0) return; // a control completion retries this through #flush
    this.#endQueued = undefined;
    this.#localEnd = kind;
    this.#controlWrite.setImmediate(immediate(Op.CTRL, kind === 'shutdown' ? Ctrl.SHUTDOWN : Ctrl.DISCONNECT));
    this.#postControl(this.#controlWrite);
    this.#endTicket = this.#sendsPosted;
  }

  #peerEnded(kind: 'shutdown' | 'disconnect'): void {
    if (this.#peerEnd === 'disconnect') return;
    this.#peerEnd = kind;
    // Having shut down our side already, SHUTDOWN from the peer ends both directions.
    if (kind === 'shutdown' && this.#localEnd) this.#peerEnd = 'disconnect';
    if (this.#peerEnd === 'disconnect') this.#settleEnd();
  }

  /**
   * The peer sends and reads nothing more: an end waiting to go out, or for
   * its completion (which may never come from a peer that destroyed its queue
   * pair), is over.
   */
  #settleEnd(): void {
    this.#endQueued = undefined;
    const done = this.#endSent;
    this.#endSent = undefined;
    done?.();
  }

  /** The peer's connection-manager DISCONNECTED: whatever arrived first is taken, then the peer is gone. */
  peerDisconnected(): void {
    if (this.#released) return;
    while (this.onCompletions() > 0);
    if (this.#failed) return;
    if (this.#peerEnd === 'disconnect' || this.#localEnd === 'disconnect') return this.#settleEnd();
    if (this.#localEnd === 'shutdown') {
      // An rsocket closing while our SHUTDOWN arrives takes it as the end of
      // both directions and stops waiting for its own DISCONNECT, which the
      // queue pair's shutdown may then drop (rsocket.c, rshutdown and
      // rs_conn_all_sends_done): after our SHUTDOWN, its disconnect is its end.
      this.#peerEnded('disconnect');
      this.#events.onReadable();
      return;
    }
    this.#fail(lostPeer());
  }

  /**
   * Sends a keepalive (an imm-less zero-length write, as rsockets) every
   * `periodMs`. A dead peer fails it once the device gives up retrying; and
   * since that can take long (rxe retried for over 30 s with the peer's link
   * down), a keepalive still unacknowledged after KEEPALIVE_PROBES periods
   * fails the connection with ETIMEDOUT, as TCP's unanswered probes do.
   */
  setKeepalive(periodMs: number | undefined): void {
    clearInterval(this.#keepaliveTimer);
    this.#keepaliveTimer = undefined;
    this.#keepaliveSentAt = undefined;
    if (periodMs === undefined) return;
    this.#keepaliveTimer = setInterval(() => {
      if (!this.#started || this.#released || this.#failed || this.#localEnd || this.#peerEnd === 'disconnect') return;
      if (this.#keepaliveSentAt !== undefined) {
        if (performance.now() - this.#keepaliveSentAt >= KEEPALIVE_PROBES * periodMs) {
          this.#fail(codedError('ETIMEDOUT', `the peer acknowledged no keepalive for ${KEEPALIVE_PROBES * periodMs} ms`));
        }
        return;
      }
      if (this.#controlFree === 0) return;
      this.#keepaliveSentAt = performance.now();
      this.#controlFree--;
      this.#track(KEEPALIVE);
      (this.#keepaliveWrite ??= this.#qp.prepareSend(this.#staging, { opcode: 'RDMA_WRITE', remote: NOWHERE, offset: this.#sinkAt(), length: 0 })).post();
    }, periodMs);
    if (!this.#keepProcessAlive) this.#keepaliveTimer.unref();
  }
  #keepaliveSentAt: number | undefined;

  // ---- ending --------------------------------------------------------------

  /**
   * Closes gracefully: DISCONNECT unless either side already ended
   * everything, waits (bounded) for it to complete, then releases.
   */
  async close(timeoutMs = 2000): Promise<void> {
    if (this.#released) return;
    if (this.#started && !this.#failed && this.#localEnd !== 'disconnect' && this.#peerEnd !== 'disconnect') {
      this.#endQueued = 'disconnect';
      this.#posted = this.#staged; // unsent bytes are dropped, as a closed socket's are
      this.#direct.clear();
      const sent = new Promise<void>((resolve) => {
        this.#endSent = resolve;
      });
      this.#sendEnd();
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([sent, new Promise<void>((resolve) => (timer = setTimeout(resolve, timeoutMs)))]);
      clearTimeout(timer);
    }
    this.release();
  }

  /** Frees everything now (no message to the peer): the queue pair goes, so the peer sees the connection end. */
  release(): void {
    if (this.#released) return;
    this.#released = true;
    clearInterval(this.#keepaliveTimer);
    let firstError: unknown;
    for (const step of [
      () => this.#cq.setListener(undefined), () => this.#id.close(), () => this.#cq.close(), () => this.#channelHold.release(), () => this.#pd.close(),
    ]) {
      try {
        step();
      } catch (error) {
        firstError ??= error;
      }
    }
    const done = this.#endSent;
    this.#endSent = undefined;
    done?.();
    if (firstError !== undefined) throw firstError;
  }

  get released(): boolean {
    return this.#released;
  }

  #fail(error: Error): void {
    if (this.#failed || this.#released) return;
    this.#failed = true;
    try {
      this.release();
    } catch {
      // the failure itself is what the socket reports
    }
    this.#events.onFailure(error);
  }
}

/** An Error with a system error's code, for the socket to report. */
function codedError(code: string, message: string): Error {
  const error = new Error(message) as Error & { code: string };
  error.code = code;
  return error;
}

/** The peer is gone without a goodbye (a flushed or failed send, a DREQ before DISCONNECT). */
function lostPeer(status?: number): Error {
  return codedError('ECONNRESET', status === undefined ? 'the peer went away without a disconnect' : `a send failed: ${WcStatus.nameOf(status)}`);
}

function completionFailure(cq: CompletionQueue, index: number): Error {
  const completion = cq.completionAt(index);
  return codedError('ECONNRESET', `a receive failed: ${completion.status} (${completion.statusText})`);
}
