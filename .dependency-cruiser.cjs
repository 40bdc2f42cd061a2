// @ts-check
// Import floors, checked by `npm run deps` (part of `npm test`). docs/architecture.md draws them.
//
// The service is one core with many doors. Code may import down a floor, never up one:
//   api (doors) → service → core;  activities → core;  workflows → machines + activity types;
//   machines → the vocabulary;  runtime/ is the composition root and may import anything.
// Inside core/: the leaves (words that import nothing of ours) ← db/ (row SQL) ← everything else.
// Beside them: scripts/ (tool builds) ← deploy/ (the production topology) ← faults/, bench/, test/.

/** Our own code: a file in one of our folders (not a Node built-in, not a package). */
const OURS = '^(?!node_modules/)[^/]+/';

/** A target among our own files, minus the allowed ones. */
const oursExcept = (/** @type {string[]} */ ...allowed) => ({
  path: OURS,
  pathNot: allowed,
  dependencyTypesNot: ['core'],
});

/**
 * core/'s leaves: words and tiny helpers every floor shares. Each imports nothing of ours but other
 * leaves, so nothing can form a circle through them, and core/db/ may stand on them.
 */
const CORE_LEAVES = [
  '^core/vocabulary\\.ts$',
  '^core/money\\.ts$',
  '^core/ids\\.ts$',
  '^core/plans\\.ts$',
  '^core/roles\\.ts$',
  '^core/webhooks/events\\.ts$',
  '^core/generation/params\\.ts$',
];

/** Leaf modules a workflow may import at run time: pure, no I/O, safe in the workflow sandbox. */
const WORKFLOW_LEAVES = [
  '^core/vocabulary\\.ts$',
  '^core/money\\.ts$',
  '^core/search-attributes\\.ts$',
  '^core/workflow-contract\\.ts$',
  '^core/webhooks/schedule\\.ts$',
];

/**
 * The doors into the service, one folder each. Those that take generation requests are named as
 * `DOORS` in core/vocabulary.ts names them (test/unit/api/doors.test.ts holds the two lists alike);
 * the operator's admin API and the upstreams' callbacks are doors that take none. api/shared/ and
 * the management APIs mounted by two doors (api/webhooks/, api/customers/, api/audit/) are shared
 * by doors, never doors.
 */
const GENERATION_DOORS = ['group-a', 'group-b', 'group-c', 'anthropic', 'mcp', 'dashboard'];
const OTHER_DOORS = ['admin', 'upstream-callbacks'];
const DOORS = [...GENERATION_DOORS, ...OTHER_DOORS].map((name) => ({ name, path: `^api/${name}/` }));

/**
 * The service's features (folders of service/), lowest first. A feature imports only features
 * listed before it, so two features never import each other, nor through a third. generation/
 * holds the one submit pipeline every kind goes through; chat/ stands below it (the reply as a
 * provider streams it, the whole reply, stored responses), because the pipeline runs a streamed
 * chat as one of its kinds: generation → chat is the one direction, chat → generation is refused.
 * batches/ submit lines priced by generation/'s pipeline; customers/ and webhooks/ write the
 * audit log of accounts/.
 */
