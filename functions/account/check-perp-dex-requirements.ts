import type { APIGatewayProxyEvent } from 'aws-lambda';
import type { AppRegistry } from '../../shared/apps/app-registry.ts';
import { authenticateUser } from '../../shared/auth/authenticate.ts';
import { requirementsDepsFromEnv } from '../../shared/deps/venues.ts';
import { httpHandler } from '../../shared/http/handler.ts';
import { jsonResponse } from '../../shared/http/response.ts';
import { parseInput } from '../../shared/http/validate.ts';
import { DexRequest } from '../../shared/venues/schemas.ts';
import { checkPerpDexRequirements, type RequirementsDeps } from '../../shared/venues/service.ts';

export type CheckPerpDexRequirementsDeps = RequirementsDeps & { readonly apps: AppRegistry };

/** `POST /account/check-perp-dex-requirements`: the first deposit's minimum and gas against the wallet's balances. */
export const makeCheckPerpDexRequirements = (deps: CheckPerpDexRequirementsDeps) => async (event: APIGatewayProxyEvent & { body: unknown }) => {
  const user = await authenticateUser(deps.apps, event);
  const { dex } = parseInput(DexRequest, event.body, 'body');
  const requirements = await checkPerpDexRequirements(deps, user, dex);
  return jsonResponse(200, { success: true, dex, requirements_met: requirements.requirements_met, requirements, message: requirements.message });
};

/** Composition root (needs: table read, chains, venues). */
export const handler = httpHandler(makeCheckPerpDexRequirements(requirementsDepsFromEnv()), { jsonBody: true });
