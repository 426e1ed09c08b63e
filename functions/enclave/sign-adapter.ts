import type { APIGatewayProxyEvent } from 'aws-lambda';
import type * as v from 'valibot';
import { authenticateEnclaveCaller } from '../../shared/auth/authenticate.ts';
import type { V1Deps, V2Deps } from '../../shared/enclave/deps.ts';
import type { SigningWallet } from '../../shared/enclave/sign-operations.ts';
import { type WalletAuthorization, withV1WalletKey, withWalletKey } from '../../shared/enclave/use-wallet.ts';
import { assertV1Open } from '../../shared/enclave/v1-wallets.ts';
import { routeOf } from '../../shared/http/event.ts';
import { jsonResponse } from '../../shared/http/response.ts';
import { parseInput } from '../../shared/http/validate.ts';
import { measureSigning } from '../../shared/observability/metrics.ts';
import type { PolicyChains } from '../../shared/policies/facts.ts';
import type { NativePrices } from '../../shared/policies/native-usd.ts';
import type { PolicyOperation } from '../../shared/policies/policy.ts';

type Operation<S extends v.GenericSchema, R> = (wallet: SigningWallet, secret: Buffer, body: v.InferOutput<S>) => Promise<R>;

/**
 * The adapter factory every v2 enclave signing endpoint shares: authenticate the app, validate
 * the body, authorise the wallet (op_jwt + access_key, migrating a v1 wallet on first use), hold
 * the request to the app's policy as `name`, run one signing operation with the wallet's key.
 */
export const makeV2Signer =
  <S extends v.GenericSchema, R extends object>(name: PolicyOperation, schema: S, operation: Operation<S, R>, allowedDelegates?: ReadonlySet<string>) =>
  (deps: V2Deps & { readonly policyChains?: PolicyChains; readonly policyPrices?: NativePrices }) =>
  async (event: APIGatewayProxyEvent & { body: unknown }) => {
    const app = await authenticateEnclaveCaller(deps.apps, event, deps.now());
    const body = parseInput(schema, event.body, 'body');
    const run = (wallet: SigningWallet, secret: Buffer) => operation(wallet, secret, body);
    const result = await measureSigning(routeOf(event), () =>
      withWalletKey(deps, app, body as WalletAuthorization, run, {
        operation: name,
        body,
        allowedDelegates,
        chains: deps.policyChains,
        prices: deps.policyPrices,
      }),
    );
    return jsonResponse(200, { success: true, ...result });
  };

/** The v1 twin: encryption_context + access_key, refused after retirement; no KMS key involved. */
export const makeV1Signer =
  <S extends v.GenericSchema, R extends object>(schema: S, operation: Operation<S, R>) =>
  (deps: V1Deps) =>
  async (event: APIGatewayProxyEvent & { body: unknown }) => {
    assertV1Open(deps); // every v1 request is refused after retirement
    const app = await authenticateEnclaveCaller(deps.apps, event, deps.now());
    const body = parseInput(schema, event.body, 'body');
    const auth = body as { encryption_context: string; access_key: string; wallet_id: string };
    const run = (wallet: SigningWallet, secret: Buffer) => operation(wallet, secret, body);
    const result = await measureSigning(routeOf(event), () => withV1WalletKey(deps, app, auth, run));
    return jsonResponse(200, { success: true, ...result });
  };
