import type { APIGatewayProxyEvent } from 'aws-lambda';
import type * as v from 'valibot';
import type { ExpressRouteDeps } from '../../shared/deps/express.ts';
import { authenticateExpressCaller } from '../../shared/express/express-caller.ts';
import { signWithExpressWallet } from '../../shared/express/express-wallets.ts';
import { jsonResponse } from '../../shared/http/response.ts';
import { parseInput } from '../../shared/http/validate.ts';
import type { SignOperation } from '../../shared/wallets/enclave-client.ts';

/** The adapter factory of the express `/v2/wallet/sign/*` endpoints: authenticate, validate, sign via the enclave. */
export const makeExpressSigner =
  (operation: SignOperation, schema: v.GenericSchema) => (deps: ExpressRouteDeps) => async (event: APIGatewayProxyEvent & { body: unknown }) => {
    const caller = await authenticateExpressCaller(deps.apps, event);
    const body = parseInput(schema, event.body, 'body') as Record<string, unknown>;
    const result = await signWithExpressWallet(deps, caller, operation, body);
    return jsonResponse(200, { ...result, success: true, chain: caller.chain }, caller.responseHeaders);
  };
