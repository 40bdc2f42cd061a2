/**
 * A batch's input file as OpenAI's Batch API defines it: JSONL, one request per line,
 * `{ "custom_id", "method": "POST", "url", "body" }`, every line for the batch's endpoint and every
 * `custom_id` different. Reading it is pure: what is wrong is reported by line number (the file's
 * first line is line 1) with a code and the parameter it concerns, never thrown.
 */

/** One request of the file, its envelope checked; its body is the door's to parse. */
export interface InputLine {
  line: number;
  customId: string;
  body: Record<string, unknown>;
}

/** Something wrong with a line (or the file, line null), as a batch's `errors` lists it. */
export interface LineProblem {
  code: string;
  message: string;
  param: string | null;
  line: number | null;
}

export interface InputLimits {
  /** The longest line, in bytes (its newline not counted). */
  maxLineBytes: number;
  /** The most lines a batch may have. */
  maxLines: number;
}

/** custom_id as OpenAI bounds it. */
const MAX_CUSTOM_ID = 512;

/** Counts the requests of an uploaded file (its non-empty lines), without parsing them. */
export function countLines(data: Buffer): number {
  let n = 0;
  let start = 0;
  for (;;) {
    const end = data.indexOf(0x0a, start);
    const stop = end === -1 ? data.length : end;
    if (data.subarray(start, stop).toString('latin1').trim() !== '') n++;
    if (end === -1) return n;
    start = end + 1;
  }
}

/**
 * Splits the file into its requests for `endpoint`. Every line is read, so that one answer names
 * every problem: a line that is not JSON, lacks a field, calls another endpoint or method, repeats
 * a custom_id or is too long. Blank lines at the end are ignored; a blank line between requests is
 * a problem of its own (a request is missing there).
 */
export function readInput(
  data: Buffer,
  endpoint: string,
  limits: InputLimits,
): { lines: InputLine[]; problems: LineProblem[] } {
  const lines: InputLine[] = [];
  const problems: LineProblem[] = [];
  const problem = (line: number | null, code: string, message: string, param: string | null = null) =>
    problems.push({ code, message, param, line });
  const text = new TextDecoder('utf-8', { fatal: false }).decode(data);
  const raw = text.split('\n').map((l) => (l.endsWith('\r') ? l.slice(0, -1) : l));
  while (raw.length > 0 && raw[raw.length - 1]!.trim() === '') raw.pop();
  if (raw.length === 0) {
    problem(null, 'empty_file', 'The input file has no requests.');
    return { lines, problems };
  }
  if (raw.length > limits.maxLines) {
    problem(
      null,
      'too_many_requests',
      `The input file has ${raw.length} lines; a batch may have at most ${limits.maxLines}.`,
    );
    return { lines, problems };
  }
  const seen = new Map<string, number>();
  raw.forEach((content, i) => {
    const line = i + 1;
    if (Buffer.byteLength(content, 'utf8') > limits.maxLineBytes) {
      problem(line, 'line_too_large', `Line ${line} is longer than ${limits.maxLineBytes} bytes.`);
      return;
    }
    if (content.trim() === '') {
      problem(line, 'invalid_json_line', `Line ${line} is empty; every line must be one JSON request.`);
      return;
    }
    let parsed: unknown;
    try {
      parsed = JSON.parse(content);
    } catch {
      problem(line, 'invalid_json_line', `Line ${line} is not valid JSON.`);
      return;
    }
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
      problem(line, 'invalid_json_line', `Line ${line} is not a JSON object.`);
      return;
    }
    const r = parsed as Record<string, unknown>;
    const customId = r.custom_id;
    if (typeof customId !== 'string' || customId === '' || customId.length > MAX_CUSTOM_ID) {
      problem(
        line,
        'missing_required_parameter',
        `Line ${line}: custom_id must be a non-empty string of at most ${MAX_CUSTOM_ID} characters.`,
        'custom_id',
      );
      return;
    }
    if (r.method !== 'POST') {
      problem(line, 'invalid_method', `Line ${line}: method must be "POST".`, 'method');
      return;
    }
    if (r.url !== endpoint) {
      problem(
        line,
        'mismatched_endpoint',
        `Line ${line}: url ${JSON.stringify(r.url)} is not the batch's endpoint ${endpoint}; every line of a batch calls the same endpoint.`,
        'url',
      );
      return;
    }
    if (typeof r.body !== 'object' || r.body === null || Array.isArray(r.body)) {
      problem(line, 'missing_required_parameter', `Line ${line}: body must be a JSON object.`, 'body');
      return;
    }
    const first = seen.get(customId);
    if (first !== undefined) {
      problem(
        line,
        'duplicate_custom_id',
        `Line ${line}: custom_id ${JSON.stringify(customId)} is already used by line ${first}; each must be unique.`,
        'custom_id',
      );
      return;
    }
    seen.set(customId, line);
    lines.push({ line, customId, body: r.body as Record<string, unknown> });
  });
  return { lines, problems };
}
