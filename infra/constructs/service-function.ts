import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Duration, RemovalPolicy } from 'aws-cdk-lib';
import type { ITable } from 'aws-cdk-lib/aws-dynamodb';
import type { IKey } from 'aws-cdk-lib/aws-kms';
import { Architecture, Runtime, Tracing } from 'aws-cdk-lib/aws-lambda';
import { NodejsFunction } from 'aws-cdk-lib/aws-lambda-nodejs';
import { LogGroup, RetentionDays } from 'aws-cdk-lib/aws-logs';
import { Construct } from 'constructs';
import { LAMBDA_BUNDLING } from '../bundling.ts';

/** Repository root: handler entries, package-lock.json and node_modules are resolved from here. */
export const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));

/**
 * Item reads and writes on the table and its indexes. Not grantReadWriteData: that adds Scan
 * (listing is a Query, STYLE.md) and stream reads we do not use. Transactions are authorised
 * per item by these same actions.
 */
const TABLE_DATA_ACTIONS = [
  'dynamodb:GetItem',
  'dynamodb:BatchGetItem',
  'dynamodb:Query',
  'dynamodb:PutItem',
  'dynamodb:UpdateItem',
  'dynamodb:DeleteItem',
  'dynamodb:BatchWriteItem',
  'dynamodb:ConditionCheckItem',
];

/** API Gateway HTTP APIs stop waiting for an integration after 30 s; end the function first. */
export const API_FUNCTION_TIMEOUT = Duration.seconds(29);

export interface ServiceFunctionProps {
  /** Handler module relative to the repository root (exports `handler`), as in functions/routes.ts. */
  readonly entry: string;
  readonly description?: string;
  /** @default 512 */
  readonly memorySize?: number;
  /** @default API_FUNCTION_TIMEOUT (29 s) */
  readonly timeout?: Duration;
  readonly environment?: Readonly<Record<string, string>>;
}

/**
 * The one way we make a Lambda: Node 24 on arm64, ESM bundle with source maps, X-Ray tracing,
 * a log group kept for a month. Access is added only through the `bind…` helpers, each of which
 * sets the env var shared/config.ts reads and grants exactly the actions that code path needs.
 */
export class ServiceFunction extends Construct {
  readonly lambda: NodejsFunction;
  readonly logGroup: LogGroup;

  constructor(scope: Construct, id: string, props: ServiceFunctionProps) {
    super(scope, id);

    // Logs belong to the stateless stack and expire after a month anyway: delete them with it.
    this.logGroup = new LogGroup(this, 'Logs', {
      retention: RetentionDays.ONE_MONTH,
      removalPolicy: RemovalPolicy.DESTROY,
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
      projectRoot: REPO_ROOT,
      depsLockFilePath: path.join(REPO_ROOT, 'package-lock.json'),
      bundling: LAMBDA_BUNDLING,
      environment: {
        NODE_OPTIONS: '--enable-source-maps',
        ...props.environment,
      },
    });
  }

  /** The single table: item reads and writes only (no Scan, no table management, no streams). */
  bindTable(table: ITable): this {
    this.lambda.addEnvironment('TABLE_NAME', table.tableName);
    table.grant(this.lambda, ...TABLE_DATA_ACTIONS);
    return this;
  }

  /** Wallet-key wrapping key. Only enclave functions may hold this (asserted in test/infra). */
  bindEnclaveKey(key: IKey): this {
    this.lambda.addEnvironment('ENCLAVE_KMS_KEY_ID', key.keyArn);
    key.grant(this.lambda, 'kms:GenerateDataKey', 'kms:Decrypt');
    return this;
  }

  /** Access-key wrapping key of the account service. */
  bindAccountKey(key: IKey): this {
    this.lambda.addEnvironment('ACCOUNT_KMS_KEY_ID', key.keyArn);
    key.grant(this.lambda, 'kms:GenerateDataKey', 'kms:Decrypt');
    return this;
  }

  /** op_jwt signing key: sign tokens and publish the public key (JWKS), nothing else. */
  bindOpJwtKey(key: IKey): this {
    this.lambda.addEnvironment('OP_JWT_KMS_KEY_ID', key.keyArn);
    key.grant(this.lambda, 'kms:Sign', 'kms:GetPublicKey');
    return this;
  }

  /** Base URL of the wallet enclave's HTTP API (public endpoint: no IAM grant involved). */
  bindTeeUrl(url: string): this {
    this.lambda.addEnvironment('TEE_URL', url);
    return this;
  }
}
