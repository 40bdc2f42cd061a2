/**
 * The ledger: the only code that moves money or a generation's status. Each operation is one
 * transaction that writes the ledger entry, the status, the webhook outbox rows and (after the
 * commit) the metric together, and each is idempotent, so an activity, the API process or the
 * reconciler may call it again after a crash and nothing moves twice. A hold resolves once:
 *
 *   admit ──► queued ──startRunning──► running ──settle──► succeeded (charged)
 *                 └──────────────────────┴─────release──► failed (nothing charged)
 *
 * A batch holds its whole quote once (holdBatch); each of its lines that starts takes its share
 * into holds of its own generations (admitBatchLines), which then move as above (core/ledger/batches.ts, batch-lines.ts).
 */
export { admit } from './admit';
export { finishBatch, holdBatch, recordFailedBatch, requestBatchCancel, stopBatch } from './batches';
export { admitBatchLines } from './batch-lines';
export type { LineLimits } from './batch-lines';
export type { AdmittedGeneration, KeyedRequest, NewGeneration } from './admit';
export { setLowBalanceThreshold } from './alerts';
export { credit, openAccount } from './credit';
export { parseNotice, STATUS_CHANNEL } from '../db/notify';
export type { StatusNotice } from '../db/notify';
export { release, settle } from './resolve';
export type { Resolution, SettleRequest } from './resolution';
export { startRunning } from './running';
export type { StartOutcome, StartRequest } from './running';
export { claimFreedVideoSlots, claimVideoSlotIfFree, claimVideoSlotOrPark } from './video-slots';
export type { ClaimedWaiter } from './video-slots';
export { creditPurchase, debitRefund } from './purchases';
