import { type Address, getAddress } from 'viem';
import type { AccountRecord } from '../../accounts/account-record.ts';
import { type SigningIdentity, type WalletSignerDeps, walletSigner } from '../../accounts/wallet-signer.ts';
import type { AppRegistry } from '../../apps/app-registry.ts';
import { ServiceTokenCache } from '../../auth/service-token.ts';
import { enclaveEvmSigner, enclaveSolanaSigner } from '../../chains/sender/enclave-signers.ts';
import type { EvmSigner, SolanaSigner } from '../../chains/sender/ports.ts';
import type { VenueWallet } from '../../venues/driver.ts';
import { venueWallet } from '../../venues/venue-wallet.ts';
import type { TaskRecord } from '../task.ts';
import { StepFailure } from './outcomes.ts';

/** The user's wallets as a step uses them: addresses and signers, without any request or JWT. */
export interface StepWallet {
  readonly evmAddress: Address;
  readonly solAddress: string;
  readonly evm: EvmSigner;
  readonly sol: SolanaSigner;
  readonly venue: VenueWallet;
}

/** Opens the user's wallets for a task (the port; the enclave in production, local keys in unit tests). */
export interface StepWallets {
  open(task: TaskRecord, account: AccountRecord): Promise<StepWallet>;
}

export interface EnclaveStepWalletDeps extends WalletSignerDeps {
  readonly apps: AppRegistry;
  readonly now: () => Date;
}

/**
 * Signing through the enclave with no user request: the app is loaded by the task's app_id, the
 * op_jwt is minted for (task.iss, task.app_user_id) as today, and the enclave credentials are a
 * platform service token for that app (as shared/express/express-wallets.ts does), reused for a
 * minute. Neither the token nor an op_jwt is ever logged or stored.
 */
export function enclaveStepWallets(deps: EnclaveStepWalletDeps): StepWallets {
  const tokens = new ServiceTokenCache();
  const serviceToken = (appId: string) => tokens.get(deps.opJwtSigner, appId, deps.now().getTime());
  return {
    async open(task, account) {
      const app = await deps.apps.findById(task.app_id);
      if (!app) throw new StepFailure('APP_NOT_FOUND', 'The application of this transfer no longer exists');
      const identity: SigningIdentity = {
        iss: task.iss,
        sub: task.app_user_id,
        audience: app.oidc.audience,
        appId: app.app_id,
        credentials: async () => ({ serviceToken: await serviceToken(app.app_id) }),
      };
      return {
        evmAddress: getAddress(account.public_address.ETH),
        solAddress: account.public_address.SOL,
        evm: enclaveEvmSigner(() => walletSigner(deps, identity, account, 'evm')),
        sol: enclaveSolanaSigner(() => walletSigner(deps, identity, account, 'sol')),
        venue: venueWallet(deps, identity, account),
      };
    },
  };
}
