import type { Hex } from 'viem';
import type { EvmSigner, EvmTransactionRequest, SignedAuthorization, SolanaSigner } from './ports.ts';

/**
 * The signer ports over the wallet enclave's sign operations (keys never leave the enclave).
 * `wallet` is opened on the first signature only, so a send refused before signing (funds, gas)
 * costs no key unwrap.
 */
export interface EnclaveSigning {
  sign(operation: 'sign_transaction' | 'sign_authorization' | 'sign_data', fields: Record<string, unknown>): Promise<Record<string, unknown>>;
}

function once<T>(open: () => Promise<T>): () => Promise<T> {
  let opened: Promise<T> | undefined;
  return () => {
    opened ??= open().catch((error: unknown) => {
      opened = undefined;
      throw error;
    });
    return opened;
  };
}

/** The enclave's wire form of a transaction: quantities as decimal strings. */
export function wireTransaction(transaction: EvmTransactionRequest): Record<string, unknown> {
  const { value, gas, maxFeePerGas, maxPriorityFeePerGas, authorizationList, ...rest } = transaction;
  return {
    ...rest,
    value: value.toString(),
    gas: gas.toString(),
    maxFeePerGas: maxFeePerGas.toString(),
    maxPriorityFeePerGas: maxPriorityFeePerGas.toString(),
    ...(authorizationList?.length ? { authorizationList } : {}),
  };
}

export function enclaveEvmSigner(wallet: () => Promise<EnclaveSigning>): EvmSigner {
  const open = once(wallet);
  return {
    signTransaction: async (transaction) =>
      (await (await open()).sign('sign_transaction', { transaction: wireTransaction(transaction) })).signed_transaction as Hex,
    signAuthorization: async ({ chainId, contractAddress, nonce }) =>
      (await (await open()).sign('sign_authorization', { chain_id: chainId, contract_address: contractAddress, nonce })).authorization as SignedAuthorization,
    signDigest: async (digest) => (await (await open()).sign('sign_data', { raw_data_hash: digest })).signature as Hex,
  };
}

export function enclaveSolanaSigner(wallet: () => Promise<EnclaveSigning>): SolanaSigner {
  const open = once(wallet);
  return {
    signMessage: async (messageBytes) =>
      (await (await open()).sign('sign_transaction', { transaction: Buffer.from(messageBytes).toString('base64') })).signature as string,
  };
}
