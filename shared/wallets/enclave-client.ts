import { SERVICE_TOKEN_HEADER } from '../auth/service-token.ts';
import { DomainError, PolicyDeniedError, UpstreamError } from '../errors.ts';
import { logger } from '../logger.ts';

/**
 * The wallet enclave as the account and express services see it: its v2 HTTP API at TEE_URL,
 * in AWS and locally alike. The app is identified by its secret key (account service) or by a
 * platform service token (express service, which holds only the app's API key).
 */
export type EnclaveCredentials = { readonly secretKey: string } | { readonly serviceToken: string };
export type SignOperation = 'sign_data' | 'sign_message' | 'sign_transaction' | 'sign_authorization';

export interface EnclaveWallet {
  readonly wallet_id: string;
  readonly access_key: string;
  readonly public_address: string;
}

export interface WalletEnclave {
  createWallet(credentials: EnclaveCredentials, input: { authJwt: string; network: string; walletGroupId: string }): Promise<EnclaveWallet>;
  /** `body` carries op_jwt, access_key, wallet_id and the operation's own fields. */
  sign(credentials: EnclaveCredentials, operation: SignOperation, body: Record<string, unknown>): Promise<Record<string, unknown>>;
}

/** Enclave answers that describe the caller's own input, relayed as they are. */
const RELAYED_STATUSES = new Set([400, 409, 410, 422]);

export class HttpWalletEnclave implements WalletEnclave {
  readonly #baseUrl: string;
  readonly #timeoutMs: number;

  constructor(baseUrl: string, timeoutMs = 10_000) {
    this.#baseUrl = baseUrl;
    this.#timeoutMs = timeoutMs;
  }

  createWallet(credentials: EnclaveCredentials, input: { authJwt: string; network: string; walletGroupId: string }) {
    return this.#post<EnclaveWallet>('/v2/api/wallet', credentials, {
      auth_jwt: input.authJwt,
      network: input.network,
      wallet_group_id: input.walletGroupId,
    });
  }

  sign(credentials: EnclaveCredentials, operation: SignOperation, body: Record<string, unknown>) {
    return this.#post<Record<string, unknown>>(`/v2/api/wallet/${operation}`, credentials, body);
  }

  async #post<T>(path: string, credentials: EnclaveCredentials, body: object): Promise<T> {
    const auth = 'secretKey' in credentials ? { 'x-service-secret-key': credentials.secretKey } : { [SERVICE_TOKEN_HEADER]: credentials.serviceToken };
    let response: Response;
    try {
      response = await fetch(`${this.#baseUrl}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...auth },
        body: JSON.stringify(body),
        signal: AbortSignal.timeout(this.#timeoutMs),
      });
    } catch (error) {
      logger.error('wallet enclave unreachable', { path, error });
      throw new UpstreamError('ENCLAVE_UNAVAILABLE', 'The wallet enclave could not be reached');
    }
    const payload = (await response.json().catch(() => undefined)) as { error?: { code?: string; message?: string; rule_id?: unknown } } | undefined;
    if (!response.ok) {
      const code = payload?.error?.code ?? `HTTP_${response.status}`;
      // The app's own signing policy refused it (issue 22): the caller's answer, with the rule that decided.
      if (response.status === 403 && code === 'POLICY_DENIED') {
        const ruleId = payload?.error?.rule_id;
        throw new PolicyDeniedError(typeof ruleId === 'string' ? ruleId : null, payload?.error?.message ?? "The application's signing policy refuses this");
      }
      if (RELAYED_STATUSES.has(response.status) && payload?.error?.message) {
        throw new DomainError(response.status, code, payload.error.message);
      }
      // 401/403/404/5xx from the enclave are our misconfiguration or its failure, not the caller's.
      logger.error('wallet enclave refused a request', { path, status: response.status, code });
      throw new UpstreamError('ENCLAVE_ERROR', `The wallet enclave refused the request (${code})`);
    }
    return payload as T;
  }
}
