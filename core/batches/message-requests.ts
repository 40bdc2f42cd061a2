import type { InputLimits, InputLine, LineProblem } from './input';

/**
 * A Message Batch's requests as Anthropic's API takes them: inline, each
 * `{ custom_id, params }`, every custom_id different and of Anthropic's alphabet. Reading them is
 * pure, like reading an input file: every problem is reported with where it is
 * (`requests[0]` is the first request, which is line 1 of the batch), never thrown.
 */

/** custom_id as Anthropic bounds it. */
const CUSTOM_ID = /^[a-zA-Z0-9_-]{1,64}$/;

/** Where a request sits, as Anthropic's errors name it. */
export const requestAt = (line: number): string => `requests[${line - 1}]`;

export function readMessageRequests(
  requests: readonly unknown[],
  limits: InputLimits,
): { lines: InputLine[]; problems: LineProblem[] } {
  const lines: InputLine[] = [];
  const problems: LineProblem[] = [];
  const problem = (line: number | null, code: string, message: string, param: string | null) =>
    problems.push({ code, message, param, line });
  if (requests.length === 0) {
    problem(null, 'empty_batch', 'requests: a batch needs at least one request.', 'requests');
    return { lines, problems };
  }
  if (requests.length > limits.maxLines) {
    problem(
      null,
      'too_many_requests',
      `requests: ${requests.length} requests is more than a batch may have (${limits.maxLines}).`,
      'requests',
    );
    return { lines, problems };
  }
  const seen = new Map<string, number>();
  requests.forEach((r, i) => {
    const line = i + 1;
    const at = requestAt(line);
    if (typeof r !== 'object' || r === null || Array.isArray(r)) {
      problem(line, 'invalid_request', `${at}: each request must be an object with custom_id and params.`, at);
      return;
    }
    const { custom_id: customId, params, ...extra } = r as Record<string, unknown>;
    const unknown = Object.keys(extra)[0];
    if (unknown !== undefined) {
      problem(line, 'invalid_request', `${at}.${unknown}: Extra inputs are not permitted`, `${at}.${unknown}`);
      return;
    }
    if (typeof customId !== 'string' || !CUSTOM_ID.test(customId)) {
      problem(
        line,
        'missing_required_parameter',
        `${at}.custom_id: must be 1 to 64 letters, digits, hyphens or underscores.`,
        `${at}.custom_id`,
      );
      return;
    }
    if (typeof params !== 'object' || params === null || Array.isArray(params)) {
      problem(line, 'missing_required_parameter', `${at}.params: must be the body of a message.`, `${at}.params`);
      return;
    }
    if (Buffer.byteLength(JSON.stringify(params), 'utf8') > limits.maxLineBytes) {
      problem(line, 'line_too_large', `${at}.params: longer than ${limits.maxLineBytes} bytes.`, `${at}.params`);
      return;
    }
    const first = seen.get(customId);
    if (first !== undefined) {
      problem(
        line,
        'duplicate_custom_id',
        `${at}.custom_id: ${JSON.stringify(customId)} is already used by ${requestAt(first)}; each must be unique.`,
        `${at}.custom_id`,
      );
      return;
    }
    seen.set(customId, line);
    lines.push({ line, customId, body: params as Record<string, unknown> });
  });
  return { lines, problems };
}
