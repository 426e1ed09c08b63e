import type { Address, Hex } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import type { EvmSigner } from '../../../shared/chains/sender/ports.ts';

/** A wallet key held in the test, behind the senders' EvmSigner port (what the enclave signs with in the service). */
export function localEvmSigner(privateKey: Hex): EvmSigner & { address: Address } {
  const account = privateKeyToAccount(privateKey);
  return {
    address: account.address,
    signTransaction: (transaction) =>
      account.signTransaction({ ...transaction, authorizationList: transaction.authorizationList?.map((a) => ({ ...a, yParity: a.yParity })) } as never),
    signAuthorization: async (request) => {
      const signed = await account.signAuthorization(request);
      return { address: signed.address, chainId: signed.chainId, nonce: signed.nonce, r: signed.r, s: signed.s, yParity: signed.yParity! };
    },
    signDigest: (digest) => account.sign({ hash: digest }),
  };
}
