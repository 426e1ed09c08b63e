import { App, Stack, Validations } from 'aws-cdk-lib';
import { RestApi } from 'aws-cdk-lib/aws-apigateway';
import { PolicyStatement, Role, ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import { DefinitionBody, Pass, StateMachine } from 'aws-cdk-lib/aws-stepfunctions';
import { AwsSolutionsChecks } from 'cdk-nag';
import type { IConstruct } from 'constructs';
import { beforeAll, describe, expect, it } from 'vitest';
import type { ServiceStacks } from '../../infra/services-stack.ts';
import type { StatefulStack } from '../../infra/stateful-stack.ts';
import { buildStacks } from './support/stacks.ts';

/**
 * cdk-nag's AWS Solutions pack over every stack (stateful, and the service stacks: one per service,
 * transfers, API Gateway's logging role): any finding not acknowledged (with a reason, in
 * the construct that causes it) fails the test. cdk-nag 3 reads acknowledgements made with
 * CDK's `Validations.of(construct).acknowledge({ id, reason })` (v2's NagSuppressions is gone).
 * Asset bundling is skipped: the rules read the templates, not the function code.
 */
let stateful: StatefulStack;
let services: ServiceStacks;

beforeAll(() => {
  const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
  ({ stateful, services } = buildStacks(app));
}, 60_000);

function findings(stack: Stack) {
  return new AwsSolutionsChecks().validateScope(stack).violations.map((violation) => ({
    rule: violation.ruleName,
    resources: violation.violatingResources.map((resource) => resource.resourceLogicalId || resource.locations.join(',')),
    description: violation.description,
  }));
}

/** Every acknowledgement in the tree: rule id -> reasons. */
function acknowledgements(scope: IConstruct): Map<string, Set<string>> {
  const out = new Map<string, Set<string>>();
  for (const construct of scope.node.findAll()) {
    for (const entry of construct.node.metadata) {
      if (entry.type !== Validations.ACKNOWLEDGED_RULES_METADATA_KEY) continue;
      for (const [id, reason] of Object.entries(entry.data as Record<string, string>)) {
        const rule = id.replace(/^Annotation::/, '');
        out.set(rule, (out.get(rule) ?? new Set()).add(reason));
      }
    }
  }
  return out;
}

describe('cdk-nag AwsSolutions', () => {
  it('finds nothing unacknowledged in the stateful stack', () => {
    expect(findings(stateful)).toEqual([]);
  });

  it('finds nothing unacknowledged in any service stack', () => {
    expect(services.stacks.map((stack) => stack.stackName)).toEqual(['ApiGatewayLogging', 'Enclave', 'Transfers', 'Events', 'Account', 'Express']);
    for (const stack of services.stacks) expect(findings(stack), stack.stackName).toEqual([]);
  });

  it('acknowledges only these rules, each with a written reason', () => {
    // One reason per rule across all stacks (a rule acknowledged in several stacks says the same).
    const acknowledged = new Map<string, Set<string>>();
    for (const stack of [stateful, ...services.stacks]) {
      for (const [rule, reasons] of acknowledgements(stack)) acknowledged.set(rule, new Set([...(acknowledged.get(rule) ?? []), ...reasons]));
    }
    expect([...acknowledged.keys()].sort()).toEqual([
      'AwsSolutions-APIG2',
      'AwsSolutions-APIG3',
      'AwsSolutions-APIG4',
      'AwsSolutions-COG4',
      'AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AmazonAPIGatewayPushToCloudWatchLogs]',
      'AwsSolutions-IAM5[Resource::*]',
      // The transfer routes' states:DescribeExecution on the machine's executions (`execution:<machine>:*`).
      'AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:states:<AWS::Region>:<AWS::AccountId>:execution:<TransfersMachine1148AE62.Name>:*]',
      'AwsSolutions-SMG4',
    ]);
    for (const [rule, reasons] of acknowledged) {
      expect(reasons.size, rule).toBe(1);
      for (const reason of reasons) expect(reason.length, rule).toBeGreaterThan(80);
    }
  });

  it('needs no WAF acknowledgement once a web ACL is associated with each stage', () => {
    const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
    const webAclArn = 'arn:aws:wafv2:eu-west-1:123456789012:regional/webacl/perp-wallet/0a1b2c3d-1111-2222-3333-444455556666';
    const { services: withWaf } = buildStacks(app, { prefix: 'Waf', services: { webAclArn } });
    for (const stack of withWaf.stacks) {
      expect(findings(stack), stack.stackName).toEqual([]);
      expect(acknowledgements(stack).has('AwsSolutions-APIG3'), stack.stackName).toBe(false);
    }
  });

  it('does report what it is meant to catch (the check is not vacuous)', () => {
    const stack = new Stack(new App(), 'Careless');
    new RestApi(stack, 'Api').root.addMethod('GET');
    new Role(stack, 'Role', { assumedBy: new ServicePrincipal('lambda.amazonaws.com') }).addToPrincipalPolicy(
      new PolicyStatement({ actions: ['kms:Decrypt'], resources: ['*'] }),
    );
    // A state machine without logging or tracing (the transfer machine has both: infra/constructs/transfer-machine.ts).
    new StateMachine(stack, 'Machine', { definitionBody: DefinitionBody.fromChainable(new Pass(stack, 'Nothing')) });
    const rules = findings(stack).map((finding) => finding.rule);
    expect(rules).toEqual(expect.arrayContaining(['AwsSolutions-SF1', 'AwsSolutions-SF2']));
    expect(rules).toEqual(
      expect.arrayContaining([
        'AwsSolutions-APIG1',
        'AwsSolutions-APIG2',
        'AwsSolutions-APIG3',
        'AwsSolutions-APIG4',
        'AwsSolutions-APIG6',
        'AwsSolutions-COG4',
        'AwsSolutions-IAM5[Resource::*]',
      ]),
    );
  });
});
