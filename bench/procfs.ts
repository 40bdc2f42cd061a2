// Small readers of Linux's /proc for the processes the bench starts (PostgreSQL, the Temporal
// dev server, the service, LiteLLM) and their process trees. Each returns 0 or undefined once a process is gone.
import { readdir, readFile } from 'node:fs/promises';

/** Linux reports process times in clock ticks; USER_HZ is 100 on every mainstream kernel build. */
const TICK_MS = 10;

function statFields(stat: string): string[] {
  // The command name is in parentheses and may contain spaces: split after the last ')'.
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
}

/** CPU time (user + system, ms) a process used, its reaped children included. */
export async function processCpuMs(pid: number): Promise<number> {
  try {
    const f = statFields(await readFile(`/proc/${pid}/stat`, 'utf8'));
    // After the command: state(0) ppid(1) … utime(11) stime(12) cutime(13) cstime(14).
    return (Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14])) * TICK_MS;
  } catch {
    return 0;
  }
}

/** Resident set size and its high-water mark, in bytes. */
export async function processRss(pid: number): Promise<{ rss: number; hwm: number } | undefined> {
  try {
    const text = await readFile(`/proc/${pid}/status`, 'utf8');
    const kb = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(text)?.[1] ?? 0) * 1024;
    return { rss: kb('VmRSS'), hwm: kb('VmHWM') };
  } catch {
    return undefined;
  }
}

/**
 * Proportional set size in bytes: shared pages are split between the processes that map them,
 * so summing over PostgreSQL's backends counts shared_buffers once, not once per backend.
 */
export async function processPss(pid: number): Promise<number> {
  try {
    const text = await readFile(`/proc/${pid}/smaps_rollup`, 'utf8');
    return Number(/^Pss:\s+(\d+) kB/m.exec(text)?.[1] ?? 0) * 1024;
  } catch {
    return (await processRss(pid))?.rss ?? 0;
  }
}

/** Direct children of a process, whichever of its threads started them. */
export async function childrenOf(pid: number): Promise<number[]> {
  const tasks = await readdir(`/proc/${pid}/task`).catch(() => [] as string[]);
  if (tasks.length === 0) return [];
  try {
    // Throws where the kernel has no CONFIG_PROC_CHILDREN.
    await readFile(`/proc/${pid}/task/${pid}/children`, 'utf8');
  } catch {
    return scanForChildren(pid);
  }
  const out: number[] = [];
  for (const task of tasks) {
    // A thread that ended meanwhile has no file any more.
    const text = await readFile(`/proc/${pid}/task/${task}/children`, 'utf8').catch(() => '');
    out.push(...text.trim().split(/\s+/).filter(Boolean).map(Number));
  }
  return out;
}

/** Every process whose parent is `pid`, found by reading all of /proc. */
async function scanForChildren(pid: number): Promise<number[]> {
  const out: number[] = [];
  for (const entry of await readdir('/proc').catch(() => [] as string[])) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (Number(statFields(await readFile(`/proc/${entry}/stat`, 'utf8'))[1]) === pid) out.push(Number(entry));
    } catch {
      // Gone meanwhile.
    }
  }
  return out;
}

/** A process and all its descendants (PostgreSQL's backends, a Python server's workers), at most `limit`. */
export async function processTree(pid: number, limit = 1_000): Promise<number[]> {
  const tree = [pid];
  for (let i = 0; i < tree.length && tree.length < limit; i++) tree.push(...(await childrenOf(tree[i]!)));
  return tree.slice(0, limit);
}

/** CPU time (ms) of a process tree: what its live processes used, and what the exited ones left in their parents' cutime. */
export async function treeCpuMs(pid: number): Promise<number> {
  let total = 0;
  for (const p of await processTree(pid)) total += await processCpuMs(p);
  return total;
}

/** Proportional set size (bytes) of a process tree. */
export async function treePss(pid: number): Promise<number> {
  let total = 0;
  for (const p of await processTree(pid)) total += await processPss(p);
  return total;
}

/** Busy and total CPU time of the whole machine (all cores), ms. */
export async function machineCpuMs(): Promise<{ busy: number; total: number }> {
  const line = (await readFile('/proc/stat', 'utf8')).split('\n')[0] ?? '';
  const v = line.trim().split(/\s+/).slice(1).map(Number);
  // user nice system idle iowait irq softirq steal (guest time is already inside user).
  const total = v.slice(0, 8).reduce((s, x) => s + x, 0);
  const idle = (v[3] ?? 0) + (v[4] ?? 0);
  return { busy: (total - idle) * TICK_MS, total: total * TICK_MS };
}
