import { type Address, getAddress, type Hex, hashMessage, hashTypedData, type TypedDataDefinition } from 'viem';
import type { AccountRecord } from '../accounts/account-record.ts';
import { type SigningIdentity, type WalletSigner, type WalletSignerDeps, walletSigner } from '../accounts/wallet-signer.ts';
import type { AuthenticatedUser } from '../auth/authenticate.ts';
import { UpstreamError } from '../errors.ts';
import type { VenueWallet } from './driver.ts';

/**
 * The account's EVM wallet as a venue driver sees it. Every signature goes through the account
 * service's signing path (the sealed access key, a fresh op_jwt, the enclave's `sign_data`): the
 * digest is computed here (EIP-712 `hashTypedData`, EIP-191 `hashMessage`) and the enclave signs
 * those 32 bytes, so the enclave never needs to understand a venue's typed data.
 *
 * The access key is opened on the first signature only: a driver that merely reads (balances
 * of a venue that needs no signed request) costs no KMS call.
 */
export function venueWallet(deps: WalletSignerDeps, user: AuthenticatedUser | SigningIdentity, account: AccountRecord): VenueWallet {
  let signer: Promise<WalletSigner> | undefined;
  const signHash = async (hash: Hex): Promise<Hex> => {
    signer ??= walletSigner(deps, user, account, 'evm');
    signer.catch(() => (signer = undefined));
    const { signature } = await (await signer).sign('sign_data', { raw_data_hash: hash });
    if (typeof signature !== 'string' || !/^0x[0-9a-fA-F]{130}$/.test(signature))
      throw new UpstreamError('ENCLAVE_ERROR', 'The wallet enclave returned no usable signature');
    return signature as Hex;
  };
  return {
    address: getAddress(account.public_address.ETH) as Address,
    signTypedData: (typedData: TypedDataDefinition) => signHash(hashTypedData(typedData)),
    signMessage: (message: string) => signHash(hashMessage(message)),
  };
}
