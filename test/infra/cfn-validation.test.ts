import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { App, CfnResource, CloudFormationValidatePlugin, Stack, Validations } from 'aws-cdk-lib';
import { describe, expect, it } from 'vitest';
import { buildStacks } from './support/stacks.ts';

/**
 * CDK's built-in CloudFormation validation (`@aws/cloudformation-validate`: resource schemas and
 * CDK's default rules), which `cdk synth` and `cdk deploy` run on every synth. The infra project
 * turns it off for its other Apps (`CDK_VALIDATION=false`, vitest.config.ts: each test worker paid
 * about 4 CPU-s to start the engine and 0.35 s per synth, for the same verdict), so it runs here
 * once, registered explicitly, over the stacks as infra/app.ts wires them, and its findings, which
 * synth only prints as warnings, fail the test.
 */
interface ValidationReport {
  readonly pluginReports: readonly {
    readonly pluginName: string;
    readonly violations: readonly {
      readonly ruleName: string;
      readonly description: string;
      readonly violatingConstructs: readonly { readonly constructPath: string }[];
    }[];
  }[];
}

/** The findings of the validation over the App `build` makes, as `<rule> <construct path>: <description>` (the report leaves out a plugin that found nothing). */
function findings(build: (app: App) => void): string[] {
  const outdir = mkdtempSync(join(tmpdir(), 'cfn-validation-'));
  const app = new App({ outdir, context: { 'aws:cdk:bundling-stacks': [] } });
  Validations.of(app).addPlugins(new CloudFormationValidatePlugin());
  build(app);
  const assembly = app.synth();
  const report = JSON.parse(readFileSync(join(assembly.directory, 'validation-report.json'), 'utf8')) as ValidationReport;
  expect(report.pluginReports.every((entry) => entry.pluginName === CloudFormationValidatePlugin.PLUGIN_NAME)).toBe(true);
  return report.pluginReports.flatMap((entry) =>
    entry.violations.flatMap((violation) => violation.violatingConstructs.map((c) => `${violation.ruleName} ${c.constructPath}: ${violation.description}`)),
  );
}

/** A resource CloudFormation would refuse, in a stack of its own: the validation ran over the App when it is reported. */
function addCanary(app: App) {
  const stack = new Stack(app, 'Canary');
  new CfnResource(stack, 'Queue', { type: 'AWS::SQS::Queue', properties: { VisibilityTimeout: 'soon' } });
}

describe("CDK's CloudFormation validation", () => {
  it('finds nothing in the stacks as infra/app.ts wires them (only the canary beside them)', () => {
    expect(
      findings((app) => {
        buildStacks(app);
        addCanary(app);
      }),
    ).toEqual(["F3012 Canary/Queue: VisibilityTimeout: 'soon' is not of type 'integer'"]);
  });
});
