import FindMyWay from 'find-my-way';
import type { HTTPMethod } from 'find-my-way';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';

/** A door's one error mapper (its Fastify error handler). */
export type ErrorMapper = (err: FastifyError | Error, request: FastifyRequest, reply: FastifyReply) => unknown;

/**
 * Which methods each path of the app answers, so that a known path asked with another method is
 * a 405 with `Allow` (RFC 9110) instead of a misleading 404, and which door's error mapper answers
 * it. Fastify's router answers only "no route"; a second router holding every registered path
 * answers "which methods, then", and remembers the error mapper each route was registered under.
 */
export function trackRouteMethods(app: FastifyInstance) {
  const router = FindMyWay({ ignoreTrailingSlash: true });
  const seen = new Set<string>();
  /** Each route's path up to its first parameter, with the door that answers there: the longest prefix names a path's door. */
  const prefixes: { prefix: string; mapper: ErrorMapper }[] = [];
  app.addHook('onRoute', function (this: FastifyInstance, route) {
    const mapper = this.errorHandler as ErrorMapper;
    const prefix = route.url.replace(/[:*].*$/, '').replace(/(.)\/$/, '$1');
    if (prefix !== '/') prefixes.push({ prefix, mapper });
    for (const method of [route.method].flat().map((m) => m.toUpperCase() as HTTPMethod)) {
      // `/docs` and `/docs/` are one path to a router that ignores trailing slashes.
      const key = `${method} ${route.url.replace(/(.)\/$/, '$1')}`;
      if (seen.has(key)) continue;
      seen.add(key);
      router.on(method, route.url, () => undefined, { mapper });
    }
  });
  return {
    /** The methods `path` answers (none: no route has it), and the error mapper of its door, if it has one. */
    lookup(path: string): { allowed: string[]; mapper: ErrorMapper | undefined } {
      const allowed: string[] = [];
      let mapper: ErrorMapper | undefined;
      for (const m of ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'] as const) {
        const found = router.find(m, path);
        if (!found) continue;
        allowed.push(m);
        mapper ??= (found.store as { mapper: ErrorMapper }).mapper;
      }
      if (mapper) return { allowed, mapper };
      let nearest: { prefix: string; mapper: ErrorMapper } | undefined;
      for (const p of prefixes)
        if (
          (path === p.prefix || path.startsWith(p.prefix.endsWith('/') ? p.prefix : `${p.prefix}/`)) &&
          p.prefix.length > (nearest?.prefix.length ?? 0)
        )
          nearest = p;
      return { allowed, mapper: nearest?.mapper };
    },
  };
}

export type MethodIndex = ReturnType<typeof trackRouteMethods>;
