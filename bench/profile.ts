import type { Client } from '@temporalio/client';
import proto from '@temporalio/proto';
import { round } from './stats';

// The proto package is CommonJS: take the namespace from its default export.
const EventType = proto.temporal.api.enums.v1.EventType;
type HistoryEvent = proto.temporal.api.history.v1.IHistoryEvent;

interface Ts {
  seconds?: { toNumber(): number } | number | null;
  nanos?: number | null;
}

function tsMs(ts: Ts | null | undefined): number {
  if (!ts) return Number.NaN;
  const s = ts.seconds;
  const seconds = typeof s === 'number' ? s : s ? s.toNumber() : 0;
  return seconds * 1000 + (ts.nanos ?? 0) / 1e6;
}

const mean = (values: number[]): number => {
  const finite = values.filter((v) => Number.isFinite(v));
  return finite.length ? finite.reduce((s, v) => s + v, 0) / finite.length : Number.NaN;
};

interface Step {
  /** Time in the task queue: scheduled → picked up by the worker. */
  queueMs: number;
  /** Time on the worker: picked up → completed. */
  runMs: number;
}

export interface WorkflowProfile {
  events: number;
  workflowTasks: Step[];
  activities: (Step & { name: string })[];
  /** Local activities run inside a workflow task (recorded as markers): no round trip of their own. */
  localActivities: string[];
  /** Execution started → closed. */
  durationMs: number;
  /** Execution started → admission update completed (hold placed or refused). */
  admissionMs: number;
  /** Epoch ms of the execution's start and close, as the server recorded them (same machine clock as the client's). */
  startedAt: number;
  closedAt: number;
}

export function profileHistory(events: HistoryEvent[]): WorkflowProfile {
  let started = Number.NaN;
  let closed = Number.NaN;
  let admission = Number.NaN;
  const wft = new Map<number, { scheduled: number; started?: number; completed?: number }>();
  const act = new Map<number, { name: string; scheduled: number; started?: number; completed?: number }>();
  let lastWft: number | undefined;
  const localActivities: string[] = [];
  for (const e of events) {
    const t = tsMs(e.eventTime);
    const id = Number(e.eventId);
    switch (e.eventType) {
      case EventType.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED:
        started = t;
        break;
      case EventType.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED:
      case EventType.EVENT_TYPE_WORKFLOW_EXECUTION_FAILED:
        closed = t;
        break;
      case EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_COMPLETED:
        admission = t;
        break;
      case EventType.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED:
        wft.set(id, { scheduled: t });
        lastWft = id;
        break;
      case EventType.EVENT_TYPE_WORKFLOW_TASK_STARTED: {
        const w = wft.get(Number(e.workflowTaskStartedEventAttributes?.scheduledEventId ?? lastWft));
        if (w) w.started = t;
        break;
      }
      case EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED: {
        const w = wft.get(Number(e.workflowTaskCompletedEventAttributes?.scheduledEventId));
        if (w) w.completed = t;
        break;
      }
      case EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
        act.set(id, { name: e.activityTaskScheduledEventAttributes?.activityType?.name ?? '?', scheduled: t });
        break;
      case EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED: {
        const a = act.get(Number(e.activityTaskStartedEventAttributes?.scheduledEventId));
        if (a) a.started = t;
        break;
      }
      case EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
      case EventType.EVENT_TYPE_ACTIVITY_TASK_FAILED: {
        const attrs = e.activityTaskCompletedEventAttributes ?? e.activityTaskFailedEventAttributes;
        const a = act.get(Number(attrs?.scheduledEventId));
        if (a) a.completed = t;
        break;
      }
      case EventType.EVENT_TYPE_MARKER_RECORDED: {
        const data = e.markerRecordedEventAttributes?.details?.data?.payloads?.[0]?.data;
        try {
          const parsed = data
            ? (JSON.parse(Buffer.from(data).toString('utf8')) as { activity_type?: string })
            : undefined;
          if (parsed?.activity_type) localActivities.push(parsed.activity_type);
        } catch {
          // Some other marker.
        }
        break;
      }
      default:
        break;
    }
  }
  const step = (s: { scheduled: number; started?: number; completed?: number }): Step => ({
    queueMs: (s.started ?? Number.NaN) - s.scheduled,
    runMs: (s.completed ?? Number.NaN) - (s.started ?? Number.NaN),
  });
  return {
    events: events.length,
    workflowTasks: [...wft.values()].map(step),
    activities: [...act.values()].map((a) => ({ name: a.name, ...step(a) })),
    localActivities,
    durationMs: closed - started,
    admissionMs: admission - started,
    startedAt: started,
    closedAt: closed,
  };
}

