import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import type * as v from 'valibot';
import { expressDeps } from '../../shared/deps/express.ts';
import { authenticateExpressCaller } from '../../shared/express/express-caller.ts';
import { signWithExpressWallet } from '../../shared/express/express-wallets.ts';
import { jsonResponse } from '../../shared/http/response.ts';
import { parseInput } from '../../shared/http/validate.ts';
import type { SignOperation } from '../../shared/wallets/enclave-client.ts';

/** The adapter of the express `/v2/wallet/sign/*` endpoints: authenticate, validate, sign via the enclave. */
export function expressSignAdapter(operation: SignOperation, schema: v.GenericSchema) {
  return async (event: APIGatewayProxyEventV2 & { body: unknown }) => {
    const caller = await authenticateExpressCaller(expressDeps.apps, event);
    const body = parseInput(schema, event.body, 'body') as Record<string, unknown>;
    const result = await signWithExpressWallet(expressDeps, caller, operation, body);
    return jsonResponse(200, { ...result, success: true, chain: caller.chain }, caller.responseHeaders);
  };
}
