import { proxyActivities } from '@temporalio/workflow';
import type {
  createReconcileActivities,
  ReconcileReport,
  ReconcileRequest,
} from '../../activities/generation/reconcile';

const { reconcileHolds } = proxyActivities<ReturnType<typeof createReconcileActivities>>({
  startToCloseTimeout: '5 minutes',
  retry: { maximumAttempts: 3 },
});

/** One pass of the reconciler (run by the `gensvc-reconciler` schedule); its result is the report. */
export async function reconcile(req: ReconcileRequest): Promise<ReconcileReport> {
  return reconcileHolds(req);
}
