import { relative } from 'node:path';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

/**
 * Longest files first, then the rest grouped by project. Vitest's own order runs the projects one
 * after another by name (api, api-dynamodb-local, infra, unit), so on a clean clone (no results
 * cache, as in CI) the 90 s conservation run started about three minutes in and ran alone at the
 * end on an idle core. Here every file gets an expected duration: the cached one when vitest has
 * it, else the measured one below, else less than a second, keeping vitest's order among those.
 *
 * - The files expected to take LONG_FILE_SECONDS or more start first, longest first (the
 *   longest-processing-time rule for filling `maxWorkers` workers).
 * - Then the other files, one project after another (PROJECT_ORDER), longest first within each,
 *   except that the files of SPREAD_FILE_SECONDS or more are spread over the first half. Vitest keeps a worker of an `isolate: false` project only while the next queued file is of
 *   that same project; it stops the worker and forks a new one otherwise. Files of all projects
 *   interleaved by duration forked a worker for nearly every file
 *   (96 forks in one run, each importing vitest, viem and the AWS SDK again); grouped, a worker
 *   runs file after file of its project.
 *
 * SLOW_FILES: seconds measured on the 2-core machine with three workers in one whole run (README,
 * "Test it"; the longer of the two API projects), so that a clean clone orders as a cached run does.
 * A stale number only changes the order, never what runs.
 */
const SLOW_FILES: Readonly<Record<string, number>> = {
  'test/unit/transfer-conservation.test.ts': 135,
  'test/unit/transfer-crash.test.ts': 40,
  'test/infra/stacks.test.ts': 27,
  'test/api/fuzz.test.ts': 24,
  'test/api/local-runtime.test.ts': 19,
  'test/api/transfers-flow.test.ts': 18,
  'test/api/sponsor-setup.test.ts': 17,
  'test/unit/transfer-steps.test.ts': 16,
  'test/api/sandbox-cli.test.ts': 16,
  'test/api/prototype-keys.test.ts': 16,
  'test/api/demo.test.ts': 15,
  'test/api/withdraw.test.ts': 14,
  'test/unit/exactly-once-sender.test.ts': 14,
  'test/api/enclave-v1.test.ts': 13,
  'test/api/docs-page.test.ts': 11,
  'test/unit/sandbox-venue-c.test.ts': 10,
  'test/unit/sandbox-bridge.test.ts': 9,
  'test/unit/transfer-step-handlers.test.ts': 9,
  'test/infra/transfer-machine.test.ts': 8,
  'test/infra/fences.test.ts': 8,
  'test/api/runtime-ports.test.ts': 7,
  'test/unit/evm-replacement.test.ts': 7,
  'test/api/start-errors.test.ts': 6,
  'test/unit/transfer-machine.test.ts': 6,
  'test/api/transfers-api.test.ts': 5,
  'test/unit/solana-expiry.test.ts': 5,
  'test/api/venue-onboarding.test.ts': 5,
};

/**
 * Files expected to take this long (s) or more start before the grouped rest: the conservation run
 * (it mostly waits, beside the CDK templates and then the API files, whose runtime does the work).
 * Not the kill -9 test (about 35 s, mostly waiting on leases): it starts first in its project's
 * turn, in the group of the unit files that wait (vitest.config.ts). Started beside the
 * conservation run, the two left a core about half idle for 35 s.
 */
const LONG_FILE_SECONDS = 60;

/**
 * The projects' order after those files (others follow, the most expected time first); vitest runs
 * the groups of vitest.config.ts (`sequence.groupOrder`) one after another whatever this order, so
 * it orders the projects within a group. Group 0: the isolated unit files (the kill -9 test first),
 * then the other unit files. Group 1: the conservation run (also when a cached duration under
 * LONG_FILE_SECONDS keeps it out of the files that start first), the CDK templates (CPU all the
 * way: beside it), then the API files. api-dynamodb-local is a group of its own, last.
 */
const PROJECT_ORDER = ['unit-isolated', 'unit', 'conservation', 'infra', 'api', 'api-dynamodb-local'];

/**
 * Within a project, the files expected to take this long (s) or more are spread evenly among the
 * first half of the shorter ones (longest first each) instead of all starting together: the unit
 * project's long files mostly wait on their sandboxes (anvil, pollers, deadlines), and together
 * they left both cores about half idle for 12 s.
 */
const SPREAD_FILE_SECONDS = 5;

export default class LongestFirstSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const cache = this.ctx.cache;
    const ordered = await super.sort(files); // failed-first and the size fallback, as vitest does
    const expected = (spec: TestSpecification, fallback: number) => {
      const cached = cache.getTestSpecificationResult(spec);
      if (cached && !cached.failed) return cached.duration / 1000;
      return SLOW_FILES[relative(this.ctx.config.root, spec.moduleId)] ?? fallback;
    };
    // A failed file still runs first, as vitest does (its result is the one the developer waits for).
    const failed = (spec: TestSpecification) => cache.getTestSpecificationResult(spec)?.failed === true;
    const weights = new Map(ordered.map((spec, index) => [spec, expected(spec, (ordered.length - index) / ordered.length)]));
    const longestFirst = (a: TestSpecification, b: TestSpecification) => weights.get(b)! - weights.get(a)!;
    const first = ordered.filter((spec) => failed(spec) || weights.get(spec)! >= LONG_FILE_SECONDS);
    first.sort((a, b) => Number(failed(b)) - Number(failed(a)) || longestFirst(a, b));
    const byProject = new Map<string, TestSpecification[]>();
    for (const spec of ordered) {
      if (first.includes(spec)) continue;
      const name = spec.project.name;
      byProject.set(name, [...(byProject.get(name) ?? []), spec]);
    }
    const total = (specs: TestSpecification[]) => specs.reduce((sum, spec) => sum + weights.get(spec)!, 0);
    const rank = (specs: TestSpecification[]) => {
      const at = PROJECT_ORDER.indexOf(specs[0]!.project.name);
      return at < 0 ? PROJECT_ORDER.length : at;
    };
    const groups = [...byProject.values()].sort((a, b) => rank(a) - rank(b) || total(b) - total(a));
    const spread = (specs: TestSpecification[]) => {
      const sorted = specs.sort(longestFirst);
      const long = sorted.filter((spec) => weights.get(spec)! >= SPREAD_FILE_SECONDS);
      const short = sorted.filter((spec) => weights.get(spec)! < SPREAD_FILE_SECONDS);
      // Long file i goes before short file ⌊i·|short|/(2·|long|)⌋: evenly apart over the first half
      // of the short files, so that the project ends on short files only.
      const before = (i: number) => Math.floor((i * short.length) / (2 * long.length));
      if (short.length === 0) return long;
      return short.flatMap((spec, index) => [...long.filter((_, i) => before(i) === index), spec]);
    };
    return [...first, ...groups.flatMap(spread)];
  }
}
