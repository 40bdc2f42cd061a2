import { ScheduleAlreadyRunning, ScheduleOverlapPolicy } from '@temporalio/client';
import type { Client } from '@temporalio/client';
import type { ReconcileRequest } from '../activities/generation/reconcile';

/** One reconciler per task queue: deployments (and test runs) sharing a namespace keep theirs apart. */
export const reconcilerScheduleId = (taskQueue: string) => `gensvc-reconciler-${taskQueue}`;

/**
 * The reconciler runs as a Temporal schedule, so operators see it (and each run's report) in the
 * Temporal UI next to the generations, and can pause or trigger it there. Every worker makes sure
 * it exists at start-up; the first one creates it, the others find it.
 */
export async function ensureReconcilerSchedule(
  client: Client,
  opts: { taskQueue: string; everyMs: number; graceMs: number },
): Promise<void> {
  const args: [ReconcileRequest] = [{ graceMs: opts.graceMs }];
  try {
    await client.schedule.create({
      scheduleId: reconcilerScheduleId(opts.taskQueue),
      spec: { intervals: [{ every: opts.everyMs }] },
      action: {
        type: 'startWorkflow',
        workflowType: 'reconcile',
        taskQueue: opts.taskQueue,
        args,
        workflowId: `gensvc-reconcile-${opts.taskQueue}`,
      },
      // One pass at a time: a slow pass (Temporal or the database struggling) is not stacked upon.
      policies: { overlap: ScheduleOverlapPolicy.SKIP, catchupWindow: opts.everyMs },
      memo: {
        purpose: 'Releases holds whose generation workflow never started, was terminated or closed without settling',
      },
    });
  } catch (err) {
    if (!(err instanceof ScheduleAlreadyRunning)) throw err;
  }
}
