import { RemovalPolicy, Stack, type StackProps, Validations } from 'aws-cdk-lib';
import { CfnAccount } from 'aws-cdk-lib/aws-apigateway';
import { ManagedPolicy, Role, ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import type { Construct } from 'constructs';

/**
 * API Gateway's account-level CloudWatch Logs setting (AWS::ApiGateway::Account: one per account
 * and region), which REST API access and execution logging needs before any stage can deploy. A
 * region-wide setting, not one service's: its own stack, which the three API stacks depend on
 * (each stage waits for `apiGatewayAccount`). Left out with `-c apiGatewayCloudWatchRole=false`
 * (docs/deploy.md).
 */
export class ApiGatewayLoggingStack extends Stack {
  readonly apiGatewayAccount: CfnAccount;
  readonly role: Role;

  constructor(scope: Construct, id: string, props: StackProps = {}) {
    super(scope, id, props);
    // Retained on delete: the setting outlives the stack (CloudFormation cannot unset it), and
    // other APIs of the region may log through this role.
    this.role = new Role(this, 'ApiGatewayCloudWatchRole', {
      assumedBy: new ServicePrincipal('apigateway.amazonaws.com'),
      description: 'API Gateway: push REST API logs to CloudWatch Logs (account setting for this region)',
      managedPolicies: [ManagedPolicy.fromAwsManagedPolicyName('service-role/AmazonAPIGatewayPushToCloudWatchLogs')],
    });
    this.role.applyRemovalPolicy(RemovalPolicy.RETAIN);
    Validations.of(this.role).acknowledge({
      id: 'AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AmazonAPIGatewayPushToCloudWatchLogs]',
      reason:
        "The policy AWS documents for API Gateway's account-level logging role. The role serves every REST API of the account and region, and API Gateway creates the execution log groups itself (API-Gateway-Execution-Logs_<api-id>/<stage>), so it cannot be narrowed to this stack's log groups.",
    });
    this.apiGatewayAccount = new CfnAccount(this, 'ApiGatewayAccount', { cloudWatchRoleArn: this.role.roleArn });
  }
}
