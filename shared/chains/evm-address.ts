import { type Address, checksumAddress, zeroAddress } from 'viem';
import { ValidationError } from '../errors.ts';

const HEX_ADDRESS = /^0x[0-9a-fA-F]{40}$/;

/**
 * An EVM address a caller sent, as EIP-55 says to read one: all lower case or all upper case
 * carries no checksum and is normalised to its checksummed form; mixed case IS a checksum, and a
 * wrong one means a typo somewhere in the address, so it is refused (400
 * `INVALID_ADDRESS_CHECKSUM`), never "corrected" into another account. A destination (money goes
 * there) may not be the zero address: what is sent to it is lost (400 `INVALID_ADDRESS`).
 * `field` names it in the message (`body.to_address`).
 */
export function parseEvmAddress(raw: string, field: string, options: { destination?: boolean } = {}): Address {
  if (!HEX_ADDRESS.test(raw)) throw new ValidationError(`${field}: must be a 0x-prefixed 20-byte EVM address`, 'INVALID_ADDRESS');
  const hex = raw.slice(2);
  const uncased = hex === hex.toLowerCase() || hex === hex.toUpperCase();
  const address = checksumAddress(`0x${hex.toLowerCase()}`);
  if (!uncased && address !== raw) {
    throw new ValidationError(
      `${field}: has a wrong EIP-55 checksum (a mixed-case address is a checksum: check the address, or send it all lower case)`,
      'INVALID_ADDRESS_CHECKSUM',
    );
  }
  if (options.destination && address === zeroAddress) {
    throw new ValidationError(`${field}: must not be the zero address (what is sent there is lost)`, 'INVALID_ADDRESS');
  }
  return address;
}
