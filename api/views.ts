import type { AccountCredits } from '../core/db/accounts';
import type { GenerationRow } from '../core/db/generations';
import { mcToCredits } from '../core/money';
import type { OutputStore } from '../core/storage';

/** The generation record of the spec; chat replies also carry their text. */
export async function generationRecord(g: GenerationRow, store: OutputStore) {
  return {
    id: g.id,
    kind: g.kind,
    model: g.model,
    status: g.status,
    // A fresh signed URL on every read; empty until the generation has succeeded.
    outputUrl: g.status === 'succeeded' && g.outputKey ? await store.signedUrl(g.outputKey) : '',
    creditsCharged: mcToCredits(g.chargedMc),
    error: g.status === 'failed' ? g.error : null,
    ...(g.kind === 'chat' && g.outputText !== null ? { text: g.outputText } : {}),
  };
}

/** `balance` is what can be spent now: the ledger balance less active holds (DESIGN §4). */
export function creditsView(c: AccountCredits) {
  return {
    balance: mcToCredits(c.balanceMc - c.heldMc),
    holdsActive: mcToCredits(c.heldMc),
    trial: { chatCap: c.chatCap, chatUsed: c.chatUsed, chatLeft: Math.max(0, c.chatCap - c.chatUsed) },
  };
}
