import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { type CfnElement, Duration, RemovalPolicy, Stack, Validations } from 'aws-cdk-lib';
import type { ITable } from 'aws-cdk-lib/aws-dynamodb';
import { type IRole, PolicyStatement, Role, ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import type { IKey } from 'aws-cdk-lib/aws-kms';
import { Architecture, Runtime, Tracing } from 'aws-cdk-lib/aws-lambda';
import { NodejsFunction } from 'aws-cdk-lib/aws-lambda-nodejs';
import { LogGroup, RetentionDays } from 'aws-cdk-lib/aws-logs';
import type { ISecret } from 'aws-cdk-lib/aws-secretsmanager';
import type { IQueue } from 'aws-cdk-lib/aws-sqs';
import type { IStateMachine } from 'aws-cdk-lib/aws-stepfunctions';
import { Construct } from 'constructs';
import type { DeliveryQueueOperation, RouteNeeds, ServiceName, SigningKeyOperation, WrappingKeyOperation } from '../../functions/routes.ts';
import { partitionPatterns, type TableNeeds } from '../../shared/db/partitions.ts';
import { API_FUNCTION_TIMEOUT_SECONDS } from '../api-resources.ts';
import { LAMBDA_BUNDLING } from '../bundling.ts';
import { functionRolePath, type KeyOperation, type KeyPurpose, keyUseConditions } from './key-use.ts';

/** Repository root: handler entries, package-lock.json and node_modules are resolved from here. */
export const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));

/**
 * Item actions on the table: the read statement's and the write statement's (bindTable), each with
 * its own partitions. Not grantReadWriteData: that adds Scan (listing is a Query, STYLE.md),
 * DescribeTable and stream reads we do not use. Transactions are authorised per item by these same actions.
 */
export const TABLE_ACTIONS = {
  read: ['dynamodb:GetItem', 'dynamodb:BatchGetItem', 'dynamodb:Query'],
  write: ['dynamodb:PutItem', 'dynamodb:UpdateItem', 'dynamodb:DeleteItem', 'dynamodb:BatchWriteItem', 'dynamodb:ConditionCheckItem'],
} as const;

/**
 * The condition that fences item actions to partitions (IAM, DynamoDB fine-grained access control):
 * every partition key the request names (`dynamodb:LeadingKeys`, one per item of a batch) must
 * match one of `patterns`, and the key must be present (ForAllValues alone is true of an empty set).
 */
export function leadingKeysCondition(patterns: readonly string[]): Record<string, Record<string, unknown>> {
  return { 'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': [...patterns] }, Null: { 'dynamodb:LeadingKeys': 'false' } };
}

/** Everything a route's `needs` may refer to (stateful resources and the service stacks' own values). */
export interface NeedsResources {
  readonly table: ITable;
  readonly enclaveKey: IKey;
  readonly accountKey: IKey;
  readonly opJwtKey: IKey;
  /** Signs the gas sponsor's tokens (the platform application trusts this key only). */
  readonly sponsorKey: IKey;
  /** Base URL of the enclave API's stage (TEE_URL), e.g. `https://<id>.execute-api.<region>.amazonaws.com/prod`. */
  readonly enclaveUrl: string;
  /** Public chain data: CHAINS_CONFIG without any rpc_url. */
  readonly publicChainsConfig: string;
  /** The Secrets Manager secret holding `{ "ETH": rpcUrl, … }` (stateful stack). */
  readonly rpcUrlsSecret: ISecret;
  /** Comma-separated ALLOWED_7702_DELEGATES. */
  readonly delegates: string;
  /** VENUE_URLS: JSON of venue id to the venue API's base URL (`{}`: no venue configured). */
  readonly venueUrls: string;
  /** BRIDGE_URL: the bridge API's base URL (the services stack defaults it to LI.FI's). Absent: BRIDGE_URL is not set and the transfer routes answer 503. */
  readonly bridgeUrl?: string;
  /** PLATFORM_FEE: JSON (shared/transfers/platform-fee.ts). Absent: not set, no fee. */
  readonly platformFee?: string;
  /** SPONSOR_POOL_SIZE for the functions that sponsor gas (needs `sponsorKey`). Absent: not set, the functions' default. */
  readonly sponsorPoolSize?: string;
  /** The transfer state machine and TRANSFER_STEP_FUNCTIONS; absent while the step functions themselves are built. */
  readonly transfers?: TransferResources;
  /** The webhook delivery queue (infra/events-stack.ts); absent where no events stack is built. */
  readonly deliveryQueue?: IQueue;
}

