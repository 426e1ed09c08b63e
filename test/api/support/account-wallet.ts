import { type Address, type Hex, hashMessage, hashTypedData, keccak256, parseSignature, serializeTransaction, type TypedDataDefinition } from 'viem';
import type { VenueWallet } from '../../../shared/venues/driver.ts';
import { chainInfo, evmClient } from './chains.ts';
import { call } from './client.ts';

/**
 * The account's EVM wallet driven through the account service's public API only: every signature
 * is `POST /wallet/sign` with a raw 32-byte hash (EIP-712 digests, EIP-191 digests, transaction
 * signing hashes). What a transfer step will do with the enclave, a test does over HTTP.
 */
export function accountWallet(
  headers: Record<string, string>,
  address: Address,
): VenueWallet & { send(chain: string, call: { to: Address; data: Hex; value?: bigint }): Promise<Hex> } {
  const signHash = async (hash: Hex): Promise<Hex> => {
    const response = await call('account', 'POST', '/wallet/sign', { headers, json: { raw_data_hash: hash } });
    if (response.status !== 200) throw new Error(`/wallet/sign failed: ${JSON.stringify(response.body)}`);
    return response.body.signature as Hex;
  };
  return {
    address,
    signTypedData: (typedData: TypedDataDefinition) => signHash(hashTypedData(typedData)),
    signMessage: (message: string) => signHash(hashMessage(message)),
    /** Signs an EIP-1559 transaction's signing hash through /wallet/sign and broadcasts it; resolves once mined successfully. */
    send: async (chain, tx) => {
      const client = await evmClient(chain);
      const { chain_id } = await chainInfo(chain);
      const [nonce, fees, gas] = await Promise.all([
        client.getTransactionCount({ address, blockTag: 'pending' }),
        client.estimateFeesPerGas(),
        client.estimateGas({ account: address, to: tx.to, data: tx.data, value: tx.value ?? 0n }),
      ]);
      const unsigned = {
        type: 'eip1559' as const,
        chainId: chain_id!,
        nonce,
        to: tx.to,
        data: tx.data,
        value: tx.value ?? 0n,
        gas: (gas * 12n) / 10n,
        ...fees,
      };
      const signature = parseSignature(await signHash(keccak256(serializeTransaction(unsigned))));
      const hash = await client.sendRawTransaction({ serializedTransaction: serializeTransaction(unsigned, signature) });
      const receipt = await client.waitForTransactionReceipt({ hash, pollingInterval: 50 });
      if (receipt.status !== 'success') throw new Error(`${chain} transaction ${hash} reverted`);
      return hash;
    },
  };
}
