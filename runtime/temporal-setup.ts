import type { Client } from '@temporalio/client';
import proto from '@temporalio/proto';
import { SEARCH_ATTRIBUTES } from '../core/search-attributes';

// The proto package is CommonJS: take the namespace from its default export.
const INDEXED = proto.temporal.api.enums.v1.IndexedValueType;

/** Registers the search attributes the workflow sets, once per namespace; existing ones are left alone. */
export async function registerSearchAttributes(client: Client, namespace: string): Promise<void> {
  const existing = await client.connection.operatorService.listSearchAttributes({ namespace });
  const known = new Set([...Object.keys(existing.customAttributes ?? {}), ...Object.keys(existing.systemAttributes ?? {})]);
  const missing = SEARCH_ATTRIBUTES.filter((k) => !known.has(k.name));
  if (missing.length === 0) return;
  try {
    await client.connection.operatorService.addSearchAttributes({
      namespace,
      searchAttributes: Object.fromEntries(missing.map((k) => [k.name, INDEXED.INDEXED_VALUE_TYPE_KEYWORD])),
    });
  } catch (err) {
    // The API and every worker register at start-up; when they start together one of them wins.
    if ((err as { code?: number }).code !== GRPC_ALREADY_EXISTS) throw err;
  }
}

const GRPC_ALREADY_EXISTS = 6;
