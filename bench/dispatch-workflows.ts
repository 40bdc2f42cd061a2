// The workflow bench/dispatch-probe.ts runs: the smallest durable job, so that what it measures
// is Temporal handing tasks to the worker (two workflow tasks and one activity task).
import { proxyActivities } from '@temporalio/workflow';

export interface DispatchActivities {
  noop(): Promise<number>;
}

const { noop } = proxyActivities<DispatchActivities>({ startToCloseTimeout: '1 minute' });

export async function oneActivity(): Promise<string> {
  await noop();
  return 'ok';
}