/** What the `transfers` need binds (infra/constructs/transfer-machine.ts). */
export interface TransferResources {
  readonly stateMachine: IStateMachine;
  /** `arn:…:execution:<machine name>:*`: DescribeExecution is granted on this only. */
  readonly executionsArn: string;
  /** TRANSFER_STEP_FUNCTIONS: JSON `{ withdrawal, bridge, deposit, settle }` of function ARNs. */
  readonly stepFunctionArns: string;
}

/**
 * The reason for the one Resource "*" acknowledgement (cdk-nag AwsSolutions-IAM5), shared by every
 * role that has such a statement so the reasons stay one text.
 */
export const STAR_RESOURCE_REASON =
  'Only for actions that support no resource-level permissions, so Resource must be "*": X-Ray PutTraceSegments and PutTelemetryRecords (Tracing.ACTIVE on every function; the transfer state machine\'s tracing adds GetSamplingRules and GetSamplingTargets) and, on the transfer state machine\'s role only, the CloudWatch Logs log-delivery actions Step Functions logging requires (CreateLogDelivery, GetLogDelivery, UpdateLogDelivery, DeleteLogDelivery, ListLogDeliveries, PutResourcePolicy, DescribeResourcePolicies, DescribeLogGroups). These are the only "*" statements (asserted in test/infra).';

/** Ends before the REST API's 29 s integration timeout (infra/api-resources.ts says why 27 s). */
export const API_FUNCTION_TIMEOUT = Duration.seconds(API_FUNCTION_TIMEOUT_SECONDS);

export interface ServiceFunctionProps {
  /** Handler module relative to the repository root (exports `handler`), as in functions/routes.ts. */
  readonly entry: string;
  /** POWERTOOLS_SERVICE_NAME: the service the route belongs to. */
  readonly service: ServiceName;
  readonly description?: string;
  /** @default 512 */
  readonly memorySize?: number;
  /** @default API_FUNCTION_TIMEOUT (27 s) */
  readonly timeout?: Duration;
  readonly environment?: Readonly<Record<string, string>>;
  /**
   * The role's IAM path (key-use.ts functionRolePath): the key policies name roles by it. A
   * function that uses a key must have one (bindNeeds checks). @default '/'
   */
  readonly rolePath?: string;
}

/** CloudWatch namespace of the functions' EMF metrics (Powertools Metrics). */
export const METRICS_NAMESPACE = 'PerpWallet';

/**
 * The one way we make a Lambda: Node 24 on arm64, one bundle (CommonJS output, infra/bundling.ts) with source maps, X-Ray tracing,
 * a log group kept for a month, the Powertools environment. Access is added only through
 * `bindNeeds` (a route's `needs`, functions/routes.ts) and the `bind…` helpers it calls, each of
 * which sets the env var shared/config.ts reads and grants exactly the actions listed.
 */
export class ServiceFunction extends Construct {
  readonly lambda: NodejsFunction;
  readonly logGroup: LogGroup;
  readonly role: IRole;
  /** The role's IAM path. */
  readonly rolePath: string;
  /** Handler module relative to the repository root. */
  readonly entry: string;

