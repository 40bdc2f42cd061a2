// @ts-check
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

// Workflows are replayed, so they must be deterministic; machines are pure. Neither may reach
// Node built-ins, the database, the network or the clock directly.
const ioModules = [
  'node:*',
  'fs',
  'fs/*',
  'path',
  'os',
  'http',
  'https',
  'net',
  'crypto',
  'child_process',
  'pg',
  'fastify',
  'sharp',
  '@temporalio/client',
  '@temporalio/worker',
  '@temporalio/activity',
  '**/activities',
  '**/activities/**',
  '**/api/**',
  '**/runtime/**',
  '**/core/db/**',
  '**/core/storage/**',
  '**/core/providers/**',
];

export default tseslint.config(
  { ignores: ['node_modules', '.data', '.cache', '.test-data', 'dist', 'coverage', 'bin'] },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/consistent-type-imports': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/restrict-template-expressions': ['error', { allowNumber: true }],
      // Fastify plugins and handlers are async by convention even when they await nothing.
      '@typescript-eslint/require-await': 'off',
    },
  },
  { files: ['**/*.js', '**/*.mjs', '**/*.cjs'], ...tseslint.configs.disableTypeChecked },
  // Tool configs that must be CommonJS (dependency-cruiser's).
  {
    files: ['**/*.cjs'],
    languageOptions: { sourceType: 'commonjs', globals: { module: 'writable', require: 'readonly' } },
  },
  // Examples are plain Node scripts for people to copy.
  {
    files: ['examples/**/*.mjs'],
    languageOptions: { globals: { process: 'readonly', console: 'readonly', Buffer: 'readonly' } },
  },
  // The dashboard's front end runs in browsers (ES modules served as they are).
  {
    files: ['api/dashboard/public/**/*.js'],
    languageOptions: {
      sourceType: 'module',
      globals: Object.fromEntries(
        [
          'window',
          'document',
          'location',
          'history',
          'navigator',
          'fetch',
          'EventSource',
          'FormData',
          'URLSearchParams',
          'Intl',
          'confirm',
          'setTimeout',
          'clearTimeout',
          'setInterval',
          'clearInterval',
          'console',
        ].map((name) => [name, 'readonly']),
      ),
    },
  },
  {
    files: ['workflows/**/*.ts', 'machines/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              group: ioModules,
              message: 'workflows/ and machines/ stay free of I/O; use an activity.',
              allowTypeImports: true,
            },
          ],
        },
      ],
      'no-restricted-globals': [
        'error',
        { name: 'setTimeout', message: 'Use sleep() from @temporalio/workflow.' },
        { name: 'setInterval', message: 'Use sleep() from @temporalio/workflow.' },
        { name: 'process', message: 'No environment in workflows or machines.' },
        { name: 'fetch', message: 'No network in workflows or machines.' },
      ],
      'no-restricted-properties': [
        'error',
        { object: 'Date', property: 'now', message: 'Time comes from the workflow (deterministic) or the event.' },
        { object: 'Math', property: 'random', message: 'Randomness is not deterministic.' },
      ],
    },
  },
  {
    files: ['test/**/*.ts', 'bench/**/*.ts', 'faults/**/*.ts'],
    rules: {
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-non-null-assertion': 'off',
    },
  },
);
