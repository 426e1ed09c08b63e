import { execFile } from 'node:child_process';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { type RolePolicies, rolePoliciesOf, type Template } from '../local/iam/role-policies.ts';

/**
 * `npm run iam:policies`: synthesizes the stacks exactly as `cdk synth` does (infra/app.ts with
 * cdk.json's context), without bundling the functions (`aws:cdk:bundling-stacks`: the IAM is the
 * same), reads the templates it wrote and writes the roles' and keys' policies the sandbox
 * enforces to infra/local/iam/role-policies.json (docs/sandbox-iam.md). A test fails when the
 * committed file differs from the stacks (test/infra/iam-policies.test.ts).
 */
const ROOT = resolve(import.meta.dirname, '../..');
export const ROLE_POLICIES_FILE = join(ROOT, 'infra/local/iam/role-policies.json');

export async function synthesizeRolePolicies(): Promise<RolePolicies> {
  const outdir = await mkdtemp(join(tmpdir(), 'iam-policies-'));
  try {
    const cdkJson = JSON.parse(await readFile(join(ROOT, 'cdk.json'), 'utf8')) as { context?: Record<string, unknown> };
    const context = { ...cdkJson.context, 'aws:cdk:bundling-stacks': [] };
    await promisify(execFile)(process.execPath, [join(ROOT, 'infra/app.ts')], {
      cwd: ROOT,
      env: { ...process.env, CDK_OUTDIR: outdir, CDK_CONTEXT_JSON: JSON.stringify(context) },
      maxBuffer: 16 * 1024 * 1024,
    });
    const templates: Record<string, Template> = {};
    for (const file of (await readdir(outdir)).filter((name) => name.endsWith('.template.json')).sort())
      templates[file.slice(0, -'.template.json'.length)] = JSON.parse(await readFile(join(outdir, file), 'utf8'));
    return rolePoliciesOf(templates);
  } finally {
    await rm(outdir, { recursive: true, force: true });
  }
}

export function rolePoliciesJson(policies: RolePolicies): string {
  return `${JSON.stringify(policies, null, 2)}\n`;
}

if (import.meta.main) {
  const policies = await synthesizeRolePolicies();
  await writeFile(ROLE_POLICIES_FILE, rolePoliciesJson(policies));
  console.info(`wrote ${ROLE_POLICIES_FILE}: ${Object.keys(policies.functions).length} function roles, ${Object.keys(policies.keys).length} key policies`);
}
