import { createHash } from 'node:crypto';

/** A message attribute as the JSON protocol carries it (BinaryValue base64). */
export interface MessageAttributeValue {
  readonly DataType: string;
  readonly StringValue?: string;
  readonly BinaryValue?: string;
}

export const md5Hex = (text: string): string => createHash('md5').update(text, 'utf8').digest('hex');

/**
 * MD5OfMessageAttributes as SQS computes it ("Calculating the MD5 message digest for message
 * attributes", SQS Developer Guide): attributes sorted by name; each encoded as name, data type
 * (both 4-byte big-endian length + UTF-8), a transport byte (1 String/Number, 2 Binary) and the value
 * (length + bytes). The SDK compares only the body's MD5, but a consumer may check this one too.
 */
export function md5OfAttributes(attributes: Readonly<Record<string, MessageAttributeValue>>): string {
  const hash = createHash('md5');
  const withLength = (bytes: Buffer) => {
    const length = Buffer.alloc(4);
    length.writeUInt32BE(bytes.length);
    hash.update(length);
    hash.update(bytes);
  };
  for (const name of Object.keys(attributes).sort()) {
    const value = attributes[name]!;
    withLength(Buffer.from(name, 'utf8'));
    withLength(Buffer.from(value.DataType, 'utf8'));
    const binary = value.DataType.startsWith('Binary');
    hash.update(Buffer.from([binary ? 2 : 1]));
    withLength(binary ? Buffer.from(value.BinaryValue ?? '', 'base64') : Buffer.from(value.StringValue ?? '', 'utf8'));
  }
  return hash.digest('hex');
}
