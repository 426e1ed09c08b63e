import { mkdir, rm } from 'node:fs/promises';
import type { TestProject } from 'vitest/node';

/**
 * The CDK template tests' temporary directory (the project's TMPDIR, vitest.config.ts): each `App`
 * without an `outdir` synthesises into a `cdk.out*` directory of its own under `os.tmpdir()`, and
 * the cold-start test builds its bundles there. Each App keeps its own directory (two Apps with the
 * same stack names never share one); all of them go at the end of the run, instead of about 27
 * `cdk.out*` directories left in /tmp by every run.
 */
export default async function setup(project: TestProject) {
  const dir = project.config.env?.TMPDIR;
  if (!dir) throw new Error('the infra project runs with its own TMPDIR (vitest.config.ts)');
  await rm(dir, { recursive: true, force: true });
  await mkdir(dir, { recursive: true, mode: 0o700 });
  return () => rm(dir, { recursive: true, force: true });
}
