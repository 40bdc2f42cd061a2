import {
  findChatModel,
  findImageModel,
  findOpenAiChatModel,
  findUpscaleModel,
  findVideoModel,
  findOpenAiVideoModel,
} from '../catalogue/models';
import type { Plan } from '../plans';
import { PermissionError } from '../errors';
import type { GenerationKind } from '../vocabulary';
import type { Actor } from '../db/audit';

/** Who asks: the key's account and what the key may do. */
export interface Principal {
  accountId: string;
  apiKeyId: string | null;
  plan?: Plan;
  scopes: readonly string[];
  /** A model allow-list, or null for every model. */
  models: readonly string[] | null;
  /**
   * The account's available balance as read with the key (same query, no extra round trip). A
   * hint only: the hold transaction decides. A streamed chat opens its upstream while the hold is
   * being placed when this says the hold will very likely be granted.
   */
  availableMc?: number;
  /** The key has a spending budget (core/db/budgets.ts), checked when its holds are placed. */
  budgeted?: boolean;
  /** Who this is in the audit log: the key, or the dashboard user of a session, and the client's address. */
  actor?: Actor;
}

/** The audit log's actor of a principal: as authentication set it, else its key. */
export const actorOf = (principal: Principal): Actor =>
  principal.actor ?? { type: principal.apiKeyId ? 'key' : 'operator', id: principal.apiKeyId, ip: null };

export function assertScope(principal: Principal, kind: GenerationKind): void {
  if (!principal.scopes.includes(kind)) {
    throw new PermissionError(`This API key lacks the '${kind}' scope (generate:${kind}).`, { param: 'kind' });
  }
}

/** Webhook management: a key without the scope may not see or change the account's endpoints. */
export function assertWebhooksScope(principal: Principal): void {
  if (!principal.scopes.includes('webhooks')) {
    throw new PermissionError("This API key lacks the 'webhooks' scope, which managing webhook endpoints needs.");
  }
}

/** Managing customers' limits, or reading the audit log: a key needs the scope of that name (a session's role decides for it). */
export function assertManagementScope(principal: Principal, scope: 'customers' | 'audit'): void {
  if (!principal.scopes.includes(scope)) {
    const what = scope === 'customers' ? 'reading and limiting the account’s customers' : 'reading the audit log';
    throw new PermissionError(`This API key lacks the '${scope}' scope, which ${what} needs.`);
  }
}

/** A key's allow-list may name a model by any of its ids; compare canonical ids. */
export function assertModelAllowed(principal: Principal, kind: GenerationKind, model: string): void {
  if (principal.models === null) return;
  const canonical = (id: string): string => {
    const found =
      kind === 'image'
        ? findImageModel(id)
        : kind === 'video'
          ? (findVideoModel(id) ?? findOpenAiVideoModel(id))
          : kind === 'chat'
            ? (findChatModel(id) ?? findOpenAiChatModel(id))
            : findUpscaleModel(id);
    return found?.id ?? id;
  };
  if (!principal.models.some((m) => canonical(m) === model)) {
    throw new PermissionError(`This API key has no permission for model '${model}'.`, { param: 'model' });
  }
}
