import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { rolePoliciesOf } from '../../infra/local/iam/role-policies.ts';
import {
  DEPLOY_GUIDE,
  ROLE_POLICIES_FILE,
  rolePoliciesJson,
  stacksSection,
  synthesizeTemplates,
  withStacksSection,
} from '../../infra/scripts/write-iam-policies.ts';

/**
 * The policies the sandbox enforces (infra/local/iam/role-policies.json, docs/sandbox-iam.md) are
 * the synthesized ones: infra/app.ts run as `cdk synth` runs it, its templates read again here.
 * A grant changed in the stacks (a route's `needs`, a construct's) without `npm run iam:policies`
 * fails this test, as an API change without `npm run openapi` fails the OpenAPI test; so does a
 * stack, key or resource count the deploy guide's table (docs/deploy.md, written by the same
 * command) no longer states.
 */
describe('the sandbox IAM policies and the deploy guide', () => {
  it("are what the stacks synthesize, as is the deploy guide's stacks table (run `npm run iam:policies` after changing a grant or a stack)", async () => {
    const templates = await synthesizeTemplates();
    expect(
      rolePoliciesJson(rolePoliciesOf(templates)) === readFileSync(ROLE_POLICIES_FILE, 'utf8'),
      'infra/local/iam/role-policies.json differs from the stacks: run npm run iam:policies',
    ).toBe(true);
    const guide = readFileSync(DEPLOY_GUIDE, 'utf8');
    expect(
      withStacksSection(guide, stacksSection(templates)) === guide,
      "docs/deploy.md's stacks table differs from the stacks: run npm run iam:policies",
    ).toBe(true);
  }, 120_000);
});
