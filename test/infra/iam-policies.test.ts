import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ROLE_POLICIES_FILE, rolePoliciesJson, synthesizeRolePolicies } from '../../infra/scripts/write-iam-policies.ts';

/**
 * The policies the sandbox enforces (infra/local/iam/role-policies.json, docs/sandbox-iam.md) are
 * the synthesized ones: infra/app.ts run as `cdk synth` runs it, its templates read again here.
 * A grant changed in the stacks (a route's `needs`, a construct's) without `npm run iam:policies`
 * fails this test, as an API change without `npm run openapi` fails the OpenAPI test.
 */
describe('the sandbox IAM policies', () => {
  it('are what the stacks synthesize (run `npm run iam:policies` after changing a grant)', async () => {
    const synthesized = rolePoliciesJson(await synthesizeRolePolicies());
    expect(
      synthesized === readFileSync(ROLE_POLICIES_FILE, 'utf8'),
      'infra/local/iam/role-policies.json differs from the stacks: run npm run iam:policies',
    ).toBe(true);
  }, 120_000);
});
