// @ts-check
// Import floors, checked by `npm run deps` (part of `npm test`).
//
// The service is one core with many doors. Code may import down a floor, never up one:
//   api (doors) → service → core;  activities → core;  workflows → machines + activity types;
//   machines → the vocabulary;  runtime/ is the composition root and may import anything.
// test/, bench/, faults/ and scripts/ are exempt from the floors but not from the no-circle rule.

/** Our own code: a file in one of our folders (not a Node built-in, not a package). */
const OURS = '^(?!node_modules/)[^/]+/';

/** A target among our own files, minus the allowed ones. */
const oursExcept = (/** @type {string[]} */ ...allowed) => ({ path: OURS, pathNot: allowed, dependencyTypesNot: ['core'] });

/** Leaf modules a workflow may import at run time: pure, no I/O, safe in the workflow sandbox. */
const WORKFLOW_LEAVES = [
  '^core/vocabulary\\.ts$',
  '^core/search-attributes\\.ts$',
  '^core/workflow-contract\\.ts$',
  '^core/webhooks/schedule\\.ts$',
];

/** The doors into the service. Files in api/ that match none of these are shared by all doors. */
const DOORS = [
  { name: 'group-a', path: '^api/v1\\.ts$', says: "group A's door (api/v1.ts)" },
  { name: 'group-b', path: '^api/openai(/|[^/]*\\.ts$)', says: "group B's door (api/openai*.ts, api/openai/)" },
  { name: 'group-c', path: '^api/legacy\\.ts$', says: "group C's door (api/legacy.ts)" },
  { name: 'mcp', path: '^api/mcp/', says: 'the MCP door (api/mcp/)' },
  { name: 'dashboard', path: '^api/dashboard/', says: 'the dashboard door (api/dashboard/)' },
  { name: 'provider-webhooks', path: '^api/provider-webhooks\\.ts$', says: "the upstreams' webhook door (api/provider-webhooks.ts)" },
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
      comment: 'service/ stands on core/ only: it may import service/ and core/, never a door, an activity, a workflow or the runtime.',
      from: { path: '^service/' },
      to: oursExcept('^(service|core)/'),
    },
    {
      name: 'core-floor',
      severity: 'error',
      comment: 'core/ is the ground floor: it imports only core/. Whatever it needs from above is passed in.',
      from: { path: '^core/' },
      to: oursExcept('^core/'),
    },
    {
      name: 'activities-floor',
      severity: 'error',
      comment: 'activities/ stand on core/ only: they may import activities/ and core/, never service/, workflows/ or a door.',
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
    ...DOORS.map((door) => ({
      name: `door-${door.name}-imports-a-door`,
      severity: /** @type {const} */ ('error'),
      comment:
        `Doors never import each other: ${door.says} may import the shared api/ modules, service/ and core/, ` +
        'not another door. A rule two doors need moves into the shared api/ modules or the service.',
      from: { path: door.path },
      to: { path: DOORS.filter((other) => other !== door).map((other) => other.path) },
    })),
  ],
  options: {
    doNotFollow: { path: '(^|/)node_modules/' },
    exclude: { path: '(^|/)node_modules/' },
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
