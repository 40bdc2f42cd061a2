import type { ConstraintStrategy, HTTPVersion } from 'find-my-way';

/**
 * Which vendor's protocol a request speaks, for the paths this door shares with group B
 * (`GET /v1/models`); the app installs it as a router constraint (api/app.ts):
 * Anthropic's clients send `anthropic-version` on every call and their key as `x-api-key`, OpenAI's
 * neither. A route registered with `constraints: { clientProtocol: 'anthropic' }` answers the
 * first kind; the route without the constraint answers every other request, so OpenAI's clients
 * are served as before.
 */
export type ClientProtocol = 'anthropic' | 'openai';

export const CLIENT_PROTOCOL = 'clientProtocol';

export const ANTHROPIC_CLIENTS = { [CLIENT_PROTOCOL]: 'anthropic' } as const satisfies Record<string, ClientProtocol>;

export function clientProtocolOf(headers: Record<string, string | string[] | undefined>): ClientProtocol {
  return headers['anthropic-version'] !== undefined || headers['x-api-key'] !== undefined ? 'anthropic' : 'openai';
}

export const clientProtocolStrategy: ConstraintStrategy<HTTPVersion.V1, string> = {
  name: CLIENT_PROTOCOL,
  // A request of either protocol still reaches a route that has no constraint (every other path).
  mustMatchWhenDerived: false,
  storage() {
    const handlers = new Map<string, unknown>();
    return {
      get: (protocol) => (handlers.get(protocol) ?? null) as never,
      set: (protocol, handler) => void handlers.set(protocol, handler),
    };
  },
  deriveConstraint: (req) => clientProtocolOf(req.headers),
};
