import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { defineConfig } from 'vitest/config';
import LongestFirstSequencer from './test/support/sequencer.ts';

/**
 * One test command, six projects: unit tests (three: shared modules, isolated, the conservation run), CDK template assertions, and the black-box API
 * tests twice — against the embedded dynalite and against DynamoDB Local, so a dynalite quirk
 * cannot hide a real-DynamoDB bug.
 */
const apiTests = ['test/api/**/*.test.ts'];

/**
 * Unit files that set process.env before importing what reads it, mock AWS clients, or assert on
 * the Powertools logger and metrics singletons (configured once per module instance): each gets
 * fresh modules. The other unit files share their worker's modules (`isolate: false`): measured
 * on the 2-core machine, the unit project then takes 61 s of CPU instead of 88 s (no re-import of
 * viem, the AWS SDK and the sandbox per file).
 */
const isolatedUnitTests = [
  'api-gateway',
  'composition-roots',
  'error-handler',
  'kms-key-wrapper',
  'kms-op-jwt-signer',
  'logger',
  'metrics',
  'rpc-urls',
  // Starts a local runtime, which sets the handlers' environment in process.env.
  'sandbox-iam-runtime',
  'transfer-crash',
  'transfer-executor',
  'transfer-step-handlers',
].map((name) => `test/unit/${name}.test.ts`);
const unitSetup = ['test/support/aws-matchers.ts'];
/** The 200-transfer conservation run: a project of its own, so that it runs in another group than the isolated unit files (below). */
const CONSERVATION_TEST = 'test/unit/transfer-conservation.test.ts';

/**
 * Node's on-disk compile cache for every process the run starts (the forks, the API runtimes, the
 * CLIs, each `node` a test spawns): each loads the same node_modules (viem, the AWS SDK, Solana),
 * so all but the first read V8's compiled code instead of compiling it again. Measured: a runtime
 * boot 1.7 → 1.4 CPU-s. A later run reuses it; Node checks each entry against the source it read.
 */
process.env.NODE_COMPILE_CACHE ??= join(tmpdir(), 'perp-wallet-node-compile-cache');

/** The CDK template tests' TMPDIR (their `cdk.out*` directories and bundles), removed at the end of the run: test/infra/support/global-setup.ts. */
const infraTmpDir = join(tmpdir(), `perp-wallet-infra-${process.pid}`);

export default defineConfig({
  test: {
    // Files side by side, in three groups one after another (`sequence.groupOrder`), each with its
    // own number of workers (vitest's default is cores − 1: one here):
    //   0. `unit` and `unit-isolated`, 4 at a time: their sandbox files and the kill -9 test mostly
    //      wait (anvil, pollers, deadlines, leases), beside tsc and the API runtimes' start;
    //   1. `conservation`, `infra` and `api`, 2 at a time: the conservation run and the CDK
    //      templates first, then the API files (whose runtime does the work);
    //   2. `api-dynamodb-local`, 3 at a time: each request waits on the JVM's answers.
    // Measured on the 2-core machine: three workers for everything kept both cores busy (about 30
    // idle core-seconds per run) but made the run's CPU about 0.28 CPU-s per ms of the calibration
    // loop (README, "Test it"); two for everything 0.25, with 94 idle core-seconds (the unit files
    // waiting together at the end); groups 0.23-0.24 with about 50.
    maxWorkers: 2,
    // Longest files first across projects (a clean clone has no durations cached): test/support/sequencer.ts.
    sequence: { sequencer: LongestFirstSequencer },
    reporters: ['default', './test/support/summary-reporter.ts'],
    projects: [
      // Files run side by side on 2 cores: a sandbox test's 5 s default can lapse under load, not because it is wrong.
      {
        test: {
          name: 'unit',
          // Group 0, see maxWorkers above.
          maxWorkers: 4,
          sequence: { groupOrder: 0 },
          include: ['test/unit/**/*.test.ts'],
          exclude: [...isolatedUnitTests, CONSERVATION_TEST],
          isolate: false,
          setupFiles: unitSetup,
          // One DynamoDB Local for the files that check both engines (test/unit/support/dynamodb-engines.ts).
          globalSetup: ['test/unit/support/global-setup.ts'],
          testTimeout: 20_000,
        },
      },
      // Group 0 beside `unit`: the kill -9 test mostly waits on its killed process's leases.
      { test: { name: 'unit-isolated', maxWorkers: 4, sequence: { groupOrder: 0 }, include: isolatedUnitTests, setupFiles: unitSetup, testTimeout: 20_000 } },
      // The 200-transfer conservation run (fresh modules, as the isolated files): group 1, beside the API files.
      { test: { name: 'conservation', sequence: { groupOrder: 1 }, include: [CONSERVATION_TEST], setupFiles: unitSetup, testTimeout: 20_000 } },
      // Shared modules: each file would import aws-cdk-lib again (measured: 48.5 -> 43.2 CPU-s).
      {
        test: {
          name: 'infra',
          sequence: { groupOrder: 1 },
          include: ['test/infra/**/*.test.ts'],
          isolate: false,
          // CDK_VALIDATION: CDK's built-in CloudFormation validation runs once, in test/infra/cfn-validation.test.ts
          // (each worker paid about 4 CPU-s to start its engine, and 0.35 s per synth, for the same verdict).
          env: { TMPDIR: infraTmpDir, CDK_VALIDATION: 'false' },
          globalSetup: ['test/infra/support/global-setup.ts'],
          testTimeout: 120_000,
          hookTimeout: 240_000,
        },
      },
      {
        test: {
          name: 'api',
          sequence: { groupOrder: 1 },
          include: apiTests,
          globalSetup: ['test/api/support/global-setup.ts'],
          // Black-box files: they share nothing but the runtime, so they share their worker's modules too (issue 20: api 158 -> 141 CPU-s).
          isolate: false,
          env: { TEST_DYNAMODB: 'dynalite' },
          testTimeout: 30_000,
          hookTimeout: 60_000,
        },
      },
      {
        test: {
          name: 'api-dynamodb-local',
          // Group 2, see maxWorkers above.
          maxWorkers: 3,
          sequence: { groupOrder: 2 },
          include: apiTests,
          globalSetup: ['test/api/support/global-setup.ts'],
          isolate: false,
          env: { TEST_DYNAMODB: 'dynamodb-local' },
          testTimeout: 30_000,
          hookTimeout: 60_000,
        },
      },
      // `npm run test:deployed`: the same API tests against a deployed stack (AWS or LocalStack).
      ...(process.env.API_TEST_TARGET === 'deployed'
        ? [
            {
              test: {
                name: 'api-deployed',
                sequence: { groupOrder: 1 },
                include: apiTests,
                globalSetup: ['test/api/support/global-setup.ts'],
                env: { TEST_DYNAMODB: 'deployed' },
                testTimeout: 120_000,
                hookTimeout: 180_000,
              },
            },
          ]
        : []),
    ],
  },
});
