import Ajv2020 from 'ajv/dist/2020';
import { describe, expect, it } from 'vitest';
import { mimeTypeOf } from '../../../../api/mcp/results';
import { taskOf } from '../../../../api/mcp/task-store';
import { TOOLS } from '../../../../api/mcp/tools';
import { loadConfig } from '../../../../core/config';
import type { McpTaskRow } from '../../../../core/db/mcp-tasks';

const T0 = new Date('2026-01-01T10:00:00Z');
const T1 = new Date('2026-01-01T10:00:05Z');

function row(over: Partial<McpTaskRow>): McpTaskRow {
  return {
    id: 'task_01',
    accountId: 'acct_1',
    generationId: 'gen_1',
    tool: 'generate_video',
    progressToken: null,
    ttlMs: 60_000,
    pollIntervalMs: 1000,
    status: null,
    statusMessage: null,
    result: null,
    createdAt: T0,
    updatedAt: T0,
    generation: { status: 'queued', error: null, updatedAt: T0 },
    ...over,
  };
}

describe('a task follows its generation', () => {
  it.each([
    ['queued', null, 'working'],
    ['running', null, 'working'],
    ['succeeded', null, 'completed'],
    ['failed', { code: 'provider_failed', message: 'The provider failed.', retryable: false }, 'failed'],
    ['failed', { code: 'cancelled', message: 'Cancelled by the client.', retryable: false }, 'cancelled'],
  ] as const)('a %s generation (error %o) makes a %s task', (status, error, expected) => {
    const task = taskOf(row({ generation: { status, error, updatedAt: T1 } }));
    expect(task).toMatchObject({
      taskId: 'task_01',
      status: expected,
      ttl: 60_000,
      pollInterval: 1000,
      createdAt: T0.toISOString(),
      lastUpdatedAt: T1.toISOString(),
    });
    if (error) expect(task.statusMessage).toBe(error.message);
  });

  it('keeps a status of its own: a cancelled task stays cancelled whatever its generation did', () => {
    const task = taskOf(
      row({
        status: 'cancelled',
        statusMessage: 'Client cancelled task execution.',
        updatedAt: T1,
        generation: { status: 'succeeded', error: null, updatedAt: T0 },
      }),
    );
    expect(task).toMatchObject({
      status: 'cancelled',
      statusMessage: 'Client cancelled task execution.',
      lastUpdatedAt: T1.toISOString(),
    });
    expect(
      taskOf(row({ generationId: null, generation: null, status: 'failed', statusMessage: 'Insufficient credits' })),
    ).toMatchObject({ status: 'failed' });
  });
});

describe('tool definitions', () => {
  it('are valid JSON Schema 2020-12 objects with names MCP clients accept', () => {
    const ajv = new Ajv2020({ strict: false });
    expect([...TOOLS.keys()].sort()).toEqual([
      'cancel_batch',
      'cancel_generation',
      'enhance_prompt',
      'generate_batch',
      'generate_image',
      'generate_video',
      'get_batch',
      'get_generation',
      'list_models',
    ]);
    for (const { definition } of TOOLS.values()) {
      expect(definition.name).toMatch(/^[a-z_]{1,64}$/);
      for (const schema of [definition.inputSchema, definition.outputSchema]) {
        expect(schema?.type).toBe('object');
        expect(ajv.validateSchema(schema!), `${definition.name}: ${ajv.errorsText()}`).toBe(true);
      }
    }
  });
});

describe('output media types', () => {
  it.each([
    ['http://127.0.0.1:3000/files/gen_1/output.png?expires=1&signature=ab', 'image/png'],
    ['https://files.example.com/bucket/gen_1/output.webm?X-Amz-Signature=ab', 'video/webm'],
    ['http://x/files/gen_1/output.txt', 'text/plain'],
    ['http://x/files/gen_1/output', 'application/octet-stream'],
  ])('%s is %s', (outputUrl, type) => {
    expect(mimeTypeOf(outputUrl)).toBe(type);
  });
});

describe('MCP_ALLOWED_ORIGINS', () => {
  it('is a comma-separated list of origins; anything else stops the start naming the variable', () => {
    expect(loadConfig({}).MCP_ALLOWED_ORIGINS).toEqual([]);
    expect(
      loadConfig({ MCP_ALLOWED_ORIGINS: 'https://app.example.com, http://localhost:5173/' }).MCP_ALLOWED_ORIGINS,
    ).toEqual(['https://app.example.com', 'http://localhost:5173']);
    expect(() => loadConfig({ MCP_ALLOWED_ORIGINS: 'https://app.example.com/path' })).toThrow(
      /MCP_ALLOWED_ORIGINS: 'https:\/\/app.example.com\/path' is not an origin/,
    );
    expect(() => loadConfig({ MCP_ALLOWED_ORIGINS: 'app.example.com' })).toThrow(/MCP_ALLOWED_ORIGINS/);
  });
});
