import type { Address } from '@solana/kit';
import bs58 from 'bs58';
import { JsonRpcError, type Params } from './transport.ts';

/** The methods' parameters, checked and refused with the messages a validator gives (-32602). */

export const invalidParams = (detail: string) => new JsonRpcError(-32602, `Invalid params: ${detail}`);
export const invalidParam = (detail: string) => new JsonRpcError(-32602, `Invalid param: ${detail}`);

export function configAt(params: Params, index: number): Record<string, unknown> {
  const value = params[index];
  if (value === undefined || value === null) return {};
  if (typeof value !== 'object' || Array.isArray(value)) throw invalidParams(`invalid type: expected a configuration object at position ${index}`);
  return value as Record<string, unknown>;
}

export function pubkeyParam(value: unknown): Address {
  if (typeof value !== 'string') throw invalidParams('invalid type: expected a base-58 encoded public key string');
  let bytes: Uint8Array;
  try {
    bytes = bs58.decode(value);
  } catch {
    throw invalidParam('Invalid');
  }
  if (bytes.length !== 32) throw invalidParam('WrongSize');
  return bs58.encode(bytes) as Address;
}

export function signatureParam(value: unknown): string {
  if (typeof value !== 'string') throw invalidParams('invalid type: expected a base-58 encoded signature string');
  let bytes: Uint8Array;
  try {
    bytes = bs58.decode(value);
  } catch {
    throw invalidParam('Invalid');
  }
  if (bytes.length !== 64) throw invalidParam('WrongSize');
  return value;
}

export function integerParam(value: unknown, what: string): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) throw invalidParams(`invalid type: expected ${what} (a non-negative integer)`);
  return value;
}

export type AccountEncoding = 'binary' | 'base58' | 'base64' | 'base64+zstd' | 'jsonParsed';

export function accountEncoding(value: unknown, fallback: AccountEncoding): AccountEncoding {
  if (value === undefined || value === null) return fallback;
  if (value === 'binary' || value === 'base58' || value === 'base64' || value === 'base64+zstd' || value === 'jsonParsed') return value;
  throw invalidParams(`unknown variant \`${String(value)}\`, expected one of \`binary\`, \`base58\`, \`base64\`, \`jsonParsed\`, \`base64+zstd\``);
}

export function dataSlice(config: Record<string, unknown>): { offset: number; length: number } | undefined {
  const slice = config.dataSlice;
  if (slice === undefined || slice === null) return undefined;
  const { offset, length } = slice as Record<string, unknown>;
  return { offset: integerParam(offset, 'dataSlice.offset'), length: integerParam(length, 'dataSlice.length') };
}
