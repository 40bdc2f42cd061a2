/** What a generation's workflow that closed with its hold still held means, as the generation's error code. */
const CLOSED_REASONS: Readonly<Record<string, string>> = {
  TERMINATED: 'terminated',
  TIMED_OUT: 'timed_out',
  FAILED: 'workflow_failed',
  CANCELLED: 'cancelled',
  COMPLETED: 'workflow_completed',
  CONTINUED_AS_NEW: 'workflow_completed',
  NOT_FOUND: 'not_started',
};

/** The error code for a workflow execution status name (`TERMINATED` → `terminated`). */
export function closedWorkflowReason(status: string): string {
  return CLOSED_REASONS[status] ?? 'workflow_closed';
}
