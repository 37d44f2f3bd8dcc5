// ESLint flat config: type-aware typescript-eslint rules for the TypeScript sources, plain
// JavaScript rules for the .mjs/.js tooling files. Run with `npm run lint` (`--max-warnings 0`).
import { createRequire } from 'node:module';
import js from '@eslint/js';
import { defineConfig } from 'eslint/config';
import tseslint from 'typescript-eslint';

const require = createRequire(import.meta.url);

/** eslint-plugin-react-hooks is used when installed; the config does not depend on it. */
function optionalReactHooks() {
  try {
    const plugin = require('eslint-plugin-react-hooks');
    return [
      {
        files: ['apps/portal/src/**/*.{ts,tsx}'],
        plugins: { 'react-hooks': plugin },
        rules: {
          'react-hooks/rules-of-hooks': 'error',
          'react-hooks/exhaustive-deps': 'error',
        },
      },
    ];
  } catch {
    return [];
  }
}

/** Globals of Node.js scripts and config files (the `globals` package is not a direct dependency). */
const nodeGlobals = Object.fromEntries(
  [
    'process',
    'console',
    'Buffer',
    'URL',
    'URLSearchParams',
    'setTimeout',
    'clearTimeout',
    'setInterval',
    'clearInterval',
    'setImmediate',
    'queueMicrotask',
    'structuredClone',
    'fetch',
    'AbortController',
    'TextEncoder',
    'TextDecoder',
    '__dirname',
    '__filename',
    'require',
    'module',
  ].map((name) => [name, 'readonly']),
);

// The benchmarks' workspace (bench/), which nothing else imports.
const benchImports = ['@tributary/bench', '@tributary/bench/*', '**/bench/src/**', '**/bench/dist/**'];

// One-way imports (STYLE.md): shared packages never reach into the apps or the benchmarks.
const noAppImports = {
  'no-restricted-imports': [
    'error',
    {
      patterns: [
        {
          group: [
            '@tributary/api',
            '@tributary/api/*',
            '@tributary/agent',
            '@tributary/agent/*',
            '@tributary/portal',
            '@tributary/portal/*',
          ],
          message: 'packages/* must not import apps/*: move the shared code into packages/shared.',
        },
        {
          group: ['**/apps/*', '**/apps/**'],
          message: 'packages/* must not import apps/*: move the shared code into packages/shared.',
        },
        {
          group: benchImports,
          message: 'packages/* must not import bench/: the benchmarks use the packages, not the other way.',
        },
      ],
    },
  ],
};

// Apps do not import each other: what two apps share lives in packages/* (the test harness in
// packages/testkit). Launching another app's build as a process (a path, not an import) is fine.
// Apps never import the benchmarks either.
function noOtherApps(self) {
  const others = ['api', 'agent', 'portal'].filter((app) => app !== self);
  return {
    'no-restricted-imports': [
      'error',
      {
        patterns: [
          {
            group: others.flatMap((app) => [`@tributary/${app}`, `@tributary/${app}/*`, `**/${app}/src/**`]),
            message: `apps/${self} must not import another app: move the shared code into packages/* (tests: packages/testkit).`,
          },
          {
            group: benchImports,
            message: `apps/${self} must not import bench/: what a benchmark and a test share goes to packages/* (packages/testkit).`,
          },
        ],
      },
    ],
  };
}

// The benchmarks use an app only through the entry it declares for embedding (its package.json
// "exports": `@tributary/api/embedding`, `@tributary/agent/embedding`), never its sources or build.
const benchAppEntries = {
  'no-restricted-imports': [
    'error',
    {
      patterns: [
        {
          regex: '^@tributary/(portal|(api|agent)(?!/embedding$))(/.*)?$',
          message:
            'bench/ uses an app only through its embedding entry (@tributary/api/embedding, @tributary/agent/embedding); add what it needs there.',
        },
        {
          group: ['**/apps/**'],
          message:
            'bench/ uses an app only through its embedding entry (@tributary/api/embedding, @tributary/agent/embedding); add what it needs there.',
        },
      ],
    },
  ],
};

export default defineConfig(
  {
    ignores: [
      '**/dist/**',
      '**/node_modules/**',
      '**/.data/**',
      '**/coverage/**',
      'apps/portal/dist/**',
      'packages/shared/src/api-types.ts',
      'test-results/**',
      'playwright-report/**',
    ],
  },
  {
    linterOptions: { reportUnusedDisableDirectives: 'error' },
  },

  // TypeScript: type-aware rules. The project service finds each file's nearest tsconfig.json.
  {
    files: ['**/*.{ts,tsx,mts,cts}'],
    extends: [js.configs.recommended, ...tseslint.configs.recommendedTypeChecked],
    languageOptions: {
      parserOptions: {
        projectService: true,
        tsconfigRootDir: import.meta.dirname,
      },
    },
    rules: {
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrorsIgnorePattern: '^_' },
      ],
    },
  },
  {
    files: ['packages/*/src/**/*.{ts,tsx}'],
    rules: noAppImports,
  },
  ...['api', 'agent', 'portal'].map((app) => ({
    files: [`apps/${app}/src/**/*.{ts,tsx}`],
    rules: noOtherApps(app),
  })),
  {
    files: ['bench/src/**/*.ts'],
    rules: benchAppEntries,
  },

  // Plain JavaScript: config files and scripts, no type information.
  {
    files: ['**/*.{js,mjs,cjs}'],
    extends: [js.configs.recommended],
    languageOptions: { ecmaVersion: 'latest', sourceType: 'module', globals: nodeGlobals },
    rules: {
      'no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrorsIgnorePattern: '^_' },
      ],
    },
  },
  {
    files: ['**/*.cjs'],
    languageOptions: { sourceType: 'commonjs' },
  },
  {
    files: ['packages/*/**/*.{js,mjs,cjs}'],
    rules: noAppImports,
  },

  ...optionalReactHooks(),
);