const SERVICE_FEATURES = [
  'accounts',
  'catalogue',
  'chat',
  'generation',
  'batches',
  'billing',
  'customers',
  'upstream-callbacks',
  'usage',
  'webhooks',
];

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      severity: 'error',
      comment:
        'Imports must not form a circle (type-only imports count too): a circle means two modules ' +
        'are one job split in two, or a shared piece belongs in a lower leaf both can import.',
      from: {},
      to: { circular: true },
    },
    {
      name: 'service-floor',
      severity: 'error',
      comment:
        'service/ stands on core/ only: it may import service/ and core/, never a door, an activity, a workflow or the runtime.',
      from: { path: '^service/' },
      to: oursExcept('^(service|core)/'),
    },
    ...SERVICE_FEATURES.map((feature, i) => ({
      name: `service-${feature}-imports-a-later-feature`,
      severity: /** @type {const} */ ('error'),
      comment:
        `service/${feature}/ may import only the service features listed before it in SERVICE_FEATURES ` +
        `(${SERVICE_FEATURES.slice(0, i).join(', ') || 'none'}): features import each other in one direction. ` +
        'What a lower feature needs from a higher one is passed in, or moves down.',
      from: { path: `^service/${feature}/` },
      to: { path: '^service/', pathNot: SERVICE_FEATURES.slice(0, i + 1).map((f) => `^service/${f}/`) },
    })),
    {
      name: 'service-feature-unlisted',
      severity: 'error',
      comment:
        'Every folder of service/ is a feature listed in SERVICE_FEATURES, which orders them; an unlisted one ' +
        '(or a file loose in service/) imports no other feature until it is given its place.',
      from: { path: '^service/(?:([^/]+)/|[^/]+$)', pathNot: SERVICE_FEATURES.map((f) => `^service/${f}/`) },
      to: { path: '^service/', pathNot: '^service/$1/' },
    },
    {
      name: 'core-floor',
      severity: 'error',
      comment: 'core/ is the ground floor: it imports only core/. Whatever it needs from above is passed in.',
      from: { path: '^core/' },
      to: oursExcept('^core/'),
    },
    {
      name: 'core-db-floor',
      severity: 'error',
      comment:
        'core/db/ is row SQL, below everything else in core/: it imports only core/db/ and the leaves ' +
        '(vocabulary, money, ids, plans, roles, webhook event names, generation parameters). What it needs from above (a trace id, a clock) is passed in.',
      from: { path: '^core/db/' },
      to: oursExcept('^core/db/', ...CORE_LEAVES),
    },
    {
      name: 'core-leaves-are-leaves',
      severity: 'error',
      comment: 'The leaves of core/ import nothing of ours but other leaves.',
      from: { path: CORE_LEAVES },
      to: oursExcept(...CORE_LEAVES),
    },
    {
      name: 'activities-floor',
      severity: 'error',
      comment:
        'activities/ stand on core/ only: they may import activities/ and core/, never service/, workflows/ or a door.',
      from: { path: '^activities/' },
      to: oursExcept('^(activities|core)/'),
    },
    {
      name: 'workflows-floor',
      severity: 'error',
      comment:
        'workflows/ import only workflows/, machines/, the types of activities/, and the pure leaves ' +
        'core/vocabulary.ts, core/search-attributes.ts, core/workflow-contract.ts and core/webhooks/schedule.ts (the workflow sandbox ' +
        'bundles whatever a workflow imports at run time).',
      from: { path: '^workflows/' },
      to: oursExcept('^(workflows|machines|activities)/', ...WORKFLOW_LEAVES),
    },
    {
      name: 'workflows-activity-types-only',
      severity: 'error',
      comment: 'workflows/ import activities/ as types only (`import type`) and call them through proxyActivities.',
      from: { path: '^workflows/' },
      to: { path: '^activities/', dependencyTypesNot: ['type-only', 'type-import'] },
    },
    {
      name: 'machines-floor',
      severity: 'error',
      comment: 'machines/ are pure: they import only machines/ and the vocabulary leaf core/vocabulary.ts.',
      from: { path: '^machines/' },
      to: oursExcept('^machines/', '^core/vocabulary\\.ts$'),
    },
    {
      name: 'nothing-imports-api',
      severity: 'error',
      comment: 'Nothing below the doors imports api/: only api/ itself and runtime/ (the composition root) may.',
      from: { path: '^(service|core|activities|workflows|machines|cli)/' },
      to: { path: '^api/' },
    },
    {
      name: 'cli-floor',
      severity: 'error',
      comment: 'The operator CLI talks to the admin API; it imports only cli/ and core/.',
      from: { path: '^cli/' },
      to: oursExcept('^(cli|core)/'),
    },
    {
      name: 'shared-api-imports-no-door',
      severity: 'error',
      comment: 'api/shared/, api/webhooks/, api/customers/ and api/audit/ serve several doors, so they import none.',
      from: { path: '^api/(shared|webhooks|customers|audit)/' },
      to: { path: DOORS.map((door) => door.path) },
    },
    ...DOORS.map((door) => ({
      name: `door-${door.name}-imports-a-door`,
      severity: /** @type {const} */ ('error'),
      comment:
        `Doors never import each other: ${door.path} may import api/shared/, the shared management APIs, service/ and core/, ` +
        'not another door. A rule two doors need moves into api/shared/ or the service.',
      from: { path: door.path },
      to: { path: DOORS.filter((other) => other !== door).map((other) => other.path) },
    })),
    {
      name: 'runtime-stands-alone',
      severity: 'error',
      comment: 'The running service never imports its harnesses, deployment scripts or tool builds.',
      from: { path: '^(runtime|api|service|core|activities|workflows|machines|cli)/' },
      to: { path: '^(deploy|scripts|faults|bench|test)/' },
    },
    {
      name: 'runtime-has-no-dev-dependencies',
      severity: 'error',
      comment:
        'The image installs production dependencies only (npm ci --omit=dev): the running service imports no ' +
        'dev dependency, except for types, which the compiled JavaScript does not keep.',
      from: { path: '^(runtime|api|service|core|activities|workflows|machines|cli)/' },
      to: { dependencyTypes: ['npm-dev'], dependencyTypesNot: ['type-only', 'type-import'] },
    },
    {
      name: 'scripts-floor',
      severity: 'error',
      comment: 'scripts/ build and find tools; they import only scripts/ and runtime/.',
      from: { path: '^scripts/' },
      to: oursExcept('^(scripts|runtime)/'),
    },
    {
      name: 'deploy-floor',
      severity: 'error',
      comment:
        'deploy/ is the production topology (the cluster, compose files, the Temporal server config): it may use scripts/, ' +
        'runtime/ and core/, never the fault run, the bench or the tests, which use it.',
      from: { path: '^deploy/' },
      to: oursExcept('^(deploy|scripts|runtime|core)/'),
    },
  ],
  options: {
    // Packages are leaves of the graph (not followed): the dev-dependency rule needs them there.
    doNotFollow: { path: '(^|/)node_modules/' },
    // Type-only imports are real edges for the circle rule and the activity-types rule.
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: {
      exportsFields: ['exports'],
      conditionNames: ['import', 'require', 'node', 'default', 'types'],
      extensions: ['.ts', '.js', '.mjs', '.cjs', '.json'],
    },
    skipAnalysisNotInRules: true,
    progress: { type: 'none' },
  },
};
