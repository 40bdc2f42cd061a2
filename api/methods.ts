import FindMyWay from 'find-my-way';
import type { HTTPMethod } from 'find-my-way';
import type { FastifyInstance } from 'fastify';

/**
 * Which methods each path of the app answers, so that a known path asked with another method is
 * a 405 with `Allow` (RFC 9110) instead of a misleading 404. Fastify's router answers only "no
 * route"; a second router holding every registered path answers "which methods, then".
 */
export function trackRouteMethods(app: FastifyInstance) {
  const router = FindMyWay({ ignoreTrailingSlash: true });
  const seen = new Set<string>();
  app.addHook('onRoute', (route) => {
    for (const method of [route.method].flat().map((m) => m.toUpperCase() as HTTPMethod)) {
      // `/docs` and `/docs/` are one path to a router that ignores trailing slashes.
      const key = `${method} ${route.url.replace(/(.)\/$/, '$1')}`;
      if (seen.has(key)) continue;
      seen.add(key);
      router.on(method, route.url, () => undefined);
    }
  });
  return {
    allowed(path: string): string[] {
      const methods: string[] = [];
      for (const m of ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'] as const) {
        if (router.find(m, path)) methods.push(m);
      }
      return methods;
    },
  };
}

export type MethodIndex = ReturnType<typeof trackRouteMethods>;
