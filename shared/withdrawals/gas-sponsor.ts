import type { Address, Hex } from 'viem';
import type { AppRegistry } from '../apps/app-registry.ts';
import type { Audience } from '../apps/application.ts';
import { ServiceTokenCache } from '../auth/service-token.ts';
import { wireTransaction } from '../chains/sender/enclave-signers.ts';
import type { EvmTransactionRequest, GasPayer, SponsorPool } from '../chains/sender/ports.ts';
import { sponsorWalletGroup } from '../chains/sender/sponsor-pool.ts';
import type { OpJwtSigner } from '../crypto/op-jwt-signer.ts';
import { UnprocessableError } from '../errors.ts';
import type { WalletEnclave } from '../wallets/enclave-client.ts';

/**
 * Who pays gas for sponsored (EIP-7702) sends: enclave wallets of the platform itself, in AWS and
 * in the sandbox alike. The platform application's identity provider is the gas sponsor's own key
 * (SPONSOR_SIGNER), so the sponsoring functions can mint the wallets' auth_jwt and op_jwt; their
 * private keys never leave the enclave (KMS-sealed like every wallet's). One identity (`sub`
 * gas-sponsor), one wallet per wallet group: the default group is the treasury (the one sponsor
 * before issue 25, so its address is unchanged), `gas-sponsor-<slot>` the pool members.
 */
export const PLATFORM_APP_ID = 'platform';
export const PLATFORM_ISSUER_FOR_WALLETS = 'urn:perp-wallet:platform-wallets';
export const GAS_SPONSOR_SUB = 'gas-sponsor';

export type GasSponsor = GasPayer;

export class EnclaveGasSponsor implements GasSponsor {
  readonly #enclave: WalletEnclave;
  readonly #signer: OpJwtSigner;
  readonly #apps: AppRegistry;
  #wallet: Promise<{ wallet_id: string; access_key: string; public_address: string; issuer: string; audience: Audience }> | undefined;

  readonly #walletGroup: string | undefined;
  readonly #serviceTokens: ServiceTokenCache;

  /**
   * `walletGroup`: a pool member's (sponsorWalletGroup); none: the treasury, the platform app's
   * default group. `serviceTokens`: shared by a pool's members (one KMS Sign a minute, not one per
   * signature; the op_jwt stays one per signature, single use).
   */
  constructor(enclave: WalletEnclave, signer: OpJwtSigner, apps: AppRegistry, walletGroup?: string, serviceTokens = new ServiceTokenCache()) {
    this.#enclave = enclave;
    this.#signer = signer;
    this.#apps = apps;
    this.#walletGroup = walletGroup;
    this.#serviceTokens = serviceTokens;
  }

  async address(): Promise<Address> {
    return (await this.#sponsorWallet()).public_address as Address;
  }

  async signTransaction(request: EvmTransactionRequest): Promise<Hex> {
    const transaction = wireTransaction(request);
    const wallet = await this.#sponsorWallet();
    // The sponsor is part of the account service: its signatures are the account channel of the platform app's policy.
    const opJwt = await this.#signer.sign({ iss: wallet.issuer, sub: GAS_SPONSOR_SUB, aud: wallet.audience, app_id: PLATFORM_APP_ID, channel: 'account' });
    const signed = await this.#enclave.sign({ serviceToken: await this.#serviceTokens.get(this.#signer, PLATFORM_APP_ID, Date.now()) }, 'sign_transaction', {
      transaction,
      op_jwt: opJwt,
      access_key: wallet.access_key,
      wallet_id: wallet.wallet_id,
    });
    return signed.signed_transaction as Hex;
  }

  #sponsorWallet() {
    this.#wallet ??= this.#loadWallet().catch((error: unknown) => {
      this.#wallet = undefined; // retry on the next call rather than failing for the container's life
      throw error;
    });
    return this.#wallet;
  }

  async #loadWallet() {
    const app = await this.#apps.findById(PLATFORM_APP_ID);
    if (!app) throw new UnprocessableError('GAS_SPONSORSHIP_UNAVAILABLE', 'Gas sponsorship is not set up on this deployment (no platform application)');
    const authJwt = await this.#signer.sign({ iss: app.oidc.issuer, sub: GAS_SPONSOR_SUB, aud: app.oidc.audience, app_id: PLATFORM_APP_ID });
    const wallet = await this.#enclave.createWallet(
      { serviceToken: await this.#serviceTokens.get(this.#signer, PLATFORM_APP_ID, Date.now()) },
      { authJwt, network: 'ETH', walletGroupId: this.#walletGroup ?? app.default_wallet_group_id },
    );
    return { ...wallet, issuer: app.oidc.issuer, audience: app.oidc.audience };
  }
}

/** The pool of `size` enclave sponsor wallets and their treasury; each member's wallet is opened on its first use and kept. */
export class EnclaveSponsorPool implements SponsorPool {
  readonly size: number;
  readonly treasury: EnclaveGasSponsor;
  readonly #members = new Map<number, EnclaveGasSponsor>();
  readonly #open: (walletGroup?: string) => EnclaveGasSponsor;

  constructor(enclave: WalletEnclave, signer: OpJwtSigner, apps: AppRegistry, size: number) {
    if (!Number.isSafeInteger(size) || size < 1) throw new RangeError(`sponsor pool size ${size}`);
    this.size = size;
    const serviceTokens = new ServiceTokenCache();
    this.#open = (walletGroup) => new EnclaveGasSponsor(enclave, signer, apps, walletGroup, serviceTokens);
    this.treasury = this.#open();
  }

  member(slot: number): EnclaveGasSponsor {
    let found = this.#members.get(slot);
    if (!found) {
      found = this.#open(sponsorWalletGroup(slot));
      this.#members.set(slot, found);
    }
    return found;
  }
}
