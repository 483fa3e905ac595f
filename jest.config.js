// Nest 12 and nats.js 3 ship ESM only; SWC turns them into CommonJS for Jest.
const swc = [
  '@swc/jest',
  {
    jsc: {
      parser: { syntax: 'typescript', decorators: true },
      transform: { legacyDecorator: true, decoratorMetadata: true },
      keepClassNames: true,
      target: 'es2022',
    },
    module: { type: 'commonjs' },
    sourceMaps: 'inline',
  },
];
const shared = {
  testEnvironment: 'node',
  transform: { '^.+\\.(t|j|mj)s$': swc },
  transformIgnorePatterns: ['/node_modules/(?!(@nestjs|@nats-io|file-type|load-esm)/)'],
  moduleNameMapper: {
    '^@steerline/contracts$': '<rootDir>/libs/contracts/src/index.ts',
    '^@steerline/runtime$': '<rootDir>/libs/runtime/src/index.ts',
    '^@steerline/runtime/nest$': '<rootDir>/libs/runtime/src/nest/index.ts',
    '^@steerline/client$': '<rootDir>/libs/client/src/index.ts',
  },
  moduleFileExtensions: ['ts', 'js', 'mjs', 'json'],
};
module.exports = {
  // NATS and PostgreSQL for every suite: the ones that answer, else servers of the run's own.
  globalSetup: '<rootDir>/test/support/global-setup.mjs',
  globalTeardown: '<rootDir>/test/support/global-teardown.mjs',
  projects: [
    { ...shared, displayName: 'unit', testMatch: ['<rootDir>/{apps,libs,scripts}/**/*.spec.ts'] },
    { ...shared, displayName: 'e2e', testMatch: ['<rootDir>/test/{e2e,contract}/**/*.spec.ts'], setupFilesAfterEnv: ['<rootDir>/test/support/timeouts.e2e.ts'] },
    // Real processes started, killed and restarted: `npm run test:faults`.
    { ...shared, displayName: 'faults', testMatch: ['<rootDir>/test/faults/**/*.spec.ts'], setupFilesAfterEnv: ['<rootDir>/test/support/timeouts.faults.ts'] },
  ],
};