  constructor(scope: Construct, id: string, props: ServiceFunctionProps) {
    super(scope, id);
    this.entry = props.entry;

    // Logs belong to the stateless stack and expire after a month anyway: delete them with it.
    this.logGroup = new LogGroup(this, 'Logs', {
      retention: RetentionDays.ONE_MONTH,
      removalPolicy: RemovalPolicy.DESTROY,
    });

    // Our own role: CloudWatch Logs rights on this function's log group only, instead of the
    // AWSLambdaBasicExecutionRole managed policy (logs:* on every log group of the account).
    const role = new Role(this, 'Role', {
      assumedBy: new ServicePrincipal('lambda.amazonaws.com'),
      ...(props.rolePath ? { path: props.rolePath } : {}),
      description: `${props.service}: ${props.entry}`,
    });
    role.addToPrincipalPolicy(new PolicyStatement({ actions: ['logs:CreateLogStream', 'logs:PutLogEvents'], resources: [this.logGroup.logGroupArn] }));
    this.role = role;
    this.rolePath = props.rolePath ?? '/';

    // Tracing.ACTIVE adds xray:PutTraceSegments and xray:PutTelemetryRecords on Resource '*'.
    Validations.of(role).acknowledge({ id: 'AwsSolutions-IAM5[Resource::*]', reason: STAR_RESOURCE_REASON });

    this.lambda = new NodejsFunction(this, 'Function', {
      entry: path.join(REPO_ROOT, props.entry),
      handler: 'handler',
      description: props.description,
      runtime: Runtime.NODEJS_24_X,
      architecture: Architecture.ARM_64,
      memorySize: props.memorySize ?? 512,
      timeout: props.timeout ?? API_FUNCTION_TIMEOUT,
      tracing: Tracing.ACTIVE,
      logGroup: this.logGroup,
      role,
      projectRoot: REPO_ROOT,
      depsLockFilePath: path.join(REPO_ROOT, 'package-lock.json'),
      bundling: LAMBDA_BUNDLING,
      environment: {
        NODE_OPTIONS: '--enable-source-maps',
        POWERTOOLS_SERVICE_NAME: props.service,
        POWERTOOLS_METRICS_NAMESPACE: METRICS_NAMESPACE,
        LOG_LEVEL: 'INFO',
        ...props.environment,
      },
    });
  }

  /** Grants exactly what `needs` lists and sets the environment it implies (table in functions/routes.ts). */
  bindNeeds(needs: RouteNeeds, resources: NeedsResources): this {
    if (needs.table) this.bindTable(resources.table, needs.table);
    if (needs.enclaveWalletKey) this.bindWrappingKey(resources.enclaveKey, 'enclave-wallet', needs.enclaveWalletKey);
    if (needs.accountAccessKey) this.bindWrappingKey(resources.accountKey, 'account-access-keys', needs.accountAccessKey);
    // The same account key, under its own purpose (key-use.ts WRAPPING_CONTEXTS): a grant for one purpose opens nothing of the other.
    if (needs.webhookSecretKey) this.bindWrappingKey(resources.accountKey, 'webhook-secret', needs.webhookSecretKey);
    if (needs.opJwtKey) this.bindOpJwtKey(resources.opJwtKey, needs.opJwtKey);
    if (needs.sponsorKey) this.bindSponsorKey(resources.sponsorKey, needs.sponsorKey);
    if (needs.sponsorKey && resources.sponsorPoolSize !== undefined) this.lambda.addEnvironment('SPONSOR_POOL_SIZE', resources.sponsorPoolSize);
    if (needs.enclaveUrl) this.bindTeeUrl(resources.enclaveUrl);
    if (needs.chains) this.bindChains(resources.publicChainsConfig, resources.rpcUrlsSecret);
    else if (needs.chainData) this.lambda.addEnvironment('CHAINS_CONFIG', resources.publicChainsConfig);
    if (needs.delegates) this.lambda.addEnvironment('ALLOWED_7702_DELEGATES', resources.delegates);
    if (needs.venues) this.bindVenues(resources.venueUrls);
    if (needs.bridge && resources.bridgeUrl !== undefined) this.lambda.addEnvironment('BRIDGE_URL', resources.bridgeUrl);
    if (needs.platformFee && resources.platformFee !== undefined) this.lambda.addEnvironment('PLATFORM_FEE', resources.platformFee);
    if (needs.transfers) {
      if (!resources.transfers)
        throw new Error(`${this.node.path}: needs transfers, but the transfer state machine is not built yet (a step function cannot start transfers)`);
      this.bindTransfers(resources.transfers);
    }
    if (needs.deliveryQueue) {
      if (!resources.deliveryQueue) throw new Error(`${this.node.path}: needs the delivery queue, but no events stack is built`);
      this.bindDeliveryQueue(resources.deliveryQueue, needs.deliveryQueue);
    }
    return this;
  }

