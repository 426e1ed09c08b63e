import { CfnOutput, RemovalPolicy, Stack, type StackProps, Validations } from 'aws-cdk-lib';
import { AttributeType, BillingMode, type ITable, StreamViewType, Table } from 'aws-cdk-lib/aws-dynamodb';
import { type IKey, Key, KeySpec, KeyUsage } from 'aws-cdk-lib/aws-kms';
import { type ISecret, Secret } from 'aws-cdk-lib/aws-secretsmanager';
import type { Construct } from 'constructs';
import { EVENT_FUNCTIONS } from '../functions/events.ts';
import { ROUTES } from '../functions/routes.ts';
import { TRANSFER_STEP_FUNCTIONS } from '../functions/transfer-steps.ts';
import { RPC_URLS_PLACEHOLDER_KEY } from '../shared/chains/rpc-urls.ts';
import { TABLE_KEY_SCHEMA, TABLE_TTL_ATTRIBUTE } from '../shared/db/table-definition.ts';
import { type KeyUser, keyPolicy } from './constructs/key-use.ts';

/** What the stateless services need from this stack. */
export interface StatefulResources {
  readonly table: ITable;
  /** Wraps wallet private keys; only the enclave service may decrypt with it. */
  readonly enclaveKey: IKey;
  /** Wraps stored account access keys. */
  readonly accountKey: IKey;
  /** Signs op_jwt tokens (ES256). */
  readonly opJwtKey: IKey;
  /** Signs the gas sponsor's tokens (ES256); the platform application trusts this key only. */
  readonly sponsorKey: IKey;
  /** The chains' RPC URLs `{ "ETH": "https://…", … }` (provider API keys in them); set by the operator. */
  readonly rpcUrlsSecret: ISecret;
}

export const DEFAULT_RPC_URLS_SECRET_NAME = 'perp-wallet/rpc-urls';

export interface StatefulStackProps extends StackProps {
  /**
   * Table deletion protection and RETAIN; turn off only for throwaway environments
   * (`-c deletionProtection=false`). The KMS keys are retained either way.
   * @default true
   */
  readonly deletionProtection?: boolean;
  /**
   * Name of the RPC URLs secret (one per stage when several share an account).
   * @default DEFAULT_RPC_URLS_SECRET_NAME
   */
  readonly rpcUrlsSecretName?: string;
  /**
   * The functions whose roles the key policies name (by role path, key-use.ts): their ids and
   * needs. The service stacks built on this stack must make exactly these functions.
   * @default ROUTES, TRANSFER_STEP_FUNCTIONS and EVENT_FUNCTIONS
   */
  readonly keyUsers?: readonly KeyUser[];
  /**
   * IAM role ARNs (exact) the gas sponsor key's policy also names, for `npm run sponsor:setup` and
   * `app:create -- --platform`, which sign as the sponsor (`-c sponsorOperatorRoles=arn,…`). @default none
   */
  readonly sponsorOperatorRoleArns?: readonly string[];
}

/**
 * Everything that holds data or key material, apart from the functions and APIs so the
 * services stack can be destroyed and redeployed freely.
 */
export class StatefulStack extends Stack implements StatefulResources {
  readonly table: Table;
  readonly enclaveKey: Key;
  readonly accountKey: Key;
  readonly opJwtKey: Key;
  readonly sponsorKey: Key;
  readonly rpcUrlsSecret: Secret;

