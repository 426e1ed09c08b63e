import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import type * as v from 'valibot';
import { authenticateEnclaveCaller } from '../../shared/auth/authenticate.ts';
import { enclaveDeps } from '../../shared/enclave/deps.ts';
import { jsonResponse } from '../../shared/http/response.ts';
import { parseInput } from '../../shared/http/validate.ts';
import { measureSigning } from '../../shared/observability/metrics.ts';
import type { SigningWallet } from '../../shared/enclave/sign-operations.ts';
import { withV1WalletKey, withWalletKey, type WalletAuthorization } from '../../shared/enclave/use-wallet.ts';
import { assertV1Open } from '../../shared/enclave/v1-wallets.ts';

/**
 * The adapter every enclave signing endpoint shares: authenticate the app, validate the body,
 * authorise the wallet (v2: op_jwt + access_key, migrating a v1 wallet on first use; v1:
 * encryption_context + access_key), run one signing operation.
 */
export function signAdapter<S extends v.GenericSchema, R extends object>(
  version: 1 | 2,
  schema: S,
  operation: (wallet: SigningWallet, secret: Buffer, body: v.InferOutput<S>) => Promise<R>,
) {
  return async (event: APIGatewayProxyEventV2 & { body: unknown }) => {
    if (version === 1) assertV1Open(enclaveDeps); // every v1 request is refused after retirement
    const app = await authenticateEnclaveCaller(enclaveDeps.apps, event, enclaveDeps.now());
    const body = parseInput(schema, event.body, 'body');
    const run = (wallet: SigningWallet, secret: Buffer) => operation(wallet, secret, body);
    const result = await measureSigning(event.routeKey, () =>
      version === 2
        ? withWalletKey(enclaveDeps, app, body as WalletAuthorization, run)
        : withV1WalletKey(enclaveDeps, app, body as { encryption_context: string; access_key: string; wallet_id: string }, run),
    );
    return jsonResponse(200, { success: true, ...result });
  };
}
