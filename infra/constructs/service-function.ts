import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Duration, RemovalPolicy, Tags, Validations } from 'aws-cdk-lib';
import type { ITable } from 'aws-cdk-lib/aws-dynamodb';
import { type IRole, PolicyStatement, Role, ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import type { IKey } from 'aws-cdk-lib/aws-kms';
import { Architecture, Runtime, Tracing } from 'aws-cdk-lib/aws-lambda';
import { NodejsFunction } from 'aws-cdk-lib/aws-lambda-nodejs';
import { LogGroup, RetentionDays } from 'aws-cdk-lib/aws-logs';
import type { ISecret } from 'aws-cdk-lib/aws-secretsmanager';
import { Construct } from 'constructs';
import type { RouteNeeds, ServiceName, SigningKeyOperation, TableAccess, WrappingKeyOperation } from '../../functions/routes.ts';
import { API_FUNCTION_TIMEOUT_SECONDS } from '../api-resources.ts';
import { LAMBDA_BUNDLING } from '../bundling.ts';
import { KEY_USE_TAG_VALUE, type KeyOperation, type KeyPurpose, keyUseConditions, keyUseTag } from './key-use.ts';

/** Repository root: handler entries, package-lock.json and node_modules are resolved from here. */
export const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));

/**
 * Item actions on the table and its indexes, by TableAccess. Not grantReadWriteData: that adds
 * Scan (listing is a Query, STYLE.md), DescribeTable and stream reads we do not use.
 * Transactions are authorised per item by these same actions.
 */
export const TABLE_ACTIONS: Record<TableAccess, readonly string[]> = {
  read: ['dynamodb:GetItem', 'dynamodb:BatchGetItem', 'dynamodb:Query'],
  'read-write': [
    'dynamodb:GetItem',
    'dynamodb:BatchGetItem',
    'dynamodb:Query',
    'dynamodb:PutItem',
    'dynamodb:UpdateItem',
    'dynamodb:DeleteItem',
    'dynamodb:BatchWriteItem',
    'dynamodb:ConditionCheckItem',
  ],
};

/** Everything a route's `needs` may refer to (stateful resources and the services stack's own values). */
export interface NeedsResources {
  readonly table: ITable;
  readonly enclaveKey: IKey;
  readonly accountKey: IKey;
  readonly opJwtKey: IKey;
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
}

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

  constructor(scope: Construct, id: string, props: ServiceFunctionProps) {
    super(scope, id);

    // Logs belong to the stateless stack and expire after a month anyway: delete them with it.
    this.logGroup = new LogGroup(this, 'Logs', {
      retention: RetentionDays.ONE_MONTH,
      removalPolicy: RemovalPolicy.DESTROY,
    });

    // Our own role: CloudWatch Logs rights on this function's log group only, instead of the
    // AWSLambdaBasicExecutionRole managed policy (logs:* on every log group of the account).
    const role = new Role(this, 'Role', {
      assumedBy: new ServicePrincipal('lambda.amazonaws.com'),
      description: `${props.service}: ${props.entry}`,
    });
    role.addToPrincipalPolicy(
      new PolicyStatement({ actions: ['logs:CreateLogStream', 'logs:PutLogEvents'], resources: [this.logGroup.logGroupArn] }),
    );
    this.role = role;

    // Tracing.ACTIVE adds xray:PutTraceSegments and xray:PutTelemetryRecords on Resource '*'.
    Validations.of(role).acknowledge({
      id: 'AwsSolutions-IAM5[Resource::*]',
      reason: 'X-Ray PutTraceSegments and PutTelemetryRecords support no resource-level permissions: Resource must be "*" (added by Tracing.ACTIVE; the only "*" statement of these roles, asserted in test/infra).',
    });

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
    if (needs.opJwtKey) this.bindOpJwtKey(resources.opJwtKey, needs.opJwtKey);
    if (needs.enclaveUrl) this.bindTeeUrl(resources.enclaveUrl);
    if (needs.chains) this.bindChains(resources.publicChainsConfig, resources.rpcUrlsSecret);
    if (needs.delegates) this.lambda.addEnvironment('ALLOWED_7702_DELEGATES', resources.delegates);
    if (needs.venues) this.bindVenues(resources.venueUrls);
    return this;
  }

  /** The single table: the item actions of `access` (no Scan, no table management, no streams). */
  bindTable(table: ITable, access: TableAccess): this {
    this.lambda.addEnvironment('TABLE_NAME', table.tableName);
    table.grant(this.role, ...TABLE_ACTIONS[access]);
    return this;
  }

  /**
   * A symmetric wrapping key, for exactly `operations`, with the encryption-context conditions
   * of its purpose; the role tag per operation is what the key policy checks (key-use.ts).
   */
  bindWrappingKey(key: IKey, purpose: 'enclave-wallet' | 'account-access-keys', operations: readonly WrappingKeyOperation[]): this {
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
    const conditions = keyUseConditions(purpose, operation);
    this.role.addToPrincipalPolicy(
      new PolicyStatement({
        actions: [`kms:${operation}`],
        resources: [key.keyArn],
        ...(Object.keys(conditions).length > 0 ? { conditions } : {}),
      }),
    );
    Tags.of(this.role).add(keyUseTag(purpose, operation), KEY_USE_TAG_VALUE);
  }
}