  constructor(scope: Construct, id: string, props: StatefulStackProps = {}) {
    super(scope, id, props);
    const deletionProtection = props.deletionProtection ?? true;
    const keyUsers = props.keyUsers ?? [...ROUTES, ...TRANSFER_STEP_FUNCTIONS, ...EVENT_FUNCTIONS];

    // AWS::DynamoDB::Table rather than TableV2's GlobalTable: one region, and LocalStack handles it.
    this.table = new Table(this, 'Table', {
      partitionKey: { name: TABLE_KEY_SCHEMA.partitionKey, type: AttributeType.STRING },
      sortKey: { name: TABLE_KEY_SCHEMA.sortKey, type: AttributeType.STRING },
      billingMode: BillingMode.PAY_PER_REQUEST,
      pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
      timeToLiveAttribute: TABLE_TTL_ATTRIBUTE,
      // Issue 24: the publisher (infra/events-stack.ts) reads new outbox entries from each write's
      // new image (NEW_IMAGE: it never needs the old one; each entry's placement in the event log
      // says whether it was published, so a retried record publishes nothing twice).
      // Adding a stream updates the table in place (no replacement); records are kept 24 hours.
      stream: StreamViewType.NEW_IMAGE,
      deletionProtection,
      removalPolicy: deletionProtection ? RemovalPolicy.RETAIN : RemovalPolicy.DESTROY,
    });

    // Keys are never deleted with the stack: data wrapped by a deleted key is lost for good.
    // Key policies: the account administers each key but cannot use it; only the roles of the
    // functions that need an operation may (named by ARN: aws:PrincipalArn), with that purpose's
    // encryption context (constructs/key-use.ts).
    this.enclaveKey = new Key(this, 'EnclaveWalletKey', {
      description: 'Wraps wallet private keys (enclave service only)',
      enableKeyRotation: true,
      policy: keyPolicy(this, 'enclave-wallet', keyUsers),
      removalPolicy: RemovalPolicy.RETAIN,
    });
    // Also seals webhook endpoints' signing secrets (issue 24), under purpose `webhook-secret`:
    // one key, two purposes, each use bound to its own encryption context (key-use.ts).
    this.accountKey = new Key(this, 'AccountAccessKey', {
      description: 'Wraps stored account access keys and webhook signing secrets (account service)',
      enableKeyRotation: true,
      policy: keyPolicy(this, ['account-access-keys', 'webhook-secret'], keyUsers),
      removalPolicy: RemovalPolicy.RETAIN,
    });
    // Asymmetric keys cannot rotate automatically; rotating means a new key and a JWKS overlap.
    this.opJwtKey = new Key(this, 'OpJwtSigningKey', {
      description: 'Signs op_jwt tokens (ES256)',
      keySpec: KeySpec.ECC_NIST_P256,
      keyUsage: KeyUsage.SIGN_VERIFY,
      policy: keyPolicy(this, 'op-jwt', keyUsers),
      removalPolicy: RemovalPolicy.RETAIN,
    });
    // The gas sponsor's own identity: the platform application (whose enclave wallet pays sponsored
    // gas) trusts this key only, and only the functions that sponsor may sign with it, so none of the
    // op_jwt key's signers (express, GetPerp, …) can mint the sponsor's tokens.
    this.sponsorKey = new Key(this, 'GasSponsorSigningKey', {
      description: "Signs the gas sponsor's tokens for the platform application (ES256)",
      keySpec: KeySpec.ECC_NIST_P256,
      keyUsage: KeyUsage.SIGN_VERIFY,
      policy: keyPolicy(this, 'gas-sponsor', keyUsers, checkedRoleArns(props.sponsorOperatorRoleArns ?? [])),
      removalPolicy: RemovalPolicy.RETAIN,
    });

    // The RPC URLs never enter a template: the secret is created holding a generated placeholder
    // (`{"placeholder":"<random>"}`, which the functions refuse with a clear error) and the
    // operator puts the value (docs/deploy.md). Changing generateSecretString later would make
    // CloudFormation generate a new value over the operator's: leave it as it is. Encrypted with
    // the aws/secretsmanager key; readers need only secretsmanager:GetSecretValue on this secret.
    this.rpcUrlsSecret = new Secret(this, 'RpcUrls', {
      secretName: props.rpcUrlsSecretName ?? DEFAULT_RPC_URLS_SECRET_NAME,
      description: 'RPC URLs of the chains as JSON {"ETH","ARB","POL","INK","SOL"}; set with put-secret-value (docs/deploy.md)',
      generateSecretString: { secretStringTemplate: '{}', generateStringKey: RPC_URLS_PLACEHOLDER_KEY, excludePunctuation: true },
      removalPolicy: RemovalPolicy.RETAIN,
    });
    Validations.of(this.rpcUrlsSecret).acknowledge({
      id: 'AwsSolutions-SMG4',
      reason:
        'The value is a set of RPC provider URLs whose API keys are issued by the providers, not by AWS: they change when a provider key is rotated, and the operator then puts the new URLs (docs/deploy.md). A rotation Lambda could not mint provider keys.',
    });

    new CfnOutput(this, 'TableName', { value: this.table.tableName });
    new CfnOutput(this, 'EnclaveKeyId', { value: this.enclaveKey.keyId });
    new CfnOutput(this, 'AccountKeyId', { value: this.accountKey.keyId });
    new CfnOutput(this, 'OpJwtKeyId', { value: this.opJwtKey.keyId });
    new CfnOutput(this, 'SponsorKeyId', { value: this.sponsorKey.keyId });
    new CfnOutput(this, 'RpcUrlsSecretName', { value: this.rpcUrlsSecret.secretName });
  }
}

/** Operator role ARNs for a key policy: exact IAM role ARNs, no wildcard (a pattern would trust whoever can create a matching role). */
function checkedRoleArns(arns: readonly string[]): string[] {
  for (const arn of arns) {
    if (!/^arn:aws[a-z-]*:iam::\d{12}:role\/[\w+=,.@/-]+$/.test(arn))
      throw new Error(`sponsorOperatorRoles: not an IAM role ARN (exact, no wildcard): ${JSON.stringify(arn)}`);
  }
  return [...arns];
}
