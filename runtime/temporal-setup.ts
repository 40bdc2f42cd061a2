import type { Client } from '@temporalio/client';
import { msToTs } from '@temporalio/common/lib/time';
import proto from '@temporalio/proto';
import { SearchAttributeType } from '@temporalio/common';
import { SEARCH_ATTRIBUTES } from '../core/search-attributes';

// The proto package is CommonJS: take the namespace from its default export.
const INDEXED = proto.temporal.api.enums.v1.IndexedValueType;

/** The server's indexed type of each kind of attribute the workflows set. */
const INDEXED_TYPES: Partial<Record<SearchAttributeType, number>> = {
  [SearchAttributeType.KEYWORD]: INDEXED.INDEXED_VALUE_TYPE_KEYWORD,
  [SearchAttributeType.INT]: INDEXED.INDEXED_VALUE_TYPE_INT,
};

/** Registers the search attributes the workflow sets, once per namespace; existing ones are left alone. */
export async function registerSearchAttributes(client: Client, namespace: string): Promise<void> {
  const existing = await client.connection.operatorService.listSearchAttributes({ namespace });
  const known = new Set([
    ...Object.keys(existing.customAttributes ?? {}),
    ...Object.keys(existing.systemAttributes ?? {}),
  ]);
  const missing = SEARCH_ATTRIBUTES.filter((k) => !known.has(k.name));
  if (missing.length === 0) return;
  try {
    await client.connection.operatorService.addSearchAttributes({
      namespace,
      searchAttributes: Object.fromEntries(missing.map((k) => [k.name, INDEXED_TYPES[k.type]!])),
    });
  } catch (err) {
    // The API and every worker register at start-up; when they start together one of them wins.
    if ((err as { code?: number }).code !== GRPC_ALREADY_EXISTS) throw err;
  }
}

const GRPC_ALREADY_EXISTS = 6;

/**
 * Registers `namespace` when the server does not know it, and waits until the frontend serves it:
 * describeNamespace reads the database and knows it at once, but the other calls go through the
 * frontend's namespace cache, which learns of it within about ten seconds. The dev server has its
 * own, and so does Temporal Cloud (where registering is not allowed); a plain server starts with
 * none but `temporal-system`.
 */
export async function ensureNamespace(
  client: Client,
  namespace: string,
  retentionDays = 3,
  timeoutMs = 60_000,
): Promise<void> {
  const service = client.connection.workflowService;
  const exists = await service.describeNamespace({ namespace }).then(
    () => true,
    (err: { code?: number }) => {
      if (err.code !== GRPC_NOT_FOUND) throw err;
      return false;
    },
  );
  if (exists) return;
  try {
    await service.registerNamespace({ namespace, workflowExecutionRetentionPeriod: msToTs(`${retentionDays} days`) });
  } catch (err) {
    if ((err as { code?: number }).code !== GRPC_ALREADY_EXISTS) throw err;
  }
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      await client.connection.operatorService.listSearchAttributes({ namespace });
      return;
    } catch (err) {
      if (Date.now() > deadline) throw err;
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
  }
}

const GRPC_NOT_FOUND = 5;