  /**
   * The webhook delivery queue: DELIVERY_QUEUE_URL and exactly the listed sqs: actions on that
   * queue (not grantSendMessages, which adds GetQueueAttributes and GetQueueUrl; the URL comes from
   * the environment). The queue is encrypted with SQS-managed keys, so no KMS grant goes with it.
   */
  bindDeliveryQueue(queue: IQueue, operations: readonly DeliveryQueueOperation[]): this {
    this.lambda.addEnvironment('DELIVERY_QUEUE_URL', queue.queueUrl);
    this.role.addToPrincipalPolicy(new PolicyStatement({ actions: operations.map((operation) => `sqs:${operation}`), resources: [queue.queueArn] }));
    return this;
  }

  /**
   * Starts and describes executions of the transfer machine: states:StartExecution on that
   * machine's ARN and states:DescribeExecution on its executions, nothing else of Step Functions
   * (no Stop, Redrive or history: those are the operator's, docs/deploy.md).
   */
  bindTransfers(transfers: TransferResources): this {
    this.lambda.addEnvironment('TRANSFER_STATE_MACHINE_ARN', transfers.stateMachine.stateMachineArn);
    this.lambda.addEnvironment('TRANSFER_STEP_FUNCTIONS', transfers.stepFunctionArns);
    this.role.addToPrincipalPolicy(new PolicyStatement({ actions: ['states:StartExecution'], resources: [transfers.stateMachine.stateMachineArn] }));
    this.role.addToPrincipalPolicy(new PolicyStatement({ actions: ['states:DescribeExecution'], resources: [transfers.executionsArn] }));
    // The `:*` is the execution name, unknown until a task starts; the ARN is this machine's executions only.
    const machine = Stack.of(this).getLogicalId(transfers.stateMachine.node.defaultChild as CfnElement);
    Validations.of(this.role).acknowledge({
      id: `AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:states:<AWS::Region>:<AWS::AccountId>:execution:<${machine}.Name>:*]`,
      reason: 'DescribeExecution on the executions of the transfer machine only; the execution name (task id and attempt) is not known at deploy time',
    });
    return this;
  }

  /**
   * The single table (no index, no Scan, no table management, no streams): the read actions on
   * the partitions `needs` reads or writes, the write actions on those it writes, each statement
   * under its own dynamodb:LeadingKeys condition (shared/db/partitions.ts).
   */
  bindTable(table: ITable, needs: TableNeeds): this {
    const writes = needs.writes ?? [];
    const reads = [...(needs.reads ?? []), ...writes];
    if (reads.length === 0) throw new Error(`${this.node.path}: needs the table but names no partition`);
    this.lambda.addEnvironment('TABLE_NAME', table.tableName);
    this.role.addToPrincipalPolicy(
      new PolicyStatement({ actions: [...TABLE_ACTIONS.read], resources: [table.tableArn], conditions: leadingKeysCondition(partitionPatterns(reads)) }),
    );
    if (writes.length > 0) {
      this.role.addToPrincipalPolicy(
        new PolicyStatement({
          actions: [...TABLE_ACTIONS.write],
          resources: [table.tableArn],
          conditions: leadingKeysCondition(partitionPatterns(writes)),
        }),
      );
    }
    return this;
  }