export interface KindProfile {
  workflows: number;
  events: number;
  workflowTasks: number;
  activityTasks: number;
  localActivities: number;
  /** Workflow tasks plus activity tasks: each is a poll, a response and history writes on the server. */
  serverRoundTrips: number;
  /** The activities of one workflow, in order (local ones marked). */
  activitySequence: string[];
  workflowTask: { queueMs: number; runMs: number };
  /** The same, per workflow task in order (the first places the hold; the last settles). */
  workflowTaskByIndex: { queueMs: number; runMs: number }[];
  activity: Record<string, { count: number; queueMs: number; runMs: number }>;
  durationMs: number;
  admissionMs: number;
  /** Client-observed HTTP latency of the same generations, when known. */
  clientMs?: number;
  /**
   * What the API and its Temporal calls add around the workflow: clientMs less the workflow's
   * duration (image, chat: the client waits for the end) or less its admission (video: the
   * client waits for the hold only).
   */
  outsideWorkflowMs?: number;
  /** durationMs less the time activities ran: queueing, workflow tasks and the server's own work. */
  orchestrationMs: number;
  /** Client's send → workflow execution started: HTTP, auth, pricing, the hold transaction, the start RPC. */
  beforeStartMs?: number;
  /** Workflow closed → client's last byte: the result long-poll's notification, the final read, HTTP. */
  afterCloseMs?: number;
}

/** Reads the Temporal histories of `samples` and averages where each generation's time went. */
export async function profileKind(
  client: Client,
  samples: { id: string; ms?: number; at?: number }[],
  clientWaitsFor: 'end' | 'admission' | 'start' = 'end',
): Promise<KindProfile | undefined> {
  if (samples.length === 0) return undefined;
  const profiles: WorkflowProfile[] = [];
  for (const s of samples) {
    const history = await client.workflow.getHandle(s.id).fetchHistory();
    profiles.push(profileHistory(history.events ?? []));
  }
  const activity: KindProfile['activity'] = {};
  for (const name of new Set(profiles.flatMap((p) => p.activities.map((a) => a.name)))) {
    const all = profiles.flatMap((p) => p.activities.filter((a) => a.name === name));
    activity[name] = {
      count: round(all.length / profiles.length, 2),
      queueMs: round(mean(all.map((a) => a.queueMs))),
      runMs: round(mean(all.map((a) => a.runMs))),
    };
  }
  const wfts = profiles.flatMap((p) => p.workflowTasks);
  const maxTasks = Math.max(...profiles.map((p) => p.workflowTasks.length));
  const workflowTaskByIndex = Array.from({ length: maxTasks }, (_, i) => {
    const nth = profiles.map((p) => p.workflowTasks[i]).filter((w): w is Step => w !== undefined);
    return { queueMs: round(mean(nth.map((w) => w.queueMs))), runMs: round(mean(nth.map((w) => w.runMs))) };
  });
  const durationMs = mean(profiles.map((p) => p.durationMs));
  const admissionMs = mean(profiles.map((p) => p.admissionMs));
  const activityRun = mean(
    profiles.map((p) => p.activities.reduce((s, a) => s + (Number.isFinite(a.runMs) ? a.runMs : 0), 0)),
  );
  const known = samples.map((s) => s.ms).filter((v): v is number => v !== undefined && Number.isFinite(v));
  const clientMs = known.length ? mean(known) : undefined;
  const timed = samples
    .map((s, i) => ({ s, p: profiles[i]! }))
    .filter(({ s }) => s.at !== undefined && s.ms !== undefined);
  const beforeStartMs = timed.length ? mean(timed.map(({ s, p }) => p.startedAt - s.at!)) : undefined;
  const afterCloseMs =
    timed.length && clientWaitsFor === 'end' ? mean(timed.map(({ s, p }) => s.at! + s.ms! - p.closedAt)) : undefined;
  const outside = clientWaitsFor === 'end' ? durationMs : clientWaitsFor === 'admission' ? admissionMs : 0;
  return {
    workflows: profiles.length,
    events: round(mean(profiles.map((p) => p.events))),
    workflowTasks: round(mean(profiles.map((p) => p.workflowTasks.length))),
    activityTasks: round(mean(profiles.map((p) => p.activities.length))),
    localActivities: round(mean(profiles.map((p) => p.localActivities.length))),
    serverRoundTrips: round(mean(profiles.map((p) => p.workflowTasks.length + p.activities.length))),
    activitySequence: [
      ...profiles[0]!.localActivities.map((n) => `${n} (local)`),
      ...profiles[0]!.activities.map((a) => a.name),
    ],
    workflowTask: { queueMs: round(mean(wfts.map((w) => w.queueMs))), runMs: round(mean(wfts.map((w) => w.runMs))) },
    workflowTaskByIndex,
    activity,
    durationMs: round(durationMs),
    admissionMs: round(admissionMs),
    ...(clientMs === undefined ? {} : { clientMs: round(clientMs), outsideWorkflowMs: round(clientMs - outside) }),
    ...(beforeStartMs === undefined ? {} : { beforeStartMs: round(beforeStartMs) }),
    ...(afterCloseMs === undefined ? {} : { afterCloseMs: round(afterCloseMs) }),
    orchestrationMs: round(durationMs - activityRun),
  };
}

/** Workflow ids of an account's generations, through Temporal visibility (the AccountId search attribute). */
export async function workflowIdsOf(client: Client, accountId: string, limit: number): Promise<string[]> {
  const ids: string[] = [];
  for await (const wf of client.workflow.list({ query: `AccountId = '${accountId}'` })) {
    ids.push(wf.workflowId);
    if (ids.length >= limit) break;
  }
  return ids;
}
