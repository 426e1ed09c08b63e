import { UpstreamError } from '../errors.ts';
import { logger } from '../logger.ts';

/** The wallet enclave as the account service sees it. Over HTTP at TEE_URL, in AWS and locally. */
export interface WalletEnclave {
  createWallet(input: { secretKey: string; authJwt: string; network: string; walletGroupId: string }): Promise<{
    wallet_id: string;
    access_key: string;
    public_address: string;
  }>;
  signData(input: { secretKey: string; opJwt: string; accessKey: string; walletId: string; rawDataHash: string }): Promise<{
    signature: string;
  }>;
}

export class HttpWalletEnclave implements WalletEnclave {
  readonly #baseUrl: string;
  readonly #timeoutMs: number;

  constructor(baseUrl: string, timeoutMs = 10_000) {
    this.#baseUrl = baseUrl;
    this.#timeoutMs = timeoutMs;
  }

  createWallet(input: { secretKey: string; authJwt: string; network: string; walletGroupId: string }) {
    return this.#post<{ wallet_id: string; access_key: string; public_address: string }>('/v2/api/wallet', input.secretKey, {
      auth_jwt: input.authJwt,
      network: input.network,
      wallet_group_id: input.walletGroupId,
    });
  }

  signData(input: { secretKey: string; opJwt: string; accessKey: string; walletId: string; rawDataHash: string }) {
    return this.#post<{ signature: string }>('/v2/api/wallet/sign_data', input.secretKey, {
      op_jwt: input.opJwt,
      access_key: input.accessKey,
      wallet_id: input.walletId,
      raw_data_hash: input.rawDataHash,
    });
  }

  async #post<T>(path: string, secretKey: string, body: object): Promise<T> {
    let response: Response;
    try {
      response = await fetch(`${this.#baseUrl}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-service-secret-key': secretKey },
        body: JSON.stringify(body),
        signal: AbortSignal.timeout(this.#timeoutMs),
      });
    } catch (error) {
      logger.error('wallet enclave unreachable', { path, error });
      throw new UpstreamError('ENCLAVE_UNAVAILABLE', 'The wallet enclave could not be reached');
    }
    const payload = (await response.json().catch(() => undefined)) as { error?: { code?: string } } | undefined;
    if (!response.ok) {
      // The enclave's code is safe to relay (it names a rule, never a secret); its status is not,
      // since a 401 there is our misconfiguration, not the caller's.
      const code = payload?.error?.code ?? `HTTP_${response.status}`;
      logger.error('wallet enclave refused a request', { path, status: response.status, code });
      throw new UpstreamError('ENCLAVE_ERROR', `The wallet enclave refused the request (${code})`);
    }
    return payload as T;
  }
}
