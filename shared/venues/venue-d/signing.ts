import {
  type Address,
  bytesToString,
  concat,
  getAddress,
  type Hex,
  hexToBytes,
  isHex,
  pad,
  parseAbi,
  recoverTypedDataAddress,
  size,
  slice,
  stringToHex,
  type TypedDataDefinition,
  trim,
} from 'viem';

/**
 * venue_d (modelled on Nado, on Ink), from @nadohq/shared (research §4.2–4.3):
 * - a subaccount is `sender` = owner (20 bytes) ‖ name (12 bytes, UTF-8, zero-padded on the
 *   right); the primary one is "default";
 * - the owner links a trading signer with EIP-712 `LinkSigner{sender, signer, nonce}` and
 *   withdraws with `WithdrawCollateral{sender, productId, amount, nonce}`, both under the domain
 *   Nado / 0.0.1 / chain id / the Endpoint contract.
 */

/** The Ink mainnet deployment (@nadohq/shared deployment.inkMainnet.json); product 0 is the quote (USDT0) token. */
export const NADO_INK_MAINNET = {
  chainId: 57073,
  endpoint: '0x05ec92D78ED421f3D3Ada77FFdE167106565974E',
  quote: '0x0200C29006150606B650577BBE7B6248F58470c1',
  /** Pays withdrawals out (BaseWithdrawPool.submitWithdrawal: an ERC-20 transfer to the owner, no event of its own; research E). */
  withdrawPool: '0x09fb495AA7859635f755E827d64c4C9A2e5b9651',
  quoteProductId: 0,
} as const;

/**
 * The Endpoint's deposit call (@nadohq/shared ENDPOINT_ABI; approve the Endpoint first). The real
 * Endpoint queues deposits for its sequencer without an event of its own; `DepositCollateral` and
 * `WithdrawCollateral` are the sandbox Endpoint's events (infra/local/contracts/SandboxNadoEndpoint.sol, sandbox choice).
 */
export const NADO_ENDPOINT_ABI = parseAbi([
  'function depositCollateral(bytes12 subaccountName, uint32 productId, uint128 amount)',
  'event DepositCollateral(bytes32 indexed sender, uint32 indexed productId, uint128 amount)',
  'event WithdrawCollateral(bytes32 indexed sender, uint32 indexed productId, uint128 amount, address to)',
]);

/** @nadohq PRIMARY_SUBACCOUNT_NAME. */
export const PRIMARY_SUBACCOUNT_NAME = 'default';

export interface NadoDomainConfig {
  readonly chainId: number;
  /** The Endpoint contract: the verifying contract of every execute except place_order. */
  readonly endpoint: Address;
}

/** A subaccount name as bytes12 (`subaccountNameToBytes12`): UTF-8, right-padded; longer than 12 bytes is refused. */
export function subaccountNameToBytes12(name: string): Hex {
  const hex = stringToHex(name);
  if (size(hex) > 12) throw new Error(`a subaccount name is at most 12 bytes, "${name}" has ${size(hex)}`);
  return pad(hex, { dir: 'right', size: 12 });
}

/** `sender` bytes32 of a subaccount (`subaccountToHex`). */
export function subaccountSender(owner: Address, name: string = PRIMARY_SUBACCOUNT_NAME): Hex {
  return concat([getAddress(owner), subaccountNameToBytes12(name)]).toLowerCase() as Hex;
}

/** Splits a `sender` bytes32 into owner and name (`subaccountFromHex`); throws for anything but 32 bytes. */
export function parseSubaccountSender(sender: Hex): { owner: Address; name: string } {
  if (!isHex(sender) || size(sender) !== 32) throw new Error('a subaccount sender is 32 bytes');
  return { owner: getAddress(slice(sender, 0, 20)), name: bytesToString(hexToBytes(trim(slice(sender, 20, 32), { dir: 'right' }))).replace(/\0+$/, '') };
}

/** The `signer` of LinkSigner for an address: the address in the first 20 bytes, 12 zero bytes (the zero address unlinks). */
export function linkedSignerBytes32(signer: Address): Hex {
  return subaccountSender(signer, '');
}

export function nadoDomain(config: NadoDomainConfig) {
  return { name: 'Nado', version: '0.0.1', chainId: config.chainId, verifyingContract: getAddress(config.endpoint) } as const;
}

export function linkSignerTypedData(config: NadoDomainConfig, tx: { sender: Hex; signer: Hex; nonce: bigint }) {
  return {
    domain: nadoDomain(config),
    types: {
      LinkSigner: [
        { name: 'sender', type: 'bytes32' },
        { name: 'signer', type: 'bytes32' },
        { name: 'nonce', type: 'uint64' },
      ],
    },
    primaryType: 'LinkSigner',
    message: { sender: tx.sender, signer: tx.signer, nonce: tx.nonce },
  } as const satisfies TypedDataDefinition;
}

/** `amount` is signed as the engine's request carries it (the adapter's choice of unit; the signature only binds the integer). */
export function withdrawCollateralTypedData(config: NadoDomainConfig, tx: { sender: Hex; productId: number; amount: bigint; nonce: bigint }) {
  return {
    domain: nadoDomain(config),
    types: {
      WithdrawCollateral: [
        { name: 'sender', type: 'bytes32' },
        { name: 'productId', type: 'uint32' },
        { name: 'amount', type: 'uint128' },
        { name: 'nonce', type: 'uint64' },
      ],
    },
    primaryType: 'WithdrawCollateral',
    message: { sender: tx.sender, productId: tx.productId, amount: tx.amount, nonce: tx.nonce },
  } as const satisfies TypedDataDefinition;
}

/**
 * The address that signed a Nado execute (the venue then accepts it if it is the subaccount's
 * owner or, where allowed, its linked signer); undefined for a malformed signature.
 */
export async function recoverNadoSigner(typedData: TypedDataDefinition, signature: Hex): Promise<Address | undefined> {
  try {
    return await recoverTypedDataAddress({ ...typedData, signature } as Parameters<typeof recoverTypedDataAddress>[0]);
  } catch {
    return undefined;
  }
}

/**
 * `POST {gateway}/execute` bodies as @nadohq/engine-client sends them (`{ [requestType]: payload }`,
 * integers as decimal strings in `tx`).
 */
export function linkSignerExecuteBody(tx: { sender: Hex; signer: Hex; nonce: bigint }, signature: Hex) {
  return { link_signer: { tx: { sender: tx.sender, signer: tx.signer, nonce: tx.nonce.toString() }, signature } };
}

export function withdrawCollateralExecuteBody(
  tx: { sender: Hex; productId: number; amount: bigint; nonce: bigint },
  signature: Hex,
  spotLeverage: boolean | null = null,
) {
  return {
    withdraw_collateral: {
      signature,
      tx: { sender: tx.sender, productId: tx.productId, amount: tx.amount.toString(), nonce: tx.nonce.toString() },
      spot_leverage: spotLeverage,
    },
  };
}