  /**
   * A symmetric wrapping key, for exactly `operations`, with the encryption-context conditions
   * of its purpose; the key policy names this role by its path (key-use.ts).
   */
  bindWrappingKey(key: IKey, purpose: 'enclave-wallet' | 'account-access-keys' | 'webhook-secret', operations: readonly WrappingKeyOperation[]): this {
    this.lambda.addEnvironment('KEY_PROVIDER', 'kms');
    this.lambda.addEnvironment(purpose === 'enclave-wallet' ? 'ENCLAVE_KMS_KEY_ID' : 'ACCOUNT_KMS_KEY_ID', key.keyArn);
    for (const operation of operations) this.grantKeyUse(key, purpose, operation);
    return this;
  }

  /** op_jwt signing key: Sign (ES256, raw message) and/or GetPublicKey (the JWT's kid). */
  bindOpJwtKey(key: IKey, operations: readonly SigningKeyOperation[]): this {
    this.lambda.addEnvironment('OP_JWT_SIGNER', 'kms');
    this.lambda.addEnvironment('OP_JWT_KMS_KEY_ID', key.keyArn);
    for (const operation of operations) this.grantKeyUse(key, 'op-jwt', operation);
    return this;
  }

  /**
   * The gas sponsor's signing key: Sign and/or GetPublicKey, as for the op_jwt key, on a key of
   * its own, so the op_jwt key's many signers cannot mint the sponsor's tokens.
   */
  bindSponsorKey(key: IKey, operations: readonly SigningKeyOperation[]): this {
    this.lambda.addEnvironment('SPONSOR_SIGNER', 'kms');
    this.lambda.addEnvironment('SPONSOR_KMS_KEY_ID', key.keyArn);
    for (const operation of operations) this.grantKeyUse(key, 'gas-sponsor', operation);
    return this;
  }

  /** Base URL of the wallet enclave's REST API stage (public endpoint: no IAM grant involved). */
  bindTeeUrl(url: string): this {
    this.lambda.addEnvironment('TEE_URL', url);
    return this;
  }

  /**
   * Public chain data in CHAINS_CONFIG; the RPC URLs (which carry provider API keys) stay in the
   * secret, read on the first chain call: GetSecretValue and DescribeSecret on that secret only
   * (grantRead). It is encrypted with the AWS-managed aws/secretsmanager key, whose policy allows
   * decryption through Secrets Manager to whoever may read the secret: no KMS grant here.
   */
  bindChains(publicChainsConfig: string, rpcUrls: ISecret): this {
    this.lambda.addEnvironment('CHAINS_CONFIG', publicChainsConfig);
    this.lambda.addEnvironment('RPC_URLS_SECRET', rpcUrls.secretArn);
    rpcUrls.grantRead(this.role);
    return this;
  }

  /** The venues' public API base URLs (VENUE_URLS): no IAM grant involved, and no secret in them. */
  bindVenues(venueUrls: string): this {
    this.lambda.addEnvironment('VENUE_URLS', venueUrls);
    return this;
  }

  private grantKeyUse(key: IKey, purpose: KeyPurpose, operation: KeyOperation): void {
    // The key policy allows only roles under functionRolePath(…, <function id>): without it the grant would be dead.
    if (this.rolePath !== functionRolePath(Stack.of(key).stackName, this.node.id)) {
      throw new Error(`${this.node.path}: uses the ${purpose} key, so its role needs the path ${functionRolePath(Stack.of(key).stackName, this.node.id)}`);
    }
    const conditions = keyUseConditions(purpose, operation);
    this.role.addToPrincipalPolicy(
      new PolicyStatement({
        actions: [`kms:${operation}`],
        resources: [key.keyArn],
        ...(Object.keys(conditions).length > 0 ? { conditions } : {}),
      }),
    );
  }
}
