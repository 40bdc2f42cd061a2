// The balancer in front of the API processes: HAProxy, health-checking each on /health (which is
// 503 while PostgreSQL or Temporal cannot be reached). deploy/haproxy/haproxy.cfg, the compose
// balancer's configuration, is this with the compose service's own servers
// (test/unit/deploy/compose.test.ts keeps the two the same).

export interface HaproxySettings {
  /** `address:port` clients connect to. */
  bind: string;
  /** The API processes, or one `server-template` line's worth of them (compose: DNS names). */
  servers:
    { name: string; address: string }[] | { template: string; count: number; address: string; nameserver: string };
  /** The response for 502/503/504: a 503 with Retry-After in the API's own error shape. */
  errorFile: string;
}

export function haproxyConfig(s: HaproxySettings): string {
  const servers = Array.isArray(s.servers)
    ? s.servers.map((server) => `  server ${server.name} ${server.address}`)
    : [`  server-template ${s.servers.template} ${s.servers.count} ${s.servers.address} resolvers dns init-addr none`];
  // Compose's replicas share one DNS name; HAProxy follows its answers as they come and go.
  const resolvers = Array.isArray(s.servers)
    ? []
    : ['resolvers dns', `  nameserver dns ${s.servers.nameserver}`, '  hold valid 5s', ''];
  return (
    [
      ...common(s.errorFile),
      ...resolvers,
      'frontend api',
      `  bind ${s.bind}`,
      '  default_backend apis',
      // A killed API's requests get no answer. Sending one again to the other API is safe only
      // when the service can tell it is the same request: a read, or a write with an Idempotency-Key.
      '  http-request disable-l7-retry if !METH_GET !METH_HEAD !{ req.hdr(idempotency-key) -m found }',
      '',
      'backend apis',
      '  balance roundrobin',
      '  option httpchk GET /health',
      '  http-check expect status 200',
      '  default-server check inter 1s fall 2 rise 2',
      ...servers,
    ].join('\n') + '\n'
  );
}

const common = (errorFile: string) => [
  'global',
  '  log stderr format raw local0 warning',
  '',
  'defaults',
  '  mode http',
  '  log global',
  '  timeout connect 2s',
  '  timeout http-request 30s',
  // Chat answers stream; a long generation's status call is short, so this bounds only streams.
  '  timeout client 5m',
  '  timeout server 5m',
  // A request that found a dead API (connection refused, or no answer before it died) goes to the
  // other one: the same request, never a second one the client did not send.
  '  retries 3',
  '  option redispatch 1',
  '  retry-on conn-failure empty-response response-timeout',
  // No server up, a dead one's dropped request, a timeout: what the API itself answers when it
  // cannot reach PostgreSQL, a 503 with Retry-After, so clients retry as they already do.
  ...[502, 503, 504].map((code) => `  errorfile ${code} ${errorFile}`),
  '',
];
